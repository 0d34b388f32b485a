"""The ripgrep engine: ``rg --json`` with flags that give :mod:`._ignore`'s rules.

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

import base64
import contextlib
import functools
import json
import os
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
from toolweave import ErrorKind, ToolError

from toolweave_search._fdwalk import Below
from toolweave_search._globs import GlobFilter
from toolweave_search._ignore import ignore_lines, parents, rebase_patterns
from toolweave_search._process import finish, json_lines, proc_fd
from toolweave_search._results import FileHits, GrepQuery, Line
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


def _text(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    if "text" in value:
        return str(value["text"])
    raw = value.get("bytes")
    if isinstance(raw, str):
        return base64.b64decode(raw).decode("utf-8", "replace")
    return ""


def _raise_for(code: int | None, errors: str) -> None:
    if code in (0, 1, None) or not errors.strip():
        return
    message = errors.strip().replace("\n", " ")
    if "regex" in message.lower():
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
        args = [rg, "--files", *_FLAGS, *extra]
        if start.parts:
            args += ["--", start.folder]
        process = await anyio.open_process(
            args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        files: list[str] = []
        finished = False
        try:
            async for line in json_lines(process):
                if line:
                    files.append(os.fsdecode(line))
            finished = True
        finally:
            code, errors = await finish(process, early=not finished)
    _raise_for(code, errors)
    return files


def _matching_flags(query: GrepQuery) -> list[str]:
    """The flags that decide what matches and which lines are shown."""
    args = ["--ignore-case"] if query.case_insensitive else []
    if query.mode == "content":
        args += [f"--before-context={query.before}", f"--after-context={query.after}"]
    return [*args, "--regexp", query.pattern]


async def _run_json(
    args: list[str],
    cwd: Path | None,
    pass_fds: tuple[int, ...],
    take: Callable[[FileHits], bool],
    *,
    lines: bool,
) -> tuple[bool, int | None, str]:
    """Run ``rg --json``; ``take`` receives each file with matches (not binary) and
    returns ``False`` to stop ripgrep early (``lines``: keep the lines, for ``content``
    mode). Returns whether it was stopped early, and
    ripgrep's exit code and error text."""
    process = await anyio.open_process(
        args,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=pass_fds,
    )
    current: FileHits | None = None
    early = False
    completed = False
    try:
        async for raw in json_lines(process):
            if not raw:
                continue
            event = json.loads(raw)
            kind = event.get("type")
            data = event.get("data", {})
            if kind == "begin":
                current = FileHits(_text(data.get("path")))
            elif kind in ("match", "context") and current is not None:
                if kind == "match":
                    current.count += 1
                if not lines:
                    continue
                text = _text(data.get("lines")).removesuffix("\n").rstrip("\r")
                current.lines.append(Line(int(data["line_number"]), text, kind == "match"))
            elif kind == "end" and current is not None:
                hits, current = current, None
                if data.get("binary_offset") is None and hits.count and not take(hits):
                    early = True
                    break
        completed = not early
    finally:
        code, errors = await finish(process, early=not completed)
    return early, code, errors


VERIFY_BATCH = 200
"""Files opened and handed to one verifying ripgrep run."""


async def _verified(
    rg: str, start: Start, query: GrepQuery, found: list[FileHits]
) -> list[FileHits]:
    """``found`` searched again in the files opened through descriptors.

    The first run walked by path: a folder swapped for a link to outside while it ran
    could have been searched. Each file it reported is opened here from the root's
    descriptor without following links (:class:`._fdwalk.Below`) and ripgrep searches
    the open files through ``/proc/self/fd``, so every name, count and line returned
    comes from a file inside the workspace.
    """
    out: dict[int, FileHits] = {}
    with Below(start.root_fd) as below:
        for first in range(0, len(found), VERIFY_BATCH):
            batch = found[first : first + VERIFY_BATCH]
            opened: dict[str, int] = {}
            try:
                for i, hits in enumerate(batch, first):
                    fd = os.dup(start.fd) if start.is_file else below.open_file(hits.path)
                    if fd is not None:
                        opened[proc_fd(fd)] = i
                if not opened:
                    continue
                fds = tuple(int(p.rsplit("/", 1)[1]) for p in opened)

                def take(hits: FileHits, opened: dict[str, int] = opened) -> bool:
                    i = opened.get(hits.path)
                    if i is not None:
                        hits.path = found[i].path
                        out[i] = hits
                    return True

                args = [rg, "--json", "--no-config", "--no-messages", *_matching_flags(query)]
                _, code, errors = await _run_json(
                    [*args, "--", *opened], None, fds, take, lines=query.mode == "content"
                )
                _raise_for(code, errors)
            finally:
                for path in opened:
                    os.close(int(path.rsplit("/", 1)[1]))
    return [out[i] for i in sorted(out)]


async def rg_grep(rg: str, root: Path, start: Start, query: GrepQuery) -> list[FileHits]:
    """Search with ripgrep; stops once more than ``query.limit`` entries are found.

    Two runs: the first walks the tree by path and finds the candidates, the second
    (:func:`_verified`) searches them again through descriptors; only its results count.
    """
    with _parent_rules(start) as extra:
        args = [rg, "--json", *_FLAGS, *extra]
        keep: GlobFilter | None = None
        if query.glob and not query.is_file:
            keep = GlobFilter(query.glob, anchored=False)
            if keep.basename_only:
                args += [f"--type-add=twglob:{query.glob.strip()}", "--type=twglob"]
                keep = None
        args += _matching_flags(query)
        if query.folder:
            args += ["--", query.folder]
        prefix = len(query.folder) + 1 if query.folder else 0
        found: list[FileHits] = []
        entries = 0

        def take(hits: FileHits) -> bool:
            nonlocal entries
            if keep is not None and not keep.matches(hits.path[prefix:]):
                return True
            found.append(hits)
            entries += len(hits.lines) if query.mode == "content" else 1
            return entries <= query.limit

        early, code, errors = await _run_json(args, root, (), take, lines=query.mode == "content")
    if not early:
        _raise_for(code, errors)
    return await _verified(rg, start, query, found)
