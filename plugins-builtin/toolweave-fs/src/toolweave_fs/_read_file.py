"""``read_file``: numbered lines of a text file, a window at a time."""

from __future__ import annotations

import operator
import os
import stat
import threading
from bisect import bisect_right
from collections.abc import Iterator
from io import BufferedReader
from itertools import accumulate

from pydantic import BaseModel, Field, PrivateAttr
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_fs._filesystem import FileSystem, filesystem, not_regular, os_error
from toolweave_fs._names import with_tool

__all__ = ["ReadFile", "ReadFileArgs", "ReadFileOutput", "ReadFileParams"]

_SNIFF_BYTES = 8192
_WHOLE_FILE_BYTES = 4 << 20
"""Files up to this size are read in one piece; larger ones are streamed line by line."""
_COUNT_BYTES = 8 << 20
"""After the window of a streamed file, lines are counted in at most this many more
bytes; past them the total is given as a lower bound (with the file's size), so that a
call's work is bounded by its window, not by the size of the file."""
_CUT_MARK = " … [line cut]"
_CACHED_NUMBERS = 20_000
_prefixes: tuple[str, ...] = ()


class ReadFileArgs(BaseModel):
    """Arguments of read_file."""

    path: str = Field(description="Path of the file, relative to the workspace root.")
    """Path of the file, relative to the workspace root (or absolute inside it)."""
    offset: int = Field(
        0,
        ge=0,
        description="Number of lines to skip before reading; to read on after a cut-off "
        "output, pass the last line number shown.",
    )
    """Lines to skip before the first line returned."""
    limit: int | None = Field(
        None,
        ge=1,
        description="Most lines to return (default: the configured limit, usually 2000).",
    )
    """Most lines to return; ``None`` uses :attr:`ReadFileParams.default_limit`."""


class ReadFileParams(BaseModel):
    """Configuration of ``read_file``."""

    default_limit: int = Field(2000, ge=1)
    """Lines returned when the call gives no ``limit``."""
    max_output_bytes: int = Field(100_000, ge=1)
    """Size cap of the returned text; the output is cut at a line boundary before it."""
    max_line_length: int = Field(2000, ge=1)
    """Longer lines are cut to this many characters and marked as cut."""


class ReadFileOutput(ToolOutput):
    """What ``read_file`` returns."""

    path: str
    """The file, relative to the workspace root."""
    content: str
    """The returned lines (without numbers), joined with ``\\n``."""
    start_line: int
    """Number of the first returned line (from 1), or 0 when no line was returned."""
    end_line: int
    """Number of the last returned line, or 0 when no line was returned."""
    total_lines: int
    """Number of lines in the whole file; a lower bound when :attr:`total_exact` is
    ``False``."""
    total_exact: bool = True
    """``False`` when the file is too large to count its lines in one call: its lines
    were counted in the first :attr:`counted_bytes` of its :attr:`size_bytes` only."""
    size_bytes: int | None = None
    """The file's size in bytes, when :attr:`total_exact` is ``False``."""
    counted_bytes: int | None = None
    """How many bytes from the start of the file its lines were counted in, when
    :attr:`total_exact` is ``False``."""
    offset: int = 0
    """The number of lines skipped, as asked."""
    truncated: bool
    """``True`` when lines after :attr:`end_line` were left out (limit or size cap)."""
    next_offset: int | None = None
    """The ``offset`` that reads on after this window, when :attr:`truncated`."""
    _offset_name: str = PrivateAttr("offset")
    """What the model calls the ``offset`` parameter (a configuration may rename it)."""

    def to_model(self) -> str:
        """The lines numbered like ``cat -n``, with a note when the output was cut."""
        if self.total_lines == 0:
            return f"(`{self.path}` is empty)"
        if self.end_line == 0:
            lines = "1 line" if self.total_lines == 1 else f"{self.total_lines} lines"
            return f"(`{self.path}` has {lines}; {self._offset_name} {self.offset} is past the end)"
        count = self.end_line - self.start_line + 1
        numbered = _numbered(self.start_line, self.content.split("\n", count - 1))
        if not self.truncated:
            return numbered
        of = str(self.total_lines)
        if not self.total_exact:
            of = f"at least {self.total_lines}"
            if self.counted_bytes is not None and self.size_bytes is not None:
                of += (
                    f" (lines counted in the first {_size(self.counted_bytes)} of the "
                    f"file's {_size(self.size_bytes)})"
                )
        return (
            f"{numbered}\n[Showing lines {self.start_line}-{self.end_line} of "
            f"{of}. Read on with {self._offset_name}={self.end_line}.]"
        )


