"""The ripgrep engine: ``rg`` with flags that give :mod:`._ignore`'s rules.

``--no-ignore-parent`` keeps ripgrep from reading ignore files above the searched
folder; the ``.gitignore`` files between the workspace root and that folder are passed
instead, rewritten relative to the root (``--ignore-file``), so nothing above the
workspace applies. Only ``.gitignore`` counts (no ``.ignore``, ``.rgignore``, global
or ``.git/info/exclude`` rules); hidden files are searched, ``.git`` is skipped.

ripgrep walks the tree by path (``rg`` runs in the workspace root and opens what is
below by name), so a folder swapped for a link to outside while it runs can be
searched. Its results are therefore only candidates: :func:`rg_grep` searches them
again in files opened through descriptors, and the ``glob`` tool keeps only the names
it finds inside the same way. See the pack README for what remains.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
from toolweave import ErrorKind, ToolError

from toolweave_search._fdwalk import Below
from toolweave_search._globs import GlobFilter, ripgrep_glob
from toolweave_search._ignore import ignore_lines, parents, rebase_patterns
from toolweave_search._process import finish, json_lines, proc_fd
from toolweave_search._results import FileHits, GrepQuery, Line, max_columns
from toolweave_search._start import Start

__all__ = ["find_ripgrep", "rg_files", "rg_grep"]

_FLAGS = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-parent",
    "--no-ignore-dot",
    "--no-ignore-global",
    "--no-ignore-exclude",
    "--no-messages",
    "--glob=!.git",
    "--sort=path",
)


@functools.cache
def find_ripgrep() -> str | None:
    """The ``rg`` program: the one installed beside this Python (the ``ripgrep``
    wheel), else the first on ``PATH``; ``None`` when there is none."""
    name = "rg.exe" if os.name == "nt" else "rg"
    scripts = sysconfig.get_path("scripts")
    if scripts:
        beside = Path(scripts) / name
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    return shutil.which("rg")


@contextlib.contextmanager
def _parent_rules(start: Start) -> Iterator[list[str]]:
    """``--ignore-file`` arguments for the ``.gitignore`` files above the start, read
    relative to descriptors from the root down."""
    if not start.parts or start.is_file:
        yield []
        return
    lines: list[str] = []
    for base, fd in parents(start.root_fd, start.parts):
        lines.extend(rebase_patterns(ignore_lines(fd), base))
    if not lines:
        yield []
        return
    fd, name = tempfile.mkstemp(prefix="toolweave-rg-", suffix=".ignore")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        yield [f"--ignore-file={name}"]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _raise_for(code: int | None, errors: str) -> None:
    if code in (0, 1, None) or not errors.strip():
        return
    message = errors.strip().replace("\n", " ")
    said = message.removeprefix("rg: ").lower()
    if said.startswith("error parsing glob"):  # checked first: it quotes the glob, which
        # may hold the word "regex"; check_glob refuses these before ripgrep runs
        raise ToolError(ErrorKind.INVALID_PARAMS, f"The glob is not valid: {message[:500]}")
    if "regex" in said:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"The pattern is not a valid regular expression: {message[:500]}",
        )
    raise ToolError(ErrorKind.EXECUTION_ERROR, f"ripgrep failed: {message[:500]}")


async def rg_files(rg: str, root: Path, start: Start) -> list[str]:
    """Files under the folder ``start`` that ripgrep lists, relative to ``root``.

    Unverified: ripgrep walks by path, and a folder swapped for a link while it runs
    can list names from outside. The caller keeps only the names it then finds inside
    through descriptors (:class:`._fdwalk.Below`).
    """
    with _parent_rules(start) as extra:
        args = [rg, "--files", "--null", *_FLAGS, *extra]  # a name may hold a newline
        if start.parts:
            args += ["--", start.folder]
        process = await anyio.open_process(
            args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        files: list[str] = []
        finished = False
        try:
            async for name in json_lines(process, b"\0"):
                if name:
                    files.append(os.fsdecode(name))
            finished = True
        finally:
            code, errors = await finish(process, early=not finished)
    _raise_for(code, errors)
    return files


_PLAIN = ("--null", "--no-heading", "--with-filename", "--color=never")
"""Plain output, each path followed by a NUL (no name holds one): no ``--json``, whose
events list every match of a line (gigabytes for one long line full of matches)."""

_CUT = re.compile(rb" \[\.\.\. (?:omitted end of long line|\d+ more match(?:es)?)\]\Z")
"""What ``--max-columns-preview`` puts after the start it keeps of a long line."""

_LINE = re.compile(rb"(\d+)([:-])")
"""A line number and ``:`` (a match) or ``-`` (context) before the line's text."""


