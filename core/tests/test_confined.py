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
