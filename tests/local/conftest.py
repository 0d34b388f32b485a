"""Shared helpers of the plugin-folder tests: plugin files written atomically, a
polling deadline, a host tool set with a pack of its own."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import Session, ToolSet, hookimpl, tool
from toolweave.plugins import PackManager

FIXTURES = Path(__file__).parent / "fixtures"
SEED = FIXTURES / "seed"
"""The seed's TextSummaryTool, its import line changed to toolweave.local."""

DEADLINE = 15.0
"""Seconds a change may take to show (generous: the tests must not flake on a busy box)."""


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


def write(path: Path, text: str) -> Path:
    """Write a plugin file in one step (a hidden temporary file renamed into place), so a
    watcher never reads half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(textwrap.dedent(text).lstrip())
    os.replace(tmp, path)
    return path


async def until(check: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    """Poll ``check`` until it returns something true, or fail after ``deadline`` s."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline:g} s: {what}")
        await anyio.sleep(0.05)


def listed(session: Session) -> dict[str, dict[str, Any]]:
    """The neutral definitions a session lists now, by name."""
    return {d["name"]: d for d in session.definitions("neutral")}


@tool(blocking=False)
def greet(name: str) -> str:
    """Greet someone (a tool of the host's pack).

    Args:
        name: Who.
    """
    return f"hello {name}"


class HostPack:
    """A pack the host adds by hand: source ``pack:hostpack`` in the center."""

    @hookimpl
    def register_tools(self, builder: Any) -> None:
        builder.add(greet)


def host_toolset() -> ToolSet:
    """A tool set with one pack tool, ``greet``."""
    manager = PackManager()
    manager.add("hostpack", HostPack())
    return manager.build()
