"""Path confinement: no fs tool reaches outside the workspace, however the path is spelled."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolweave import ErrorKind, Session, ToolError
from toolweave_fs import FileSystem

# How each escape spells (an existing outside file, a new outside file, an outside dir).
ESCAPES: dict[str, Callable[[Path], tuple[str, str, str]]] = {
    "dotdot": lambda out: (
        "sub/../../outside/secret.txt",
        "../outside/new.txt",
        "../outside",
    ),
    "absolute": lambda out: (str(out / "secret.txt"), str(out / "new.txt"), str(out)),
    "symlink_to_outside": lambda out: ("link.txt", "dangling.txt", "outdir"),
    "symlinked_parent": lambda out: ("outdir/secret.txt", "outdir/new.txt", "outdir/sub"),
}

# Each tool call that names a path, built from (existing file, new file, dir).
CALLS: dict[str, Callable[[str, str, str], tuple[str, dict[str, Any]]]] = {
    "read_file": lambda f, n, d: ("read_file", {"path": f}),
    "write_file(existing)": lambda f, n, d: ("write_file", {"path": f, "content": "pwned"}),
    "write_file(new)": lambda f, n, d: ("write_file", {"path": n, "content": "pwned"}),
    "edit_file": lambda f, n, d: (
        "edit_file",
        {"path": f, "old_string": "top", "new_string": "pwned"},
    ),
    "delete(file)": lambda f, n, d: ("delete", {"path": f}),
    "delete(dir)": lambda f, n, d: ("delete", {"path": d, "recursive": True}),
    "move(source)": lambda f, n, d: ("move", {"source": f, "destination": "stolen.txt"}),
    "move(destination)": lambda f, n, d: (
        "move",
        {"source": "inside.txt", "destination": n, "overwrite": True},
    ),
    "list_dir": lambda f, n, d: ("list_dir", {"path": d}),
}


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): (p.read_text() if p.is_file() else "<dir>")
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def trap(workspace: Path, outside: Path) -> Path:
    """Links from the workspace to the outside folder, and one file inside."""
    (outside / "sub").mkdir()
    (outside / "sub/inner.txt").write_text("inner\n")
    (workspace / "sub").mkdir()
    (workspace / "inside.txt").write_text("inside\n")
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "dangling.txt").symlink_to(outside / "new.txt")
    (workspace / "outdir").symlink_to(outside)
    return outside


ON_THE_LINK = {
    ("delete(file)", "symlink_to_outside"),
    ("delete(dir)", "symlink_to_outside"),
    ("move(source)", "symlink_to_outside"),
}
"""Calls that act on a link inside itself, not on what it leads to: no escape (see
:func:`test_delete_and_move_act_on_a_link_leading_outside`). A link leading outside as
the destination of a move is still refused (``move(destination)``)."""


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("call", "escape"),
    [(c, e) for c in sorted(CALLS) for e in sorted(ESCAPES) if (c, e) not in ON_THE_LINK],
)
async def test_every_tool_refuses_every_escape(
    session: Session, workspace: Path, trap: Path, escape: str, call: str
) -> None:
    """Each fs tool fails with permission_denied and leaves the outside folder untouched."""
    before = _snapshot(trap)
    name, args = CALLS[call](*ESCAPES[escape](trap))
    result = await session.call(name, args)
    assert result.error is not None, result.text
    assert result.error.kind is ErrorKind.PERMISSION_DENIED, result.text
    assert "outside the workspace" in result.text
    assert "top secret" not in result.text
    assert _snapshot(trap) == before
    assert (workspace / "inside.txt").read_text() == "inside\n"
    assert (workspace / "link.txt").is_symlink()
    assert (workspace / "outdir").is_symlink()


@pytest.mark.anyio
@pytest.mark.parametrize("link", ["link.txt", "dangling.txt", "outdir"])
async def test_delete_and_move_act_on_a_link_leading_outside(
    session: Session, workspace: Path, trap: Path, link: str
) -> None:
    """A link inside that leads outside (to a file, nowhere, a folder) is itself deleted
    or moved; what it leads to is untouched, and the moved link still leads nowhere a
    tool may go."""
    before = _snapshot(trap)
    target = os.readlink(workspace / link)
    moved = await session.call("move", {"source": link, "destination": f"sub/{link}"})
    assert moved.error is None, moved.text
    assert moved.text == f"Moved symlink `{link}` to `sub/{link}`."
    assert not (workspace / link).is_symlink()
    assert os.readlink(workspace / "sub" / link) == target
    through = await session.call("read_file", {"path": f"sub/{link}"})
    assert through.error is not None
    assert through.error.kind is ErrorKind.PERMISSION_DENIED
    deleted = await session.call("delete", {"path": f"sub/{link}", "recursive": True})
    assert deleted.error is None, deleted.text
    assert deleted.text == f"Deleted symlink `sub/{link}`."
    assert not (workspace / "sub" / link).is_symlink()
    assert _snapshot(trap) == before
    assert (trap / "secret.txt").read_text() == "top secret\n"


def test_resolve_keeps_paths_inside(tmp_path: Path) -> None:
    """resolve() accepts inside spellings and names the root on refusal."""
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    fs = FileSystem(root)
    assert fs.resolve("a/../b.txt") == root.resolve() / "b.txt"
    assert fs.resolve(str(root / "a")) == root.resolve() / "a"
    assert fs.resolve("") == root.resolve()
    with pytest.raises(ToolError) as info:
        fs.resolve("..")
    assert info.value.kind is ErrorKind.PERMISSION_DENIED
    assert str(root.resolve()) in info.value.message


def test_root_given_through_a_link_is_resolved(tmp_path: Path) -> None:
    """A workspace reached through a symbolic link still confines to its real folder."""
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    fs = FileSystem(alias)
    assert fs.root == real.resolve()
    assert fs.resolve(str(alias / "x.txt")) == real.resolve() / "x.txt"


def test_nul_byte_is_invalid_params(tmp_path: Path) -> None:
    """A path holding a NUL byte is invalid_params, not a crash."""
    with pytest.raises(ToolError) as info:
        FileSystem(tmp_path).resolve("a\x00b")
    assert info.value.kind is ErrorKind.INVALID_PARAMS


def test_locate_keeps_the_link_but_checks_its_target(tmp_path: Path) -> None:
    """locate() returns a link itself when it points inside, and refuses one pointing out."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "real.txt").write_text("x")
    (root / "in").symlink_to(root / "real.txt")
    (root / "out").symlink_to(tmp_path)
    fs = FileSystem(root)
    assert fs.locate("in") == root.resolve() / "in"
    with pytest.raises(ToolError) as info:
        fs.locate("out")
    assert info.value.kind is ErrorKind.PERMISSION_DENIED


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path=st.one_of(
        st.text(max_size=40),
        st.lists(st.sampled_from(["..", ".", "sub", "outdir", "link.txt", "/", "x"])).map("/".join),
    )
)
def test_arbitrary_paths_never_escape_or_crash(
    session: Session, workspace: Path, trap: Path, path: str
) -> None:
    """Any path string gives a typed result; writes never land outside the workspace."""
    before = _snapshot(trap)

    async def go() -> None:
        for name, args in (
            ("read_file", {"path": path}),
            ("list_dir", {"path": path, "depth": 1}),
            ("write_file", {"path": path, "content": "pwned"}),
        ):
            result = await session.call(name, args)
            if result.error is not None:
                assert result.error.kind in {
                    ErrorKind.PERMISSION_DENIED,
                    ErrorKind.INVALID_PARAMS,
                    ErrorKind.NOT_FOUND,
                }, result.text

    anyio.run(go)
    assert _snapshot(trap) == before
    assert os.path.realpath(workspace / "outdir") == str(trap.resolve())


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["read_file", "write_file", "delete", "list_dir", "move"])
async def test_a_huge_path_gives_a_short_reply(session: Session, name: str) -> None:
    """A 50 MB path is invalid_params with a reply of bounded size, not the path echoed."""
    huge = "d/" * 25_000_000
    args: dict[str, Any] = {
        "read_file": {"path": huge},
        "write_file": {"path": huge, "content": "x"},
        "delete": {"path": huge},
        "list_dir": {"path": huge},
        "move": {"source": "x", "destination": huge},
    }[name]
    result = await session.call(name, args)
    assert result.error is not None
    assert result.error.kind in {ErrorKind.INVALID_PARAMS, ErrorKind.NOT_FOUND}
    assert len(result.text) < 1000
