"""Workspace confinement: a model-given path resolves inside the root, or fails typed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolweave import ErrorKind, ToolError, Workspace


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace beside an outside folder (and a sibling whose name extends the
    root's), with links that stay inside and links that lead out."""
    root = tmp_path / "ws"
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/pkg/mod.py").write_text("inside\n")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret\n")
    (tmp_path / "ws-evil").mkdir()
    (tmp_path / "ws-evil/f.txt").write_text("evil\n")
    (root / "in_link.py").symlink_to(root / "src/pkg/mod.py")
    (root / "in_dir").symlink_to(root / "src")
    (root / "in_dangling").symlink_to(root / "src/not-yet.txt")
    (root / "out_link.txt").symlink_to(outside / "secret.txt")
    (root / "out_dangling.txt").symlink_to(outside / "new.txt")
    (root / "out_dir").symlink_to(outside)
    (root / "loop").symlink_to("loop")
    return root


def _denied(ws: Workspace, path: str, **options: bool) -> ToolError:
    with pytest.raises(ToolError) as info:
        ws.resolve(path, **options)
    assert info.value.kind is ErrorKind.PERMISSION_DENIED, info.value
    assert "outside the workspace" in info.value.message
    assert str(ws.root) in info.value.message
    return info.value


def test_root_is_resolved_and_compared_by_real_location(tree: Path, tmp_path: Path) -> None:
    """A root given through a link or relative spelling becomes its real absolute folder;
    two workspaces over one folder are equal."""
    alias = tmp_path / "alias"
    alias.symlink_to(tree)
    ws = Workspace(alias)
    assert ws.root == tree.resolve()
    assert ws == Workspace(tree)
    assert hash(ws) == hash(Workspace(tree))
    assert repr(ws) == f"Workspace(root={tree.resolve()!r})"
    assert ws.resolve(str(alias / "src/pkg/mod.py")) == tree.resolve() / "src/pkg/mod.py"


@pytest.mark.parametrize("path", ["", ".", "./", "src/..", "src/pkg/../../."])
def test_the_root_itself(tree: Path, path: str) -> None:
    """Every spelling of the root resolves to the root, shown as ``.``."""
    ws = Workspace(tree)
    assert ws.resolve(path) == ws.root
    assert ws.resolve(str(ws.root) + "/" + path) == ws.root
    assert ws.relative(ws.resolve(path)) == "."
    assert ws.contains(ws.root)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/pkg/mod.py", "src/pkg/mod.py"),
        ("src/pkg/../pkg/./mod.py", "src/pkg/mod.py"),
        ("src//pkg///mod.py", "src/pkg/mod.py"),
        ("in_link.py", "src/pkg/mod.py"),
        ("in_dir/pkg/mod.py", "src/pkg/mod.py"),
        ("new/deeper/file.txt", "new/deeper/file.txt"),
        ("in_dir/new/file.txt", "src/new/file.txt"),
        ("in_dangling", "src/not-yet.txt"),
    ],
)
def test_inside_paths_resolve_to_their_real_location(tree: Path, path: str, expected: str) -> None:
    """Relative and absolute spellings inside the root, through inside links and into
    folders that do not exist yet, resolve to the real location below the root."""
    ws = Workspace(tree)
    assert ws.resolve(path) == ws.root / expected
    assert ws.resolve(str(ws.root / path)) == ws.root / expected
    assert ws.relative(ws.resolve(path)) == expected


@pytest.mark.parametrize(
    "path",
    ["..", "../outside/secret.txt", "src/../../outside", "src/pkg/../../../outside/new.txt"],
)
def test_dotdot_out_of_the_root_is_denied(tree: Path, path: str) -> None:
    """``..`` that climbs above the root is permission_denied, existing target or not."""
    error = _denied(Workspace(tree), path)
    assert "symbolic link" not in error.message


def test_absolute_paths_outside_are_denied(tree: Path, tmp_path: Path) -> None:
    """An absolute path elsewhere (existing, new, ``/``, or a sibling folder whose name
    merely starts with the root's) is permission_denied."""
    ws = Workspace(tree)
    for path in ("/", str(tmp_path), str(tmp_path / "outside/secret.txt")):
        _denied(ws, path)
    _denied(ws, str(tmp_path / "outside/new.txt"))
    _denied(ws, str(tmp_path / "ws-evil/f.txt"))
    _denied(ws, "../ws-evil/f.txt")
    assert not ws.contains(tmp_path / "ws-evil")
    assert not ws.contains(tmp_path / "ws-evil/f.txt")


@pytest.mark.parametrize(
    "path",
    [
        "out_link.txt",
        "out_dangling.txt",
        "out_dir",
        "out_dir/secret.txt",
        "out_dir/sub",
        "out_dir/new.txt",
        "out_dir/new/deeper/file.txt",
        "in_dir/../out_dir/secret.txt",
    ],
)
@pytest.mark.parametrize("follow_final_link", [True, False])
def test_links_leading_outside_are_denied(tree: Path, path: str, follow_final_link: bool) -> None:
    """A link to the outside (file, dangling, directory) or a path below a linked
    outside directory, existing or not, is denied, naming the link as the cause."""
    error = _denied(Workspace(tree), path, follow_final_link=follow_final_link)
    assert "symbolic link" in error.message


