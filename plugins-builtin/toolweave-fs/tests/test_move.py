"""move: renames inside the workspace, overwrite rules, directories."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from toolweave import ErrorKind, Session
from toolweave_fs import _move

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
        "same_file": False,
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


def _tree(folder: Path) -> dict[str, str]:
    """Every entry below ``folder`` with its content (files) or kind."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[rel] = "<dir>"
        else:
            found[rel] = path.read_text()
    return found


async def test_directory_onto_a_file_inside_it_through_a_link_keeps_the_file(
    session: Session, workspace: Path
) -> None:
    """A destination spelled through a link into the source directory is the directory
    itself: refused before anything is removed (the file below it used to be deleted
    first, then the rename failed)."""
    (workspace / "d").mkdir()
    (workspace / "d/precious.txt").write_text("important data\n")
    (workspace / "lnk").symlink_to("d")
    before = _tree(workspace)
    result = await session.call(
        "move", {"source": "d", "destination": "lnk/precious.txt", "overwrite": True}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert result.text == "`d` cannot be moved into itself (`d/precious.txt`)"
    assert _tree(workspace) == before


@pytest.mark.parametrize(
    "destination", ["lnk/new/deeper/x", "d/new/x", "lnk/../d/new/x", "lnk/./sub/../new"]
)
async def test_directory_into_itself_creates_nothing(
    session: Session, workspace: Path, destination: str
) -> None:
    """Into itself by any spelling: refused, and the missing parents are not made."""
    (workspace / "d").mkdir()
    (workspace / "d/sub").mkdir()
    (workspace / "lnk").symlink_to("d")
    before = _tree(workspace)
    result = await session.call("move", {"source": "d", "destination": destination})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "cannot be moved into itself" in result.text
    assert _tree(workspace) == before


async def test_the_kernel_refusal_puts_the_file_back(
    session: Session, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should both checks by path miss a move into itself (a race), rename(2) refuses
    it; the file that stepped aside for the directory is put back."""
    monkeypatch.setattr(_move, "_precheck", lambda *args: None)
    monkeypatch.setattr(_move, "_below", lambda *args: False)
    (workspace / "d").mkdir()
    (workspace / "d/precious.txt").write_text("important data\n")
    (workspace / "lnk").symlink_to("d")
    before = _tree(workspace)
    result = await session.call(
        "move", {"source": "d", "destination": "lnk/precious.txt", "overwrite": True}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "cannot be moved into itself" in result.text
    assert _tree(workspace) == before


async def test_a_failed_rename_puts_the_file_back(
    session: Session, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any failure of the rename of a directory over a file (here: permission) puts the
    file back under its name; nothing is left under a temporary name."""
    (workspace / "d").mkdir()
    (workspace / "d/inner.txt").write_text("inner\n")
    (workspace / "f.txt").write_text("keep me\n")
    before = _tree(workspace)
    real_rename = os.rename

    def rename(src: str, dst: str, **kw: int) -> None:
        if src == "d":  # the directory's own rename, after the file stepped aside
            raise PermissionError(13, "Permission denied")
        real_rename(src, dst, **kw)

    monkeypatch.setattr(_move.os, "rename", rename)
    result = await session.call("move", {"source": "d", "destination": "f.txt", "overwrite": True})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert _tree(workspace) == before


async def test_directory_replaces_a_file_or_link_with_overwrite(
    session: Session, workspace: Path
) -> None:
    """A directory replaces a file (or a link) only with overwrite; nothing is left aside."""
    (workspace / "d").mkdir()
    (workspace / "d/inner.txt").write_text("inner\n")
    (workspace / "f.txt").write_text("old\n")
    refused = await session.call("move", {"source": "d", "destination": "f.txt"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS
    assert (workspace / "f.txt").read_text() == "old\n"
    done = await session.call("move", {"source": "d", "destination": "f.txt", "overwrite": True})
    assert done.error is None, done.text
    assert done.output["replaced"] is True
    assert done.text == "Moved directory `d` to `f.txt` (replacing the file that was there)."
    assert _tree(workspace) == {"f.txt": "<dir>", "f.txt/inner.txt": "inner\n"}
    (workspace / "link").symlink_to("f.txt/inner.txt")
    over_link = await session.call(
        "move", {"source": "f.txt", "destination": "link", "overwrite": True}
    )
    assert over_link.error is None, over_link.text
    assert _tree(workspace) == {"link": "<dir>", "link/inner.txt": "inner\n"}


@pytest.mark.parametrize("content", [False, True], ids=["empty", "non-empty"])
@pytest.mark.parametrize("kind", ["file", "directory"])
async def test_nothing_replaces_a_directory(
    session: Session, workspace: Path, kind: str, content: bool
) -> None:
    """A file or a directory onto an existing directory, empty or not, is refused even
    with overwrite, and both stay as they were."""
    if kind == "file":
        (workspace / "src").write_text("x")
    else:
        (workspace / "src").mkdir()
        (workspace / "src/a.txt").write_text("a")
    (workspace / "dst").mkdir()
    if content:
        (workspace / "dst/b.txt").write_text("b")
    before = _tree(workspace)
    result = await session.call("move", {"source": "src", "destination": "dst", "overwrite": True})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "is an existing directory" in result.text
    assert _tree(workspace) == before


async def test_onto_a_hard_link_of_itself_removes_the_source_name(
    session: Session, workspace: Path
) -> None:
    """A destination that is a hard link of the source is the same file: rename(2)
    would do nothing, so the source's name is removed and the file stays under the new
    name only. Without overwrite it is refused like any existing destination."""
    (workspace / "a.txt").write_text("A\n")
    os.link(workspace / "a.txt", workspace / "b.txt")
    refused = await session.call("move", {"source": "a.txt", "destination": "b.txt"})
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS
    assert (workspace / "a.txt").exists()
    result = await session.call(
        "move", {"source": "a.txt", "destination": "b.txt", "overwrite": True}
    )
    assert result.error is None, result.text
    assert not (workspace / "a.txt").exists()
    assert (workspace / "b.txt").read_text() == "A\n"
    assert (workspace / "b.txt").stat().st_nlink == 1
    assert result.output["same_file"] is True
    assert result.output["replaced"] is False
    assert result.text == (
        "Moved file `a.txt` to `b.txt`: `b.txt` was already a hard link to the same "
        "file, so only the name `a.txt` was removed."
    )


async def test_a_hard_link_in_another_folder_too(session: Session, workspace: Path) -> None:
    """The same holds for a hard link in another folder."""
    (workspace / "sub").mkdir()
    (workspace / "a.txt").write_text("A\n")
    os.link(workspace / "a.txt", workspace / "sub/a.txt")
    result = await session.call(
        "move", {"source": "a.txt", "destination": "sub/a.txt", "overwrite": True}
    )
    assert result.output["same_file"] is True
    assert _tree(workspace) == {"sub": "<dir>", "sub/a.txt": "A\n"}


@pytest.fixture
def other_fs(tmp_path: Path) -> Iterator[Path]:
    """A folder in /dev/shm, on another file system than ``tmp_path``."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm to serve as a second file system")
    if shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("/dev/shm is on the same file system as the test's tmp_path")
    folder = shm / f"toolweave-move-{uuid.uuid4().hex}"
    folder.mkdir()
    try:
        yield folder
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


CROSS = {
    "file to a new path": ("file", None, "new.txt"),
    "file onto a file": ("file", "file", "old.txt"),
    "directory to a new path": ("directory", None, "new"),
    "directory onto a file": ("directory", "file", "old.txt"),
    "file into missing folders": ("file", None, "a/b/new.txt"),
    "directory into missing folders": ("directory", None, "a/b/new"),
}


@pytest.mark.parametrize("precheck", [True, False], ids=["checked-first", "checked-at-move"])
@pytest.mark.parametrize("case", sorted(CROSS))
async def test_across_file_systems_nothing_changes(
    make_session: Callable[..., Session],
    tmp_path: Path,
    other_fs: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    precheck: bool,
) -> None:
    """Moving to another file system (a workspace over `/`, from tmp_path to /dev/shm)
    is execution_error, and both sides stay as they were: no file removed, no folder
    made (when the check by path runs first)."""
    if not precheck:
        monkeypatch.setattr(_move, "_precheck", lambda *args: None)
    kind, existing, name = CROSS[case]
    here = tmp_path / "here"
    here.mkdir()
    if kind == "file":
        (here / "src").write_text("source\n")
    else:
        (here / "src").mkdir()
        (here / "src/inner.txt").write_text("inner\n")
    if existing == "file":
        (other_fs / name).write_text("precious\n")
    before = (_tree(here), _tree(other_fs))
    session = make_session(Path("/"))
    result = await session.call(
        "move",
        {"source": str(here / "src"), "destination": str(other_fs / name), "overwrite": True},
    )
    assert result.error is not None, result.text
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "different file systems" in result.text
    assert _tree(here) == before[0]
    after = _tree(other_fs)
    if not precheck and "/" in name:
        # the folders are made by the walk of the destination, before the move is tried
        after = {k: v for k, v in after.items() if v != "<dir>"}
    assert after == before[1]
