"""move: renames inside the workspace, overwrite rules, directories."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave import ErrorKind, Session

pytestmark = pytest.mark.anyio


async def test_renames_a_file_creating_parents(session: Session, workspace: Path) -> None:
    """A file moves to a new path whose parent directories are created."""
    (workspace / "a.txt").write_text("x")
    result = await session.call("move", {"source": "a.txt", "destination": "new/dir/b.txt"})
    assert result.error is None
    assert not (workspace / "a.txt").exists()
    assert (workspace / "new/dir/b.txt").read_text() == "x"
    assert result.output == {
        "source": "a.txt",
        "destination": "new/dir/b.txt",
        "type": "file",
        "replaced": False,
    }


async def test_existing_destination_needs_overwrite(session: Session, workspace: Path) -> None:
    """An existing file is replaced only with overwrite, and the result says so."""
    (workspace / "a.txt").write_text("new")
    (workspace / "b.txt").write_text("old")
    refused = await session.call("move", {"source": "a.txt", "destination": "b.txt"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS
    assert "overwrite" in refused.text
    assert (workspace / "b.txt").read_text() == "old"
    done = await session.call(
        "move", {"source": "a.txt", "destination": "b.txt", "overwrite": True}
    )
    assert done.output["replaced"] is True
    assert (workspace / "b.txt").read_text() == "new"


async def test_existing_directory_is_never_replaced(session: Session, workspace: Path) -> None:
    """A directory at the destination is refused even with overwrite, naming a full path."""
    (workspace / "a.txt").write_text("x")
    (workspace / "dir").mkdir()
    result = await session.call(
        "move", {"source": "a.txt", "destination": "dir", "overwrite": True}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "`dir/a.txt`" in result.text


async def test_moves_a_directory_tree(session: Session, workspace: Path) -> None:
    """A whole directory moves with its content."""
    (workspace / "src/pkg").mkdir(parents=True)
    (workspace / "src/pkg/m.py").write_text("x")
    result = await session.call("move", {"source": "src", "destination": "lib"})
    assert result.output["type"] == "directory"
    assert (workspace / "lib/pkg/m.py").read_text() == "x"


async def test_directory_into_itself_is_refused(session: Session, workspace: Path) -> None:
    """Moving a directory below itself is invalid_params."""
    (workspace / "d").mkdir()
    result = await session.call("move", {"source": "d", "destination": "d/inner"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert (workspace / "d").is_dir()


async def test_moves_a_link_itself(session: Session, workspace: Path) -> None:
    """Moving a link moves the link, which still points at the same file."""
    (workspace / "real.txt").write_text("x")
    (workspace / "link").symlink_to("real.txt")
    result = await session.call("move", {"source": "link", "destination": "link2"})
    assert result.output["type"] == "symlink"
    assert (workspace / "link2").is_symlink()
    assert (workspace / "real.txt").exists()


async def test_missing_source_is_not_found(session: Session) -> None:
    """A source that does not exist is not_found naming it."""
    result = await session.call("move", {"source": "ghost", "destination": "x"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND
    assert "`ghost`" in result.text


async def test_same_path_and_root_are_refused(session: Session, workspace: Path) -> None:
    """Moving onto itself is invalid_params; moving the root is permission_denied."""
    (workspace / "a.txt").write_text("x")
    same = await session.call("move", {"source": "a.txt", "destination": "./a.txt"})
    assert same.error is not None
    assert same.error.kind is ErrorKind.INVALID_PARAMS
    root = await session.call("move", {"source": ".", "destination": "elsewhere"})
    assert root.error is not None
    assert root.error.kind is ErrorKind.PERMISSION_DENIED


async def test_the_root_as_destination_says_what_destination_means(
    session: Session, workspace: Path
) -> None:
    """Moving to `.` is refused with what `destination` is (the full new path), and
    the name to give to move a file into the root; nothing moves."""
    (workspace / "scratch.txt").write_text("x")
    (workspace / "sub").mkdir()
    (workspace / "sub/deep.txt").write_text("y")
    top = await session.call("move", {"source": "scratch.txt", "destination": "."})
    assert top.error is not None
    assert top.error.kind is ErrorKind.INVALID_PARAMS
    assert top.text == (
        "`scratch.txt` is already in the workspace root; `destination` is the full new "
        "path, not a directory to move into"
    )
    for root in (".", "./", str(workspace)):
        deep = await session.call("move", {"source": "sub/deep.txt", "destination": root})
        assert deep.error is not None
        assert deep.error.kind is ErrorKind.INVALID_PARAMS
        assert deep.text.endswith("to move `sub/deep.txt` into the root, give `deep.txt`")
    assert (workspace / "scratch.txt").read_text() == "x"
    assert (workspace / "sub/deep.txt").read_text() == "y"