def _matching_flags(query: GrepQuery, *, listing: bool) -> list[str]:
    """The flags that decide what matches and what is printed: the paths of matching
    files (``listing``, and mode ``files_with_matches``; ripgrep stops reading a file at
    its first match), the count of matching lines per file (``count``), or the lines
    with their context (``content``: at most ``limit + 1`` matches per file, long lines
    cut at :func:`._results.max_columns`)."""
    args = [*_PLAIN, "--ignore-case"] if query.case_insensitive else [*_PLAIN]
    if listing or query.mode == "files_with_matches":
        args.append("--files-with-matches")
    elif query.mode == "count":
        args.append("--count")
    else:
        args += [
            "--line-number",
            f"--before-context={query.before}",
            f"--after-context={query.after}",
            f"--max-count={query.limit + 1}",
            f"--max-columns={max_columns(query.line_chars)}",
            "--max-columns-preview",
        ]
    return [*args, "--regexp", query.pattern]


def _content_line(rest: bytes, limit: int) -> Line | None:
    """One line of ``content`` output after its path and NUL, or ``None``."""
    head = _LINE.match(rest)
    if head is None:
        return None
    text = rest[head.end() :]
    cut = len(text) > limit and _CUT.search(text)
    if cut:
        text = text[: cut.start()]
    shown = text.decode("utf-8", "replace").rstrip("\r")
    return Line(int(head[1]), shown, head[2] == b":", bool(cut))


async def _run_plain(
    args: list[str],
    cwd: Path | None,
    pass_fds: tuple[int, ...],
    take: Callable[[FileHits], bool],
    query: GrepQuery,
    *,
    listing: bool,
) -> tuple[bool, int | None, str]:
    """Run ripgrep with :func:`_matching_flags`; ``take`` receives each file with
    matches and returns ``False`` to stop ripgrep early. Returns whether it was stopped
    early, and ripgrep's exit code and error text."""
    process = await anyio.open_process(
        args,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=pass_fds,
    )
    listing = listing or query.mode == "files_with_matches"
    # Listing: each path ends with a NUL (a name may hold a newline). Otherwise ripgrep
    # prints lines of "path NUL count" or "path NUL number:text", read line by line:
    # those runs are only given /proc/self/fd/N paths (:func:`_verified`), never a name
    # with a newline.
    limit = max_columns(query.line_chars)
    current: FileHits | None = None
    early = False
    completed = False
    try:
        async for raw in json_lines(process, b"\0" if listing else b"\n"):
            if listing:  # path NUL path NUL ...
                if raw and not take(FileHits(os.fsdecode(raw), 1)):
                    early = True
                    break
                continue
            name, nul, rest = raw.partition(b"\0")
            if not nul:
                continue  # "--" between groups of context
            path = os.fsdecode(name)
            if query.mode == "count":
                if not take(FileHits(path, int(rest))):
                    early = True
                    break
                continue
            if current is not None and current.path != path:
                hits, current = current, None
                if not take(hits):
                    early = True
                    break
            line = _content_line(rest, limit)
            if line is not None:
                current = current or FileHits(path)
                current.count += line.match
                current.lines.append(line)
        else:
            if current is not None and current.count and not take(current):
                early = True
        completed = not early
    finally:
        code, errors = await finish(process, early=not completed)
    return early, code, errors


VERIFY_BATCH = 200
"""Files opened and handed to one verifying ripgrep run."""

_CHUNK = 1 << 20
"""Bytes read at a time when looking for a NUL."""


def _binary(fd: int) -> bool:
    """Whether the open file holds a NUL byte anywhere (binary: never searched, as the
    Python engine and ripgrep's walk decide; ripgrep searches a file it is given by
    name even then)."""
    offset = 0
    while chunk := os.pread(fd, _CHUNK, offset):
        if b"\0" in chunk:
            return True
        offset += len(chunk)
    return False


