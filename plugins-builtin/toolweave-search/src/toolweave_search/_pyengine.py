"""The pure-Python engine: the same files and matches as ripgrep, without ripgrep.

It walks folders in the order ``rg --sort path`` does (entries sorted by name, folders
entered where they sort), applies the ``.gitignore`` rules of :mod:`._ignore`, skips
symbolic links and files holding a NUL byte (binary), and matches line by line with
Python's ``re`` (whose syntax agrees with ripgrep's for everyday patterns).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

from toolweave import ErrorKind, ToolError

from toolweave_search._globs import GlobFilter
from toolweave_search._ignore import IgnoreStack
from toolweave_search._results import FileHits, GrepQuery, Line

__all__ = ["python_files", "python_grep"]


def _name_key(entry: os.DirEntry[str]) -> bytes:
    return os.fsencode(entry.name)


def _walk(
    folder: Path, rel: str, stack: IgnoreStack, stop: threading.Event | None
) -> Iterator[str]:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=_name_key)
    except OSError:
        return
    for entry in entries:
        if stop is not None and stop.is_set():
            return
        if entry.name == ".git":
            continue
        child = f"{rel}/{entry.name}" if rel else entry.name
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if stack.ignored(child, True):
                    continue
                inner = Path(entry.path)
                yield from _walk(inner, child, stack.entering(inner, child), stop)
            elif entry.is_file(follow_symlinks=False) and not stack.ignored(child, False):
                yield child
        except OSError:
            continue


def python_files(root: Path, start: Path, stop: threading.Event | None = None) -> Iterator[str]:
    """Files under the folder ``start`` that a search visits, relative to ``root``."""
    rel = "" if start == root else start.relative_to(root).as_posix()
    stack = IgnoreStack.above(root, start).entering(start, rel)
    yield from _walk(start, rel, stack, stop)


def compile_pattern(pattern: str, case_insensitive: bool) -> re.Pattern[str]:
    """The pattern as a Python regular expression.

    Raises:
        ToolError: ``invalid_params`` naming the syntax error.
    """
    try:
        return re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error as exc:
        raise ToolError(
            ErrorKind.INVALID_PARAMS, f"The pattern is not a valid regular expression: {exc}."
        ) from exc


MAX_FILE_BYTES = 64 * 1024 * 1024
"""Larger files are skipped by this engine (it reads a file whole; ripgrep streams)."""


def _read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data:
        return None
    return data.decode("utf-8", "replace")


def _lines_of(text: str) -> list[str]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _hits(rel: str, text: str, regex: re.Pattern[str], query: GrepQuery) -> FileHits | None:
    lines = _lines_of(text)
    matched = [i for i, line in enumerate(lines) if regex.search(line)]
    if not matched:
        return None
    hits = FileHits(rel, count=len(matched))
    if query.mode != "content":
        return hits
    is_match = set(matched)
    shown: list[int] = []
    last = -1
    for i in matched:
        first = max(i - query.before, last + 1)
        end = min(i + query.after, len(lines) - 1)
        shown.extend(range(first, end + 1))
        last = max(last, end)
    hits.lines = [Line(i + 1, lines[i].rstrip("\r"), i in is_match) for i in shown]
    return hits


def _entries(hits: FileHits, mode: str) -> int:
    return len(hits.lines) if mode == "content" else 1


def python_grep(
    root: Path, query: GrepQuery, stop: threading.Event | None = None
) -> list[FileHits]:
    """Search like ripgrep would; stops once more than ``query.limit`` entries are found."""
    regex = compile_pattern(query.pattern, query.case_insensitive)
    whole = re.compile(regex.pattern, regex.flags | re.MULTILINE)
    start = root / query.folder if query.folder else root
    if query.is_file:
        candidates: Iterator[str] = iter([query.folder])
        keep = None
    else:
        candidates = python_files(root, start, stop)
        keep = GlobFilter(query.glob, anchored=False) if query.glob else None
    prefix = len(query.folder) + 1 if query.folder else 0
    found: list[FileHits] = []
    entries = 0
    for rel in candidates:
        if stop is not None and stop.is_set():
            break
        if keep is not None and not keep.matches(rel[prefix:]):
            continue
        text = _read_text(root / rel)
        if text is None or not whole.search(text):
            continue
        hits = _hits(rel, text, regex, query)
        if hits is None:
            continue
        found.append(hits)
        entries += _entries(hits, query.mode)
        if entries > query.limit:
            break
    return found
