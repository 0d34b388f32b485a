"""read_file: numbered windows of text files, caps, refusals."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import anyio.to_thread
import pytest
from toolweave import ErrorKind, Session
from toolweave_fs import _read_file

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True, params=["in-memory", "streamed"])
def read_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run every test on both read paths: small files read whole, large ones streamed."""
    if request.param == "streamed":
        monkeypatch.setattr(_read_file, "_WHOLE_FILE_BYTES", 0)
    return str(request.param)


async def test_lines_are_numbered_like_cat_n(session: Session, workspace: Path) -> None:
    """Each line comes back with its 1-based number, right-aligned, then a tab."""
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    result = await session.call("read_file", {"path": "a.txt"})
    assert result.error is None
    assert result.text == "     1\talpha\n     2\tbeta"
    assert result.output["content"] == "alpha\nbeta"
    assert result.output["total_lines"] == 2
    assert result.output["truncated"] is False


async def test_offset_and_limit_select_a_window(session: Session, workspace: Path) -> None:
    """offset skips lines, limit caps them, and the note says which offset reads on."""
    (workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await session.call("read_file", {"path": "n.txt", "offset": 3, "limit": 2})
    assert result.text.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]
    assert "[Showing lines 4-5 of 10. Read on with offset=5.]" in result.text
    assert result.output["next_offset"] == 5
    follow = await session.call("read_file", {"path": "n.txt", "offset": 5, "limit": 100})
    assert follow.text.splitlines()[0] == "     6\tline 6"
    assert follow.output["truncated"] is False
    assert follow.output["end_line"] == 10