def _size(count: int) -> str:
    """A size in bytes for people: ``512 bytes``, ``8.0 MiB``, ``40.0 GiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return "1 byte" if count == 1 else f"{count} bytes"


class ReadFile(Tool[ReadFileArgs, ReadFileOutput]):
    """Reads a text file of the workspace (see the module docstring)."""

    id = "read_file"
    namespace = "fs"
    kind = Kind.READ
    params = ReadFileParams
    description = (
        "Read a text file from the workspace. The lines come back numbered from 1, like "
        "`cat -n`. Long files are returned a window at a time (by default the first 2000 "
        "lines): `{param:offset}` skips lines, `{param:limit}` caps how many are "
        "returned, and a note at the end says which offset reads on (and how many lines "
        "the file has; for a very large file, at least how many). Read a file before "
        "changing it, and change it by editing the exact text (with {tool:edit|an edit "
        "tool}) rather than rewriting it whole.\n\n"
        "Do not use it for directories (list them with {tool:list_dir|a directory "
        "listing} instead) or for binary files such as images, archives or compiled "
        "code: they are refused."
    )

    async def run(self, ctx: Context, args: ReadFileArgs) -> ReadFileOutput:
        """Read the requested window of the file, in a worker thread that stops at its
        next line when the call is stopped (its timeout, or cancelled)."""
        fs = filesystem(ctx.resources)
        params = ctx.params(ReadFileParams)
        # a stopped call's thread ends at its next check of ctx.stop_event
        output = await ctx.in_thread(_read_path, ctx, fs, args, params, ctx.stop_event)
        output._offset_name = ctx.param_name("offset")
        return output


def _read_path(
    ctx: Context,
    fs: FileSystem,
    args: ReadFileArgs,
    params: ReadFileParams,
    stop: threading.Event,
) -> ReadFileOutput:
    """The requested window of the file at ``args.path``."""
    with fs.open(args.path) as entry:
        assert entry.fd is not None
        return _read(ctx, entry.fd, fs.spell(entry.relative), args, params, stop)


def _stopped(stop: threading.Event) -> None:
    """Raise when the call was stopped: its worker thread is then left alone, and reads
    no further."""
    if stop.is_set():
        raise ToolError(ErrorKind.CANCELLED, "read_file was stopped")


def _read(
    ctx: Context,
    fd: int,
    shown: str,
    args: ReadFileArgs,
    params: ReadFileParams,
    stop: threading.Event,
) -> ReadFileOutput:
    """The requested window of the file open as ``fd``; reading stops (raises) once
    ``stop`` is set."""
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{shown}` is a directory; list it"
                f"{with_tool(ctx, Kind.LIST_DIR)} instead of reading it",
            )
        if not stat.S_ISREG(info.st_mode):
            raise not_regular(info.st_mode, shown)
        with open(fd, "rb", closefd=False) as fh:
            whole = info.st_size <= _WHOLE_FILE_BYTES
            head = fh.read(_WHOLE_FILE_BYTES + 1 if whole else _SNIFF_BYTES)
            if _is_binary(head[:_SNIFF_BYTES]):
                raise ToolError(
                    ErrorKind.INVALID_PARAMS,
                    f"`{shown}` is a binary file (or not UTF-8 text); "
                    f"{ctx.tool_name() or 'this tool'} only reads text files",
                )
            if whole and len(head) <= _WHOLE_FILE_BYTES:
                return _window_in_memory(head, shown, args, params)
            fh.seek(0)
            return _window(fh, shown, args, params, stop, info.st_size)
    except OSError as exc:
        raise os_error(exc, shown) from None


def _numbered(start: int, lines: list[str]) -> str:
    """``lines`` numbered from ``start`` like ``cat -n`` (number, tab, line)."""
    global _prefixes
    end = start + len(lines)
    if end > _CACHED_NUMBERS:
        return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start))
    prefixes = _prefixes
    if len(prefixes) < end:
        # Formatting numbers dominates the cost of a read; build the prefixes once.
        # A new tuple is swapped in whole, so concurrent readers never see it half-made.
        size = min(max(end, 2 * len(prefixes), 1024), _CACHED_NUMBERS)
        prefixes = _prefixes = tuple(f"{n:>6}\t" for n in range(size))
    return "\n".join(map(operator.add, prefixes[start:end], lines))


def _window_in_memory(
    data: bytes, shown: str, args: ReadFileArgs, params: ReadFileParams
) -> ReadFileOutput:
    """The window of a file read whole (the common case; see :func:`_window`)."""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final line end, or an empty file
    total = len(lines)
    limit = args.limit if args.limit is not None else params.default_limit
    start = args.offset
    window = lines[start : start + limit]
    if "\r" in text:
        window = [line[:-1] if line.endswith("\r") else line for line in window]
    most = params.max_line_length
    window = [line if len(line) <= most else line[:most] + _CUT_MARK for line in window]
    if text.isascii():
        costs = accumulate(len(line) + 8 for line in window)  # number, tab, newline
    else:
        costs = accumulate(len(line.encode("utf-8", "replace")) + 8 for line in window)
    fits = bisect_right(list(costs), params.max_output_bytes)
    out = window[: max(fits, 1)]
    end = start + len(out)
    more = end < total
    return ReadFileOutput(
        path=shown,
        content="\n".join(out),
        start_line=start + 1 if out else 0,
        end_line=end if out else 0,
        total_lines=total,
        offset=start,
        truncated=more,
        next_offset=end if more else None,
    )


def _is_binary(head: bytes) -> bool:
    """Whether the first bytes of a file say it is not UTF-8 text."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the end of the sample is still text.
        return not (exc.reason == "unexpected end of data" and exc.start >= len(head) - 3)
    return False


