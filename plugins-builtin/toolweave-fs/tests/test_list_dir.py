"""list_dir: depth, ignore patterns, sorting, the cap and its note."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from toolweave import ErrorKind, Session

pytestmark = pytest.mark.anyio


def _tree(root: Path) -> None:
    for rel in ("src/pkg/mod.py", "src/b.py", "src/A.py", "README.md", "docs/x.md", "out.log"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    (root / ".git").mkdir()
    (root / ".git/HEAD").write_text("ref")


async def test_lists_sorted_depth_first(session: Session, workspace: Path) -> None:
    """Entries are depth first, each directory sorted by name, case-insensitively."""
    _tree(workspace)
    result = await session.call("list_dir", {"depth": 3})
    assert result.text.splitlines() == [
        "docs/",
        "docs/x.md",
        "out.log",
        "README.md",
        "src/",
        "src/A.py",
        "src/b.py",
        "src/pkg/",
        "src/pkg/mod.py",
    ]
    sizes = {e["path"]: e["size"] for e in result.output["entries"]}
    assert sizes["README.md"] == 1
    assert sizes["src"] is None


async def test_depth_limits_descent(session: Session, workspace: Path) -> None:
    """depth=1 lists only direct entries; depth=2 one level more."""
    _tree(workspace)
    one = await session.call("list_dir", {"depth": 1})
    assert one.text.splitlines() == ["docs/", "out.log", "README.md", "src/"]
    two = await session.call("list_dir", {"path": "src", "depth": 1})
    assert two.text.splitlines() == ["src/A.py", "src/b.py", "src/pkg/"]


async def test_ignore_patterns_by_name_and_path(session: Session, workspace: Path) -> None:
    """Default ignores hide .git; extra patterns match names and relative paths."""
    _tree(workspace)
    result = await session.call("list_dir", {"depth": 3, "ignore": ["*.log", "src/pkg"]})
    lines = result.text.splitlines()
    assert ".git/" not in lines
    assert "out.log" not in lines
    assert "src/pkg/" not in lines
    assert "src/pkg/mod.py" not in lines
    assert "src/b.py" in lines


async def test_cap_stops_with_a_note(make_session: Callable[..., Session], workspace: Path) -> None:
    """Past max_entries the listing stops and says how to see the rest."""
    for i in range(30):
        (workspace / f"f{i:02d}.txt").write_text("x")
    session = make_session(
        workspace, {"tools": [{"id": "list_dir", "params": {"max_entries": 10}}]}
    )
    result = await session.call("list_dir", {})
    assert result.output["truncated"] is True
    assert len(result.output["entries"]) == 10
    assert result.text.splitlines()[9] == "f09.txt"
    assert "Listing stopped at 10 entries" in result.text


async def test_configured_ignore_replaces_defaults(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """Configuring ignore replaces the default list, so .git can be shown."""
    _tree(workspace)
    session = make_session(workspace, {"tools": [{"id": "list_dir", "params": {"ignore": []}}]})
    result = await session.call("list_dir", {"depth": 1})
    assert ".git/" in result.text.splitlines()


async def test_links_are_marked_and_not_followed(
    session: Session, workspace: Path, outside: Path
) -> None:
    """A link to a directory is listed with @ and its content is not listed."""
    (workspace / "out").symlink_to(outside)
    result = await session.call("list_dir", {"depth": 3})
    assert result.text.splitlines() == ["out@"]


async def test_empty_missing_and_file(session: Session, workspace: Path) -> None:
    """An empty directory says so; a missing one is not_found; a file is invalid_params."""
    empty = await session.call("list_dir", {})
    assert empty.text == "(`.` is empty)"
    missing = await session.call("list_dir", {"path": "nope"})
    assert missing.error is not None
    assert missing.error.kind is ErrorKind.NOT_FOUND
    (workspace / "f.txt").write_text("x")
    file = await session.call("list_dir", {"path": "f.txt"})
    assert file.error is not None
    assert file.error.kind is ErrorKind.INVALID_PARAMS


async def test_depth_out_of_range_is_invalid_params(session: Session) -> None:
    """depth below 1 is rejected with the field named."""
    result = await session.call("list_dir", {"depth": 0})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "`depth`" in result.text


async def test_a_fifo_or_socket_is_named_not_called_a_file(
    session: Session, workspace: Path
) -> None:
    """A FIFO (or socket) is not a file to read: the refusal says what it is and that
    it cannot be read, instead of sending the model to the file reader."""
    os.mkfifo(workspace / "pipe")
    result = await session.call("list_dir", {"path": "pipe"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert result.text == (
        "`pipe` is a FIFO (named pipe), not a directory; it cannot be listed, nor read as a file"
    )
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(workspace / "sock"))
        for name in ("list_dir", "read_file"):
            refused = await session.call(name, {"path": "sock"})
            assert refused.error is not None
            assert refused.error.kind is ErrorKind.INVALID_PARAMS
            assert refused.text.startswith("`sock` is a socket")
            assert refused.text.endswith("it cannot be opened")
    finally:
        sock.close()
