"""File tools against special files, hard links and long names, as a host loads them.

Traversal spellings, absolute paths, links (to files, to folders, dangling) and a link
swapped during a call are covered beside the fs pack (``test_confinement.py``,
``test_races.py``); here are the cases those leave out: FIFOs and devices never block
a call, a hard link to an outside file is never written through, names over the
file system's limits are typed refusals, and the workspace root is never a target.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import ErrorKind, Session, load_packs

pytestmark = pytest.mark.anyio


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace with a file no tool may change."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


@pytest.fixture
def workspace(tmp_path: Path, outside: Path) -> Path:
    """A workspace holding a FIFO, a hard link to the outside file and a link out."""
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(root / "fifo")
    os.link(outside / "secret.txt", root / "hard.txt")
    (root / "outlink").symlink_to(outside / "secret.txt")
    return root


@pytest.fixture
def session(workspace: Path) -> Session:
    """Every built-in pack, loaded through its entry point, over ``workspace``."""
    return (
        load_packs(include=("fs", "search", "shell", "plan"), strict=True)
        .build()
        .session(workspace=workspace)
    )


def _intact(workspace: Path) -> bool:
    return workspace.is_dir() and (workspace / "fifo").is_fifo()


SPECIAL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "fifo"}),
    ("edit_file", {"path": "fifo", "old_string": "a", "new_string": "b"}),
    ("grep", {"pattern": "x", "path": "fifo"}),
    ("grep", {"pattern": "x"}),
    ("glob", {"pattern": "*"}),
    ("list_dir", {}),
    ("read_file", {"path": "/dev/zero"}),
    ("read_file", {"path": "/dev/urandom"}),
    ("grep", {"pattern": "x", "path": "/dev/zero"}),
]


async def test_fifos_and_devices_never_block(session: Session, workspace: Path) -> None:
    """Reading, editing, searching and listing a FIFO nobody writes, or a device, ends
    at once with a typed result (a refusal for the FIFO and the devices); the FIFO stays."""
    for name, arguments in SPECIAL_CALLS:
        with anyio.fail_after(20):  # a hang guard: a blocked open would wait forever
            result = await session.call(name, arguments, "c")
        if arguments.get("path") in {"fifo", "/dev/zero", "/dev/urandom"}:
            assert result.error is not None, (name, result.text)
            assert result.error.kind in {ErrorKind.INVALID_PARAMS, ErrorKind.PERMISSION_DENIED}
        assert len(result.text) < 2_000
    assert (workspace / "fifo").is_fifo()


async def test_a_hard_link_to_an_outside_file_is_never_written_through(
    session: Session, workspace: Path, outside: Path
) -> None:
    """Writing or editing a hard link whose other name is outside replaces the inside
    name only (the write is a rename): the outside file keeps its content."""
    assert (await session.call("write_file", {"path": "hard.txt", "content": "x"}, "c")).ok
    os.link(outside / "secret.txt", workspace / "hard2.txt")
    edit = {"path": "hard2.txt", "old_string": "top", "new_string": "pwned"}
    assert (await session.call("edit_file", edit, "c")).ok
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert (workspace / "hard.txt").read_text() == "x"


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "."},
        {"path": ""},
        {"path": "./"},
        {"path": "a/.."},
        {"path": "outlink/../."},
    ],
)
async def test_the_workspace_root_is_never_a_target(
    session: Session, workspace: Path, arguments: dict[str, Any]
) -> None:
    """The root, however spelled, cannot be deleted, moved or moved onto."""
    (workspace / "a").mkdir()
    for name, given in (
        ("delete", {**arguments, "recursive": True}),
        ("move", {"source": arguments["path"], "destination": "elsewhere"}),
        ("move", {"source": "a", "destination": arguments["path"], "overwrite": True}),
        ("delete", {"path": str(workspace), "recursive": True}),
    ):
        result = await session.call(name, given, "c")
        assert result.error is not None, (name, given, result.text)
    assert _intact(workspace)


@pytest.mark.parametrize(
    "path",
    ["n" * 256, ("d" * 255 + "/") * 20 + "f", "a/" * 2_100 + "f", "/" * 5_000 + "x"],
)
async def test_names_past_the_file_system_limits_are_typed(session: Session, path: str) -> None:
    """A component over 255 bytes or a path over the limits is a short typed refusal
    for every path-taking tool."""
    for name, arguments in (
        ("write_file", {"path": path, "content": "x"}),
        ("read_file", {"path": path}),
        ("delete", {"path": path}),
        ("list_dir", {"path": path}),
        ("move", {"source": "fifo", "destination": path}),
    ):
        result = await session.call(name, arguments, "c")
        assert result.error is not None, (name, result.text)
        assert len(result.text) < 2_000


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("delete", {"path": "outlink"}), ("move", {"source": "outlink", "destination": "moved"})],
)
async def test_a_link_pointing_outside_can_itself_be_deleted_or_moved(
    session: Session, workspace: Path, outside: Path, name: str, arguments: dict[str, Any]
) -> None:
    """Deleting or moving a link inside the workspace touches only the link."""
    result = await session.call(name, arguments, "c")
    assert result.ok, result.text
    assert not (workspace / "outlink").is_symlink()
    assert (outside / "secret.txt").read_text() == "top secret\n"
    if name == "move":
        assert os.readlink(workspace / "moved") == str(outside / "secret.txt")