def test_must_exist(tree: Path) -> None:
    """``must_exist`` turns a missing target into not_found (naming the path the model
    sent) but never hides a denial; it looks at the link itself when links are kept."""
    ws = Workspace(tree)
    assert ws.resolve("src/pkg/mod.py", must_exist=True) == ws.root / "src/pkg/mod.py"
    assert ws.resolve("", must_exist=True) == ws.root
    for path in ("nope.txt", "src/nope/deeper.txt", "in_dangling", "loop"):
        with pytest.raises(ToolError) as info:
            ws.resolve(path, must_exist=True)
        assert info.value.kind is ErrorKind.NOT_FOUND
        assert info.value.message == f"`{path}` does not exist in the workspace"
    _denied(ws, "../outside/new.txt", must_exist=True)
    kept = ws.resolve("in_dangling", must_exist=True, follow_final_link=False)
    assert kept == ws.root / "in_dangling"
    with pytest.raises(ToolError) as info:
        ws.resolve("src/gone", must_exist=True, follow_final_link=False)
    assert info.value.kind is ErrorKind.NOT_FOUND


def test_keeping_the_final_link(tree: Path) -> None:
    """With ``follow_final_link=False`` a link inside is returned as the link, in its
    real parent folder; a path ending in ``.``, ``..`` or ``/`` is resolved fully."""
    ws = Workspace(tree)
    kept = ws.resolve("in_link.py", follow_final_link=False)
    assert kept == ws.root / "in_link.py"
    assert kept.is_symlink()
    assert ws.resolve("in_dir", follow_final_link=False) == ws.root / "in_dir"
    assert ws.resolve("in_dir/pkg", follow_final_link=False) == ws.root / "src/pkg"
    assert ws.resolve("loop", follow_final_link=False) == ws.root / "loop"
    assert ws.resolve("src/pkg/mod.py", follow_final_link=False) == ws.root / "src/pkg/mod.py"
    assert ws.resolve("in_dir/", follow_final_link=False) == ws.root / "src"
    assert ws.resolve("src/pkg/..", follow_final_link=False) == ws.root / "src"
    assert ws.resolve(".", follow_final_link=False) == ws.root
    _denied(ws, "..", follow_final_link=False)
    _denied(ws, "out_dir/", follow_final_link=False)


def test_a_nul_byte_is_invalid_params(tree: Path) -> None:
    """Text that cannot be a path is invalid_params, not a crash."""
    with pytest.raises(ToolError) as info:
        Workspace(tree).resolve("src/\x00x")
    assert info.value.kind is ErrorKind.INVALID_PARAMS
    assert "NUL" in info.value.message


def test_relative_and_contains(tree: Path, tmp_path: Path) -> None:
    """``relative`` shows a location with ``/`` below the root and leaves one outside
    as it is; ``contains`` accepts the root and below, nothing else."""
    ws = Workspace(tree)
    assert ws.relative(ws.root / "a/b.txt") == "a/b.txt"
    assert ws.relative(str(ws.root / "a")) == "a"
    outside = str(tmp_path.resolve() / "outside")
    assert ws.relative(outside) == outside
    assert ws.contains(str(ws.root / "a"))
    assert not ws.contains(tmp_path.resolve())
    assert not ws.contains(str(ws.root) + "-evil")


def test_the_filesystem_root_contains_everything(tmp_path: Path) -> None:
    """A workspace at ``/`` confines nothing away and shows paths without a leading ``/``."""
    ws = Workspace(Path("/"))
    target = tmp_path.resolve() / "x.txt"
    assert ws.resolve(str(target)) == target
    assert ws.resolve("..") == Path("/")
    assert ws.relative(target) == str(target).lstrip("/")
    assert ws.relative("/") == "."


def _settles(text: str) -> bool:
    """Whether ``realpath`` resolves ``text`` all the way: it gives up at a loop of
    links and returns the rest unresolved, which a second pass then changes."""
    real = os.path.realpath(text)
    return os.path.realpath(real) == real


def test_a_link_loop_on_the_way_is_not_a_way_around_a_link(tree: Path) -> None:
    """``loop/../out_link.txt`` (loop is a link to itself): realpath gives up at the
    loop and returns ``out_link.txt`` unresolved, a link leading outside. It is refused,
    never handed out as a path inside."""
    ws = Workspace(tree)
    with pytest.raises(ToolError) as info:
        ws.resolve("loop/../out_link.txt")
    assert info.value.kind is ErrorKind.INVALID_PARAMS
    assert "loop of symbolic links" in info.value.message
    _denied(ws, "loop/../out_link.txt", follow_final_link=False)


