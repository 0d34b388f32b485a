"""Fixtures of the policy tests: stand-ins for the shell and file tools (same names and
arguments as toolweave-shell's ``bash`` and toolweave-fs's tools, but they only report
what they were given) in a scratch workspace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import ToolSet, ToolSetBuilder, tool
from toolweave.policy import Effect, Policy
from toolweave.runtime import Session


@tool(blocking=False)
def bash(command: str, cwd: str | None = None) -> str:
    """Run a shell command (a stand-in: it reports the command). Not for files.

    Args:
        command: The command.
        cwd: Where to run it.
    """
    return f"ran {command}"


@tool(blocking=False, read_only=True)
def read_file(path: str) -> str:
    """Read a file (a stand-in). Not for writing.

    Args:
        path: The file.
    """
    return f"read {path}"


@tool(blocking=False)
def write_file(path: str, content: str) -> str:
    """Write a file (a stand-in). Not for reading.

    Args:
        path: The file.
        content: The text.
    """
    return f"wrote {path}"


@tool(blocking=False)
def move(source: str, destination: str) -> str:
    """Move a file (a stand-in). Not for copying.

    Args:
        source: From.
        destination: To.
    """
    return f"moved {source} to {destination}"


@tool(blocking=False)
def mcp__github__create_issue(title: str) -> str:
    """Open an issue (a stand-in for an MCP tool). Not for comments.

    Args:
        title: The title.
    """
    return f"opened {title}"


@tool(blocking=False, read_only=True)
def look(path: str, cwd: str = ".") -> str:
    """Look at a path from a directory (a stand-in). Not for writing.

    Args:
        path: The path.
        cwd: The directory it is relative to.
    """
    return f"looked at {path}"


def make_toolset() -> ToolSet:
    builder = ToolSetBuilder()
    for fn in (bash, read_file, write_file, move, mcp__github__create_issue, look):
        builder.add(fn)
    return builder.build()


@pytest.fixture
def toolset() -> ToolSet:
    return make_toolset()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with ``src/``, ``docs/`` and ``secret/``, next to a folder outside."""
    root = tmp_path / "ws"
    for folder in ("src", "docs", "secret"):
        (root / folder).mkdir(parents=True)
    (root / "src" / "app.py").write_text("print(1)\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "passwd").write_text("root\n")
    return root


@pytest.fixture
def make_session(toolset: ToolSet, workspace: Path) -> Callable[..., Session]:
    def make(**kwargs: Any) -> Session:
        return toolset.session(workspace=workspace, **kwargs)

    return make


@pytest.fixture
def shell_effect(make_session: Callable[..., Session]) -> Callable[..., Effect]:
    """What a policy decides for a command line of the session's ``bash``:
    ``shell_effect(command, config, cwd=None)``."""
    session = make_session()
    root = str(session.workspace)
    entry = session.resolve("bash")
    assert entry is not None

    def run(command: str, config: object, cwd: str | None = None) -> Effect:
        args = entry.parse({"command": command, "cwd": cwd})
        return Policy(config).decide(entry, args, root).effect  # type: ignore[arg-type]

    return run
