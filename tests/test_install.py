"""What ``uv run toolweave demo`` installs in a fresh clone: the command line and every
pack the demo uses, never the development tools; ``nox`` (``--group dev``) gets those
and every optional extra.

uv itself reads the lock (``uv export --frozen``: no network, nothing installed), so the
checks hold for what ``uv run`` and ``uv sync`` would install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEV_TOOLS = {"pytest", "mypy", "ruff", "nox", "playwright", "openai", "anthropic", "google-genai"}


def _dist_of(folder: Path) -> str:
    with (folder / "pyproject.toml").open("rb") as file:
        name: str = tomllib.load(file)["project"]["name"]
    return name


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return match.group().lower().replace("_", "-")


def uv_export(*args: str) -> set[str]:
    """The distributions uv would install at the root, by name, from ``uv.lock``."""
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI"):
            pytest.fail("uv is missing: .ci/run installs it (pip install uv)")
        pytest.skip("uv is not installed (pip install uv)")
    command = [uv, "export", "--frozen", "--no-hashes", "--no-header", "--no-annotate", *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    names = set()
    for line in done.stdout.splitlines():
        line = line.strip()
        if line.startswith("-e "):
            names.add(_dist_of(ROOT / line.removeprefix("-e ")))
        elif line and not line.startswith("#"):
            names.add(_requirement_name(line))
    return names


def test_uv_run_installs_the_demo_packs_and_no_dev_tools() -> None:
    """The root's default install holds the CLI and every pack of the demo's story (so
    the quick start skips no step), and none of the development tools."""
    from toolweave.cli._demo_script import PACKS

    names = uv_export()
    assert {"toolweave", "typer", "rich"} <= names
    assert {f"toolweave-{pack}" for pack in PACKS} <= names
    assert not names & DEV_TOOLS
    assert "wordllama" not in names  # an optional extra, not needed by the demo


def test_dev_group_holds_the_tools_and_every_extra() -> None:
    """``--group dev`` (what nox and CI install) adds the tools and every optional extra
    of toolweave, so the tests of each extra run."""
    with (ROOT / "core" / "pyproject.toml").open("rb") as file:
        extras: dict[str, list[str]] = tomllib.load(file)["project"]["optional-dependencies"]
    names = uv_export("--group", "dev")
    assert names >= DEV_TOOLS
    for extra, requirements in extras.items():
        missing = {_requirement_name(r) for r in requirements} - names
        assert not missing, f"the dev group lacks toolweave[{extra}]: {sorted(missing)}"
