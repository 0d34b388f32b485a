"""Workspace.locate / Workspace.open: paths walked from the root's descriptor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolweave import ErrorKind, ToolError, Workspace
from toolweave.errors import preview
from toolweave.resources import MAX_PATH_CHARS


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A root with a file, links that stay inside and links that lead out."""
    root = tmp_path / "root"
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/mod.py").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    (root / "in_dir").symlink_to(root / "src")
    (root / "rel_link.py").symlink_to("src/pkg/mod.py")
    (root / "out_dir").symlink_to(tmp_path)
    (root / "out_file").symlink_to(tmp_path / "secret.txt")
    (root / "loop").symlink_to("loop")
    return root


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_open_follows_links_that_stay_inside(tree: Path) -> None:
    """Links inside the root lead to their real entry, shown by its real path."""
    ws = Workspace(tree)
    for path in ("in_dir/pkg/mod.py", "rel_link.py", str(tree / "src/pkg/mod.py")):
        with ws.open(path) as loc:
            assert loc.fd is not None
            assert os.read(loc.fd, 100) == b"inside\n"
            assert loc.relative == "src/pkg/mod.py"
    with ws.locate("src/pkg/..") as loc:
        assert loc.relative == "src"
    with ws.locate("") as loc:
        assert loc.is_root


@pytest.mark.parametrize("path", ["out_dir/secret.txt", "out_file", "..", "src/../../x"])
def test_open_refuses_every_way_out(tree: Path, path: str) -> None:
    """Links to the outside and `..` above the root are permission_denied."""
    before = _fds()
    with pytest.raises(ToolError) as info:
        Workspace(tree).open(path)
    assert info.value.kind is ErrorKind.PERMISSION_DENIED
    assert _fds() == before  # no descriptor left open on the way out


def test_keeping_a_link_checks_where_it_leads(tree: Path) -> None:
    """locate(follow_final_link=False) keeps a link inside (even a loop) but refuses one
    that leads out."""
    ws = Workspace(tree)
    with ws.locate("in_dir", follow_final_link=False) as loc:
        assert loc.relative == "in_dir"
    with ws.locate("loop", follow_final_link=False) as loc:
        assert loc.name == "loop"
    with pytest.raises(ToolError) as info:
        ws.locate("out_file", follow_final_link=False)
    assert "symbolic link" in info.value.message


def test_a_link_taken_as_itself_may_lead_anywhere(tree: Path) -> None:
    """locate(check_link_target=False) returns a link leading out as the entry, to be
    unlinked or renamed; links on the way and `..` above the root are still refused."""
    ws = Workspace(tree)
    for name in ("out_file", "out_dir", "loop"):
        with ws.locate(name, follow_final_link=False, check_link_target=False) as loc:
            assert (loc.name, loc.relative) == (name, name)
            assert os.readlink(loc.name, dir_fd=loc.dir_fd) == os.readlink(tree / name)
    for path in ("out_dir/secret.txt", "out_dir/", "out_dir/.", "..", "out_file/.."):
        with pytest.raises(ToolError) as info:
            ws.locate(path, follow_final_link=False, check_link_target=False)
        assert info.value.kind is ErrorKind.PERMISSION_DENIED, path


def test_create_parents_makes_directories_inside(tree: Path) -> None:
    """Missing parents are created below the root, through links that stay inside."""
    with Workspace(tree).locate("in_dir/new/deeper/file.txt", create_parents=True) as loc:
        assert loc.relative == "src/new/deeper/file.txt"
    assert (tree / "src/new/deeper").is_dir()


def test_a_loop_of_links_is_eloop(tree: Path) -> None:
    """A link that leads to itself stops after a bounded number of steps."""
    with pytest.raises(OSError) as info:
        Workspace(tree).open("loop")
    assert info.value.errno == 40  # ELOOP


def test_a_huge_path_is_refused_with_a_bounded_message(tree: Path) -> None:
    """A path over the limit is invalid_params naming the limit; the message stays short."""
    huge = "a/" * 5_000_000
    for call in (Workspace(tree).open, Workspace(tree).resolve):
        with pytest.raises(ToolError) as info:
            call(huge)
        assert info.value.kind is ErrorKind.INVALID_PARAMS
        assert str(MAX_PATH_CHARS) in info.value.message
        assert len(info.value.message) < 500


def test_preview_cuts_and_says_how_long() -> None:
    """preview keeps short text and cuts long text, naming its length."""
    assert preview("abc") == "abc"
    cut = preview("x" * 10_000, limit=10)
    assert cut == "xxxxxxxxxx… (10000 characters)"


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("newdir/deeper/../../../escape.txt", ToolError),  # `..` above the root
        ("new/a/../../out_dir/x.txt", ToolError),  # back out of new folders, then a link out
        ("new/../../x.txt", ToolError),
        ("up/x.txt", ToolError),  # a link whose target makes folders, then leaves
        ("new/../src/pkg/mod.py/x.txt", NotADirectoryError),  # a file on the way
        ("new/a/../../loop/x.txt", OSError),  # a loop of links on the way
    ],
)
def test_a_walk_that_fails_creates_nothing(tree: Path, path: str, error: type[Exception]) -> None:
    """create_parents makes no folder until the whole path is known to lead inside: a
    walk refused (or failing) after a missing folder leaves nothing behind."""
    (tree / "up").symlink_to("made/by/../../..")
    before = _listing(tree)
    fds = _fds()
    with pytest.raises(error) as info:
        Workspace(tree).locate(path, create_parents=True)
    if isinstance(info.value, ToolError):
        assert info.value.kind is ErrorKind.PERMISSION_DENIED
    assert _listing(tree) == before
    assert _fds() == fds


def test_a_missing_folder_only_passed_through_is_not_made(tree: Path) -> None:
    """`new/../x` needs no `new`: only the folders still on the way at the end are made."""
    ws = Workspace(tree)
    with ws.locate("new/../src/made/../file.txt", create_parents=True) as loc:
        assert loc.relative == "src/file.txt"
    assert not (tree / "new").exists()
    assert not (tree / "src/made").exists()
    with ws.locate("one/two/../three/f.txt", create_parents=True) as loc:
        assert loc.relative == "one/three/f.txt"
    assert (tree / "one/three").is_dir()
    assert not (tree / "one/two").exists()
    with ws.locate("four/five/six/..", create_parents=True) as loc:
        assert loc.relative == "four/five"  # the entry, which need not exist (as `four/five/`)
    assert (tree / "four").is_dir()
    assert not (tree / "four/five").exists()


def test_folders_made_before_a_failure_are_removed(tree: Path) -> None:
    """A system error while the folders are made (a name too long for the file system)
    removes those made before it."""
    before = _listing(tree)
    with pytest.raises(OSError) as info:
        Workspace(tree).locate("a/b/" + "x" * 300 + "/f.txt", create_parents=True)
    assert info.value.errno == 36  # ENAMETOOLONG
    assert _listing(tree) == before