def test_repeated_separators_after_a_link_loop_read_as_one(tree: Path) -> None:
    """``loop//src`` is ``loop/src``: Python 3.11's realpath gave ``/src`` for it (the
    folder before ``//`` lost after a loop of links), which read as a way outside."""
    ws = Workspace(tree)
    for follow in (True, False):
        assert ws.resolve("loop//src", follow_final_link=follow) == ws.resolve(
            "loop/src", follow_final_link=follow
        )


SEGMENTS = st.sampled_from(
    [
        "..",
        ".",
        "",
        "src",
        "pkg",
        "mod.py",
        "new",
        "in_link.py",
        "in_dir",
        "in_dangling",
        "out_link.txt",
        "out_dangling.txt",
        "out_dir",
        "sub",
        "loop",
        "ws",
        "ws-evil",
        "outside",
    ]
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path=st.one_of(
        st.lists(SEGMENTS, max_size=8).map("/".join),
        st.lists(SEGMENTS, max_size=8).map(lambda parts: "/" + "/".join(parts)),
        st.text(max_size=30),
    ),
    must_exist=st.booleans(),
    follow_final_link=st.booleans(),
)
def test_a_resolved_path_is_always_inside(
    tree: Path, path: str, must_exist: bool, follow_final_link: bool
) -> None:
    """Whatever the text, resolve() returns a location whose real place is inside the
    root, or fails typed; it is denied exactly when the real place (or, keeping the
    final link, its real parent folder) is outside."""
    ws = Workspace(tree)
    root = str(ws.root)

    def inside(text: str) -> bool:
        return Path(os.path.realpath(text)).is_relative_to(root)

    if "\x00" in path:
        with pytest.raises(ToolError) as info:
            ws.resolve(path, must_exist=must_exist, follow_final_link=follow_final_link)
        assert info.value.kind is ErrorKind.INVALID_PARAMS
        return
    joined = re.sub("//+", "/", os.path.join(root, path))  # realpath errs on "loop//x"
    parent, name = os.path.split(joined)
    keep = not follow_final_link and name not in ("", ".", "..")
    expected = os.path.join(os.path.realpath(parent), name) if keep else os.path.realpath(joined)
    checked = [parent] if keep else [joined]
    if keep and os.path.islink(expected):
        checked.append(expected)
    if not all(_settles(p) for p in checked):  # a loop of links on the way
        with pytest.raises(ToolError) as info:
            ws.resolve(path, must_exist=must_exist, follow_final_link=follow_final_link)
        assert info.value.kind in (ErrorKind.INVALID_PARAMS, ErrorKind.PERMISSION_DENIED)
        return
    if not inside(joined) or (keep and not inside(parent)):
        _denied(ws, path, must_exist=must_exist, follow_final_link=follow_final_link)
    elif must_exist and not (os.path.lexists if keep else os.path.exists)(expected):
        with pytest.raises(ToolError) as info:
            ws.resolve(path, must_exist=must_exist, follow_final_link=follow_final_link)
        assert info.value.kind is ErrorKind.NOT_FOUND
    else:
        got = ws.resolve(path, must_exist=must_exist, follow_final_link=follow_final_link)
        assert str(got) == expected
        assert ws.contains(got)
        assert inside(str(got))
        assert got == ws.root or inside(str(got.parent))


# -- bounded reads of regular files ------------------------------------------------------


def test_read_bytes_reads_a_regular_file_within_its_limit(tmp_path: Path) -> None:
    from toolweave.resources import FileRefused

    (tmp_path / "a.txt").write_bytes(b"0123456789")
    ws = Workspace(tmp_path)
    assert ws.read_bytes("a.txt", 10) == b"0123456789"
    assert ws.read_bytes("a.txt", 4, truncate=True) == b"0123"
    with pytest.raises(FileRefused) as refused:
        ws.read_bytes("a.txt", 9)
    assert refused.value.reason == "too_large"
    assert str(refused.value) == "is over the limit of 9 bytes"


def test_read_bytes_refuses_folders_and_fifos_without_waiting(tmp_path: Path) -> None:
    """A FIFO with no writer is refused at once (a plain open would wait for a writer
    forever); a folder is refused as one."""
    import threading

    from toolweave.resources import FileRefused

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    ws = Workspace(tmp_path)
    reasons: list[str] = []

    def read_both() -> None:
        for name in ("pipe", "dir"):
            try:
                ws.read_bytes(name, 100)
            except FileRefused as exc:
                reasons.append(exc.reason)

    reader = threading.Thread(target=read_both, daemon=True)
    reader.start()
    reader.join(30)
    assert reasons == ["special", "directory"]


def test_read_regular_refuses_a_device_that_never_ends() -> None:
    from toolweave.resources import FileRefused, read_regular

    fd = os.open("/dev/zero", os.O_RDONLY)
    try:
        with pytest.raises(FileRefused) as refused:
            read_regular(fd, 1 << 20, truncate=True)
    finally:
        os.close(fd)
    assert refused.value.reason == "special"
