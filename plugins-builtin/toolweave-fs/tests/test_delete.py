"""delete: files, links (not their targets), directories with and without recursive."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from toolweave import ErrorKind, Session

pytestmark = pytest.mark.anyio


async def test_deletes_a_file(session: Session, workspace: Path) -> None:
    """A file is removed and reported as a file."""
    (workspace / "f.txt").write_text("x")
    result = await session.call("delete", {"path": "f.txt"})
    assert result.error is None
    assert not (workspace / "f.txt").exists()
    assert result.output == {"path": "f.txt", "type": "file"}
    assert result.text == "Deleted file `f.txt`."


async def test_deletes_the_link_not_its_target(session: Session, workspace: Path) -> None:
    """Deleting a symbolic link removes the link and leaves the file it points to."""
    (workspace / "real.txt").write_text("keep")
    (workspace / "link.txt").symlink_to("real.txt")
    result = await session.call("delete", {"path": "link.txt"})
    assert result.output["type"] == "symlink"
    assert not (workspace / "link.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "keep"


async def test_empty_directory_needs_no_recursive(session: Session, workspace: Path) -> None:
    """An empty directory is deleted without the recursive flag."""
    (workspace / "d").mkdir()
    result = await session.call("delete", {"path": "d"})
    assert result.output["type"] == "directory"
    assert not (workspace / "d").exists()


async def test_non_empty_directory_needs_recursive(session: Session, workspace: Path) -> None:
    """A non-empty directory is refused without recursive and removed with it."""
    (workspace / "d/e").mkdir(parents=True)
    (workspace / "d/e/f.txt").write_text("x")
    refused = await session.call("delete", {"path": "d"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS
    assert "recursive" in refused.text
    assert (workspace / "d/e/f.txt").exists()
    done = await session.call("delete", {"path": "d", "recursive": True})
    assert done.error is None
    assert not (workspace / "d").exists()


async def test_recursive_delete_does_not_follow_links_out(
    session: Session, workspace: Path, outside: Path
) -> None:
    """A directory holding a link to an outside folder is removed without touching it."""
    (workspace / "d").mkdir()
    (workspace / "d/escape").symlink_to(outside)
    result = await session.call("delete", {"path": "d", "recursive": True})
    assert result.error is None
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_missing_path_is_not_found(session: Session) -> None:
    """Deleting something that is not there is not_found."""
    result = await session.call("delete", {"path": "ghost"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND


async def test_a_path_through_a_missing_folder_names_it(session: Session) -> None:
    """`sub/..` with no `sub` is not_found as sent, naming what is missing, not as
    `.` (which exists)."""
    for path in ("sub/..", "sub/../other.txt"):
        result = await session.call("delete", {"path": path})
        assert result.error is not None
        assert result.error.kind is ErrorKind.NOT_FOUND
        assert result.text == f"`{path}` does not exist: there is no `sub` on the way"


async def test_workspace_root_cannot_be_deleted(session: Session, workspace: Path) -> None:
    """The root itself is permission_denied, however it is spelled."""
    for path in (".", "", str(workspace), "sub/.."):
        (workspace / "sub").mkdir(exist_ok=True)
        result = await session.call("delete", {"path": path, "recursive": True})
        assert result.error is not None, path
        assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert await anyio.Path(workspace).is_dir()
