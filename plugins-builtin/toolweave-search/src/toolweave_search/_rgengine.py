"""The ripgrep engine: ``rg --json`` with flags that give :mod:`._ignore`'s rules.

``--no-ignore-parent`` keeps ripgrep from reading ignore files above the searched
folder; the ``.gitignore`` files between the workspace root and that folder are passed
instead, rewritten relative to the root (``--ignore-file``), so nothing above the
workspace applies. Only ``.gitignore`` counts (no ``.ignore``, ``.rgignore``, global
or ``.git/info/exclude`` rules); hidden files are searched, ``.git`` is skipped.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sysconfig
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from toolweave import ErrorKind, ToolError

from toolweave_search._globs import GlobFilter
from toolweave_search._ignore import rebase_patterns
from toolweave_search._results import FileHits, GrepQuery, Line

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
def _parent_rules(root: Path, start: Path) -> Iterator[list[str]]:
    """``--ignore-file`` arguments for the ``.gitignore`` files above ``start``."""
    if start == root or not start.is_dir():
        yield []
        return
    lines: list[str] = []
    parts = start.relative_to(root).parts
    folder = root
    lines.extend(rebase_patterns(folder, ""))
    for i in range(len(parts) - 1):
        folder = folder / parts[i]
        lines.extend(rebase_patterns(folder, "/".join(parts[: i + 1])))
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


async def _json_lines(process: anyio.abc.Process) -> AsyncIterator[bytes]:
    assert process.stdout is not None
    pending = b""
    async for chunk in process.stdout:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line
    if pending:
        yield pending


_STOP = getattr(signal, "SIGKILL", signal.SIGTERM)


async def _finish(process: anyio.abc.Process, early: bool) -> tuple[int | None, str]:
    """Stop (when ``early``) and reap ripgrep; returns its exit code and error text.

    The event loop's child watcher is the only one that reaps: the signal goes out with
    ``os.kill``, because ``process.kill()`` polls the process first and, when ripgrep has
    just exited, reaps it behind the watcher's back ("Unknown child process pid").
    """
    with anyio.CancelScope(shield=True):
        if early and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, _STOP)
        errors = b""
        if process.stderr is not None:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                errors = await process.stderr.receive(65536)
        await process.wait()
        await process.aclose()
    return process.returncode, errors.decode("utf-8", "replace")


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


async def rg_files(rg: str, root: Path, start: Path) -> list[str]:
    """Files under the folder ``start`` that a search visits, relative to ``root``."""
    with _parent_rules(root, start) as extra:
        args = [rg, "--files", *_FLAGS, *extra]
        if start != root:
            args += ["--", start.relative_to(root).as_posix()]
        process = await anyio.open_process(
            args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        files: list[str] = []
        finished = False
        try:
            async for line in _json_lines(process):
                if line:
                    files.append(os.fsdecode(line))
            finished = True
        finally:
            code, errors = await _finish(process, early=not finished)
    _raise_for(code, errors)
    return files


async def rg_grep(rg: str, root: Path, query: GrepQuery) -> list[FileHits]:
    """Search with ripgrep; stops once more than ``query.limit`` entries are found."""
    start = root / query.folder if query.folder else root
    with _parent_rules(root, start) as extra:
        args = [rg, "--json", *_FLAGS, *extra]
        keep: GlobFilter | None = None
        if query.glob and not query.is_file:
            keep = GlobFilter(query.glob, anchored=False)
            if keep.basename_only:
                args += [f"--type-add=twglob:{query.glob.strip()}", "--type=twglob"]
                keep = None
        if query.case_insensitive:
            args.append("--ignore-case")
        if query.mode == "content":
            args += [f"--before-context={query.before}", f"--after-context={query.after}"]
        args += ["--regexp", query.pattern]
        if query.folder:
            args += ["--", query.folder]
        process = await anyio.open_process(
            args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        prefix = len(query.folder) + 1 if query.folder else 0
        found: list[FileHits] = []
        entries = 0
        current: FileHits | None = None
        early = False
        completed = False
        try:
            async for raw in _json_lines(process):
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
                    if query.mode == "content":
                        text = _text(data.get("lines")).removesuffix("\n").rstrip("\r")
                        current.lines.append(Line(int(data["line_number"]), text, kind == "match"))
                elif kind == "end" and current is not None:
                    hits, current = current, None
                    if data.get("binary_offset") is not None or not hits.count:
                        continue
                    if keep is not None and not keep.matches(hits.path[prefix:]):
                        continue
                    found.append(hits)
                    entries += len(hits.lines) if query.mode == "content" else 1
                    if entries > query.limit:
                        early = True
                        break
            completed = not early
        finally:
            code, errors = await _finish(process, early=not completed)
    if not early:
        _raise_for(code, errors)
    return found