def _lines(fh: BufferedReader, cap: int, stop: threading.Event) -> Iterator[tuple[bytes, bool]]:
    """Each line of ``fh`` without its line end, at most ``cap`` bytes, and whether it
    was cut; a line is never held in memory whole. Stops (raises) when ``stop`` is set,
    also in the middle of a long line."""
    while True:
        _stopped(stop)
        chunk = fh.readline(cap)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            yield chunk[:-1].removesuffix(b"\r"), False
            continue
        if len(chunk) < cap:
            yield chunk.removesuffix(b"\r"), False  # the last line has no line end
            return
        rest = fh.readline(cap)
        cut = rest not in (b"", b"\n", b"\r\n")
        while rest and not rest.endswith(b"\n"):
            _stopped(stop)
            rest = fh.readline(cap)
        yield chunk, cut


def _count_lines(fh: BufferedReader, most: int, stop: threading.Event) -> tuple[int, bool]:
    """Lines in ``fh`` from a line boundary on, counted in at most ``most`` bytes, and
    whether that reached the end (else the count is a lower bound)."""
    count = 0
    last = b"\n"
    left = most
    while left > 0:
        _stopped(stop)
        chunk = fh.read(min(1 << 20, left))
        if not chunk:
            return count + (last != b"\n"), True
        count += chunk.count(b"\n")
        last = chunk[-1:]
        left -= len(chunk)
    if not fh.peek(1):
        return count + (last != b"\n"), True
    return count + 1, False  # bytes follow: at least one more line (or the rest of one)


def _window(
    fh: BufferedReader,
    shown: str,
    args: ReadFileArgs,
    params: ReadFileParams,
    stop: threading.Event,
    size: int,
) -> ReadFileOutput:
    """The window of a large file, streamed: no line is held whole, and the lines after
    the window are counted in at most :data:`_COUNT_BYTES` more bytes."""
    limit = args.limit if args.limit is not None else params.default_limit
    max_chars = params.max_line_length
    budget = params.max_output_bytes
    out: list[str] = []
    seen = 0
    more = False
    for raw, cut in _lines(fh, max_chars * 4 + 4, stop):
        seen += 1
        if seen <= args.offset:
            continue
        line = raw.decode("utf-8", "replace")
        if cut or len(line) > max_chars:
            line = line[:max_chars] + _CUT_MARK
        cost = len(line.encode("utf-8", "replace")) + 8  # number, tab, newline
        if out and cost > budget:
            more = True  # this line was read, and is counted in `seen`
            break
        budget -= cost
        out.append(line)
        if len(out) >= limit:
            more = bool(fh.peek(1))  # anything after the window, without reading it
            break
    total, exact = seen, True
    counted: int | None = None
    if more:
        rest, exact = _count_lines(fh, _COUNT_BYTES, stop)
        total += rest
        counted = None if exact else fh.tell()
    start = args.offset + 1
    end = args.offset + len(out)
    return ReadFileOutput(
        path=shown,
        content="\n".join(out),
        start_line=start if out else 0,
        end_line=end if out else 0,
        total_lines=total,
        total_exact=exact,
        size_bytes=None if exact else max(size, counted or 0),
        counted_bytes=counted,
        offset=args.offset,
        truncated=more,
        next_offset=end if more else None,
    )