async def _verified(
    rg: str, start: Start, query: GrepQuery, found: list[FileHits]
) -> list[FileHits]:
    """``found`` searched again in the files opened through descriptors.

    The first run walked by path: a folder swapped for a link to outside while it ran
    could have been searched. Each file it reported is opened here from the root's
    descriptor without following links (:class:`._fdwalk.Below`), files holding a NUL
    are left out, and ripgrep searches the others through ``/proc/self/fd``, so every
    name, count and line returned comes from a file inside the workspace. In
    ``content`` mode no further batch is searched once more than ``query.limit`` lines
    are found.
    """
    out: dict[int, FileHits] = {}
    entries = 0
    with Below(start.root_fd) as below:
        for first in range(0, len(found), VERIFY_BATCH):
            if entries > query.limit:
                break
            batch = found[first : first + VERIFY_BATCH]
            opened: dict[str, int] = {}
            try:
                for i, hits in enumerate(batch, first):
                    fd = os.dup(start.fd) if start.is_file else below.open_file(hits.path)
                    if fd is not None:
                        opened[proc_fd(fd)] = i
                readable = await anyio.to_thread.run_sync(_texts, list(opened))
                if not readable:
                    continue

                def take(hits: FileHits, opened: dict[str, int] = opened) -> bool:
                    nonlocal entries
                    i = opened.get(hits.path)
                    if i is not None:
                        hits.path = found[i].path
                        out[i] = hits
                        entries += len(hits.lines) if query.mode == "content" else 1
                    return True

                flags = _matching_flags(query, listing=False)
                args = [rg, "--no-config", "--no-messages", "--sort=path", *flags]
                fds = tuple(_fd(p) for p in readable)
                _, code, errors = await _run_plain(
                    [*args, "--", *readable], None, fds, take, query, listing=False
                )
                _raise_for(code, errors)
            finally:
                for path in opened:
                    os.close(_fd(path))
    return [out[i] for i in sorted(out)]


def _fd(path: str) -> int:
    """The descriptor a :func:`proc_fd` path names."""
    return int(path.rsplit("/", 1)[1])


def _texts(paths: list[str]) -> list[str]:
    """The :func:`proc_fd` paths of files holding no NUL."""
    return [p for p in paths if not _binary(_fd(p))]


async def rg_grep(rg: str, root: Path, start: Start, query: GrepQuery) -> list[FileHits]:
    """Search with ripgrep; stops once more than ``query.limit`` entries are found.

    Two runs: the first walks the tree by path and lists the files with a match (cheap:
    ripgrep stops reading a file at its first match), the second (:func:`_verified`)
    searches them again through descriptors for what the mode reports; only its results
    count. Every file lists at least one entry, so the first run stops after
    ``query.limit + 1`` files.
    """
    with _parent_rules(start) as extra:
        args = [rg, *_FLAGS, *extra]
        keep: GlobFilter | None = None
        if query.glob and not query.is_file:
            keep = GlobFilter(query.glob, anchored=False)
            # A glob of file names goes to ripgrep as a file type (which only narrows:
            # --glob would bring back ignored files), one definition per alternative,
            # so ripgrep matches what the Python engine matches (its {a,b} groups nest,
            # ripgrep's do not). Else the names ripgrep lists are filtered here.
            names = [ripgrep_glob(alt) for alt in keep.alternatives]
            if keep.basename_only and None not in names:
                args += [f"--type-add=twglob:{name}" for name in names]
                args.append("--type=twglob")
                keep = None
        args += _matching_flags(query, listing=True)
        if query.folder:
            args += ["--", query.folder]
        prefix = len(query.folder) + 1 if query.folder else 0
        found: list[FileHits] = []

        def take(hits: FileHits) -> bool:
            if keep is not None and not keep.matches(hits.path[prefix:]):
                return True
            found.append(hits)
            return len(found) <= query.limit

        early, code, errors = await _run_plain(args, root, (), take, query, listing=True)
    if not early:
        _raise_for(code, errors)
    return await _verified(rg, start, query, found)
