"""A type checker sees an @tool function's own signature and result."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy")
pytestmark = pytest.mark.slow

SNIPPET = '''
from typing import assert_type

from toolweave import Context, ToolSetBuilder, tool


@tool
def double(x: int) -> int:
    """Double."""
    return x * 2


@tool(blocking=False)
async def where(ctx: Context, name: str) -> str:
    """Where."""
    return name


async def main(ctx: Context) -> None:
    assert_type(double(2), int)
    assert_type(await where(ctx, name="a"), str)
    assert_type(double.id, str)
    ToolSetBuilder().add(double)
    double("two")
    await where(ctx)
'''


def test_mypy_sees_the_signature_of_a_decorated_function(tmp_path: Path) -> None:
    """Strict mypy accepts the right calls, the tool's attributes and its registration,
    and rejects a wrong argument type and a missing argument."""
    (tmp_path / "snippet.py").write_text(textwrap.dedent(SNIPPET))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file=",
            f"--cache-dir={tmp_path / 'cache'}",
            "snippet.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 2, run.stdout + run.stderr
    assert 'incompatible type "str"; expected "int"' in errors[0]
    assert 'Missing positional argument "name"' in errors[1]