async def test_default_limit_comes_from_params(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """Without a limit the configured default applies."""
    (workspace / "n.txt").write_text("x\n" * 50)
    session = make_session(
        workspace, {"tools": [{"id": "read_file", "params": {"default_limit": 7}}]}
    )
    result = await session.call("read_file", {"path": "n.txt"})
    assert result.output["end_line"] == 7
    assert result.output["total_lines"] == 50
    assert "Read on with offset=7" in result.text


async def test_size_cap_cuts_at_a_line_with_a_note(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """Output stops before the byte cap, at a whole line, and says how to read on."""
    (workspace / "big.txt").write_text("".join(f"{i:04d} " + "y" * 90 + "\n" for i in range(500)))
    session = make_session(
        workspace, {"tools": [{"id": "read_file", "params": {"max_output_bytes": 1000}}]}
    )
    result = await session.call("read_file", {"path": "big.txt"})
    out = result.output
    assert out["truncated"] is True
    assert 1 <= out["end_line"] < 20
    assert len(out["content"].encode()) <= 1000
    assert out["content"].splitlines()[-1].startswith(f"{out['end_line'] - 1:04d} ")
    assert f"Read on with offset={out['end_line']}." in result.text
    assert out["total_lines"] == 500


async def test_long_lines_are_cut_and_marked(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """A line longer than max_line_length is cut and marked; the next line is intact."""
    (workspace / "min.js").write_text("z" * 50_000 + "\nnext\n")
    session = make_session(
        workspace, {"tools": [{"id": "read_file", "params": {"max_line_length": 100}}]}
    )
    result = await session.call("read_file", {"path": "min.js"})
    first, second = result.output["content"].split("\n")
    assert first == "z" * 100 + " … [line cut]"
    assert second == "next"
    assert result.output["total_lines"] == 2


async def test_crlf_and_missing_final_newline(session: Session, workspace: Path) -> None:
    """Windows line ends are stripped and a last line without a newline still counts."""
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree")
    result = await session.call("read_file", {"path": "w.txt"})
    assert result.output["content"] == "one\ntwo\nthree"
    assert result.output["total_lines"] == 3


async def test_empty_file_and_offset_past_end(session: Session, workspace: Path) -> None:
    """An empty file and an offset past the end are successes with a clear note."""
    (workspace / "empty.txt").write_text("")
    (workspace / "three.txt").write_text("a\nb\nc\n")
    empty = await session.call("read_file", {"path": "empty.txt"})
    assert empty.error is None
    assert empty.text == "(`empty.txt` is empty)"
    past = await session.call("read_file", {"path": "three.txt", "offset": 9})
    assert past.error is None
    assert past.text == "(`three.txt` has 3 lines; offset 9 is past the end)"


async def test_binary_files_are_refused(session: Session, workspace: Path) -> None:
    """A file with NUL bytes or invalid UTF-8 is refused as invalid_params, clearly."""
    (workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (workspace / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    for name in ("img.png", "latin1.txt"):
        result = await session.call("read_file", {"path": name})
        assert result.error is not None
        assert result.error.kind is ErrorKind.INVALID_PARAMS
        assert "binary file" in result.text
        assert name in result.text


async def test_utf8_cut_by_the_sniff_window_is_still_text(
    session: Session, workspace: Path
) -> None:
    """A multi-byte character straddling the binary sniff window does not make it binary."""
    text = ("a" * 99 + "\n") * 81 + "a" * 91 + "é\n"
    assert text.encode().index("é".encode()) == 8191
    (workspace / "edge.txt").write_text(text, encoding="utf-8")
    result = await session.call("read_file", {"path": "edge.txt"})
    assert result.error is None
    assert result.output["content"] == text.rstrip("\n")


async def test_missing_file_is_not_found(session: Session) -> None:
    """A path that does not exist is not_found, naming the path."""
    result = await session.call("read_file", {"path": "nope/missing.txt"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND
    assert "`nope/missing.txt` does not exist" in result.text


async def test_directory_is_refused(session: Session, workspace: Path) -> None:
    """Reading a directory is invalid_params and suggests listing it."""
    (workspace / "sub").mkdir()
    result = await session.call("read_file", {"path": "sub"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "directory" in result.text


async def test_absolute_path_inside_workspace_works(session: Session, workspace: Path) -> None:
    """An absolute path that lies in the workspace is accepted and shown relative."""
    (workspace / "a.txt").write_text("hi\n")
    result = await session.call("read_file", {"path": str(workspace / "a.txt")})
    assert result.error is None
    assert result.output["path"] == "a.txt"


async def test_negative_offset_is_invalid_params(session: Session) -> None:
    """Arguments are validated before the file is touched."""
    result = await session.call("read_file", {"path": "a.txt", "offset": -1})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "`offset`" in result.text


async def test_description_says_when_not_to_use_it(session: Session) -> None:
    """The model-facing description names what the tool refuses."""
    definition = session.definitions("neutral")[0]
    assert definition["name"] == "read_file"
    assert "Do not use it" in definition["description"]
    assert definition["input_schema"]["additionalProperties"] is False


async def test_numbers_stay_right_far_into_a_file(session: Session, workspace: Path) -> None:
    """Line numbers are exact deep into a long file, and the total counts every line."""
    (workspace / "long.txt").write_text("".join(f"L{i}\n" for i in range(1, 30_001)))
    for offset in (0, 19_998, 29_998):
        result = await session.call("read_file", {"path": "long.txt", "offset": offset, "limit": 2})
        assert result.text.splitlines()[:2] == [
            f"{offset + 1:>6}\tL{offset + 1}",
            f"{offset + 2:>6}\tL{offset + 2}",
        ]
        assert result.output["total_lines"] == 30_000


def _sparse(path: Path, size: int, lines: int = 3000) -> Path:
    """A text file of ``lines`` short lines followed by a hole up to ``size`` bytes (no
    disk used: the hole reads as NUL bytes); returns its real path."""
    with path.open("wb") as fh:
        fh.write(b"line\n" * lines)
        fh.truncate(size)
    return Path(os.path.realpath(path))


async def test_a_huge_file_is_counted_only_so_far(session: Session, workspace: Path) -> None:
    """A 40 GiB file with a small window returns at once: the lines after the window are
    counted in a bounded number of bytes, and the total is a lower bound with the
    file's size (before, the whole file was read to count its lines)."""
    _sparse(workspace / "log.txt", 40 << 30)
    result = await session.call("read_file", {"path": "log.txt", "limit": 10})
    assert result.error is None, result.text
    out = result.output
    assert out["end_line"] == 10
    assert out["truncated"] is True
    assert out["total_exact"] is False
    assert out["total_lines"] >= 3001
    assert out["size_bytes"] == 40 << 30
    assert 15_000 < out["counted_bytes"] <= 15_000 + _read_file._COUNT_BYTES
    assert result.text.endswith(
        f"[Showing lines 1-10 of at least {out['total_lines']} (lines counted in the first "
        "8.0 MiB of the file's 40.0 GiB). Read on with offset=10.]"
    )


async def test_counting_stops_at_its_bound(
    session: Session, workspace: Path, read_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound the total is a lower bound; a file that ends within it has its
    exact total. Files read whole (small ones) always have their exact total."""
    monkeypatch.setattr(_read_file, "_COUNT_BYTES", 1000)
    (workspace / "n.txt").write_text("".join(f"{i:04d}\n" for i in range(1, 10_001)))
    result = await session.call("read_file", {"path": "n.txt", "offset": 5, "limit": 2})
    out = result.output
    assert out["content"] == "0006\n0007"
    if read_path == "in-memory":
        assert (out["total_lines"], out["total_exact"]) == (10_000, True)
        assert "of 10000. Read on with offset=7." in result.text
    else:
        assert out["total_exact"] is False
        assert out["total_lines"] == 7 + 200 + 1  # window, 1000 bytes of 5-byte lines, more
        assert out["counted_bytes"] == 35 + 1000
        assert result.text.endswith(
            "[Showing lines 6-7 of at least 208 (lines counted in the first 1.0 KiB of the "
            "file's 48.8 KiB). Read on with offset=7.]"
        )
    near_end = await session.call("read_file", {"path": "n.txt", "offset": 9_900, "limit": 2})
    assert near_end.output["total_lines"] == 10_000
    assert near_end.output["total_exact"] is True
    assert "of 10000. Read on with offset=9902." in near_end.text


def _open_on(path: Path) -> bool:
    """Whether this process holds a descriptor open on ``path``."""
    fds = Path("/proc/self/fd")
    for fd in os.listdir(fds):
        with contextlib.suppress(OSError):
            if os.readlink(fds / fd) == str(path):
                return True
    return False


def _closed_within(path: Path, seconds: float) -> bool:
    """Whether no descriptor of this process is open on ``path`` any more, waiting up
    to ``seconds`` for it."""
    end = time.monotonic() + seconds
    while _open_on(path):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc/self/fd to look in")
async def test_a_stopped_read_stops_reading(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """A read that runs past its timeout (skipping a 1 TiB line to reach its offset)
    ends with `timeout`, and its worker thread stops reading and closes the file instead
    of running on to the end of it, where the host would wait for it."""
    huge = _sparse(workspace / "huge.txt", 1 << 40)
    session = make_session(workspace, {"tools": [{"id": "read_file", "timeout": 1}]})
    result = await session.call("read_file", {"path": "huge.txt", "offset": 5000, "limit": 1})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    # Reading the rest of the file takes many minutes; stopping takes one line.
    assert await anyio.to_thread.run_sync(_closed_within, huge, 120)


async def test_a_fifo_is_named(session: Session, workspace: Path) -> None:
    """A FIFO is refused naming what it is, without blocking on it."""
    os.mkfifo(workspace / "pipe")
    result = await session.call("read_file", {"path": "pipe"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert result.text == "`pipe` is a FIFO (named pipe), not a regular file; it cannot be read"
