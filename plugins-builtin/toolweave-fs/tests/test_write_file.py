"""write_file: atomic create/replace, parent directories, modes, refusals."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from toolweave import ErrorKind, Session
from toolweave_fs import FileSystem

pytestmark = pytest.mark.anyio


async def test_creates_file_and_parent_directories(session: Session, workspace: Path) -> None:
    """A new file in missing directories is created with the exact content."""
    result = await session.call("write_file", {"path": "a/b/c.txt", "content": "héllo\n"})
    assert result.error is None
    assert (workspace / "a/b/c.txt").read_bytes() == "héllo\n".encode()
    assert result.output == {"path": "a/b/c.txt", "bytes_written": 7, "created": True}
    assert result.text == "Created `a/b/c.txt` (7 bytes)."


async def test_replaces_existing_file_keeping_its_mode(session: Session, workspace: Path) -> None:
    """Replacing a file swaps the content and keeps the permission bits."""
    target = workspace / "run.sh"
    target.write_text("old")
    target.chmod(0o750)
    result = await session.call("write_file", {"path": "run.sh", "content": "new"})
    assert result.output["created"] is False
    assert result.text.startswith("Replaced `run.sh`")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o750


async def test_write_is_atomic_rename_leaving_no_temp_files(
    session: Session, workspace: Path
) -> None:
    """The file is replaced by rename (new inode) and no temporary file is left behind."""
    target = workspace / "f.txt"
    target.write_text("old")
    before = target.stat().st_ino
    await session.call("write_file", {"path": "f.txt", "content": "new"})
    assert target.stat().st_ino != before
    assert sorted(os.listdir(workspace)) == ["f.txt"]


async def test_failed_write_leaves_old_content_and_no_temp(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the final rename fails, the old content stays and the temp file is removed."""
    target = workspace / "keep.txt"
    target.write_text("old")

    def broken_replace(src: object, dst: object, **dir_fds: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="Input/output"):
        FileSystem(workspace).write_atomic(target, b"new")
    assert target.read_text() == "old"
    assert sorted(os.listdir(workspace)) == ["keep.txt"]


async def test_write_through_symlink_inside_updates_target(
    session: Session, workspace: Path
) -> None:
    """Writing to a link that points inside the workspace replaces the target, keeps the link."""
    (workspace / "real.txt").write_text("old")
    (workspace / "link.txt").symlink_to("real.txt")
    result = await session.call("write_file", {"path": "link.txt", "content": "new"})
    assert result.error is None
    assert (workspace / "link.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new"


async def test_directory_target_is_refused(session: Session, workspace: Path) -> None:
    """Writing onto a directory (or the root) is invalid_params and changes nothing."""
    (workspace / "d").mkdir()
    for path in ("d", "."):
        result = await session.call("write_file", {"path": path, "content": "x"})
        assert result.error is not None
        assert result.error.kind is ErrorKind.INVALID_PARAMS
        assert "directory" in result.text
    assert (workspace / "d").is_dir()


async def test_parent_that_is_a_file_is_invalid_params(session: Session, workspace: Path) -> None:
    """A path through an existing file fails with a typed error, not a crash."""
    (workspace / "file").write_text("x")
    result = await session.call("write_file", {"path": "file/child.txt", "content": "y"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS


async def test_content_is_required(session: Session) -> None:
    """Missing content is invalid_params naming the field."""
    result = await session.call("write_file", {"path": "x.txt"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "`content` is required" in result.text


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("newdir/deeper/../../../escape.txt", ErrorKind.PERMISSION_DENIED),
        ("newdir/deeper/../../outdir/x.txt", ErrorKind.PERMISSION_DENIED),
        ("newdir/../file/child.txt", ErrorKind.INVALID_PARAMS),
        ("file/deeper/..", ErrorKind.INVALID_PARAMS),
        ("newdir/deeper/../../file/..", ErrorKind.INVALID_PARAMS),
    ],
)
async def test_a_refused_write_creates_no_directories(
    session: Session, workspace: Path, outside: Path, path: str, kind: ErrorKind
) -> None:
    """A write refused anywhere on its path (outside the workspace, a file on the way,
    a directory as the target) leaves the workspace as it was: no parent is made."""
    (workspace / "file").write_text("x")
    (workspace / "outdir").symlink_to(outside)
    before = _listing(workspace)
    result = await session.call("write_file", {"path": path, "content": "x"})
    assert result.error is not None
    assert result.error.kind is kind, result.text
    assert _listing(workspace) == before
    assert sorted(os.listdir(outside)) == ["secret.txt"]
