"""The pure-Python engine: the same files and matches as ripgrep, without ripgrep.

It runs in a worker process (:mod:`._pyrunner` starts it and kills it at the call's
deadline or when the call is cancelled): Python's ``re`` cannot be interrupted, and a
model chooses both the pattern and, through ``.gitignore`` files it writes, the
ignore rules, so a backtracking match must die with the call instead of running on.
This module therefore imports no toolweave and nothing it does not need.

It walks folders in the order ``rg --sort path`` does (entries sorted by name, folders
entered where they sort), applies the ``.gitignore`` rules of :mod:`._ignore`, skips
symbolic links and files holding a NUL byte (binary), and matches line by line with
Python's ``re``. Every folder is opened relative to its parent's descriptor and every
file relative to its folder's, without following links (:mod:`._fdwalk`): a folder
swapped for a link during the walk is skipped, never followed.

The request is one JSON object on standard input; the answer is JSON lines on standard
output: ``"path"`` per file (``list``), ``[path, count, lines]`` per matching file
(``grep``), or ``{"error": text}`` for an invalid pattern.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator

from toolweave_search._fdwalk import open_dir, read_fd, read_file
from toolweave_search._globs import GlobFilter
from toolweave_search._ignore import IgnoreStack
from toolweave_search._results import max_columns

TYPE_CHECKING = False  # typing itself is not imported: the worker starts faster
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_FILE_BYTES", "main", "walk"]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Larger files are skipped by this engine (it reads a file whole; ripgrep streams)."""


def _name_key(entry: os.DirEntry[str]) -> bytes:
    return os.fsencode(entry.name)


def _entries(fd: int) -> Iterator[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as it:
            return iter(sorted(it, key=_name_key))
    except OSError:
        return iter(())


def walk(start_fd: int, rel: str, ignores: IgnoreStack) -> Iterator[tuple[str, int, str]]:
    """``(path, folder descriptor, name)`` of each file a search of the folder open as
    ``start_fd`` (``rel`` below the root) visits, in ``rg --sort path`` order.

    The folder descriptor is open until the next file is produced; ``start_fd`` stays
    the caller's.
    """
    frames = [(start_fd, rel, ignores, _entries(start_fd))]
    try:
        while frames:
            fd, here, rules, entries = frames[-1]
            entry = next(entries, None)
            if entry is None:
                frames.pop()
                if fd != start_fd:
                    os.close(fd)
                continue
            if entry.name == ".git":
                continue
            child = f"{here}/{entry.name}" if here else entry.name
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if rules.ignored(child, True):
                        continue
                    inner = open_dir(entry.name, fd)
                    if inner is not None:  # None: a link now, or unreadable
                        frames.append((inner, child, rules.entering(inner, child), _entries(inner)))
                elif entry.is_file(follow_symlinks=False) and not rules.ignored(child, False):
                    yield child, fd, entry.name
            except OSError:
                continue
    finally:
        for fd, *_ in frames:
            if fd != start_fd:
                os.close(fd)


def _lines_of(text: str) -> list[str]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _text(data: bytes | None) -> str | None:
    if data is None or b"\x00" in data:
        return None
    return data.decode("utf-8", "replace")


def _hits(text: str, regex: re.Pattern[str], query: dict[str, Any]) -> list[Any] | None:
    """``[count, lines]`` of one file's matches (``lines``: ``[number, text, is_match]``
    in ``content`` mode, else empty), or ``None`` when nothing matches."""
    lines = _lines_of(text)
    matched = [i for i, line in enumerate(lines) if regex.search(line)]
    if not matched:
        return None
    if query["mode"] != "content":
        return [len(matched), []]
    is_match = set(matched)
    shown: list[int] = []
    last = -1
    for i in matched:
        first = max(i - query["before"], last + 1)
        end = min(i + query["after"], len(lines) - 1)
        shown.extend(range(first, end + 1))
        last = max(last, end)
    cap = max_columns(query["line_chars"])
    return [len(matched), [_shown(i + 1, lines[i], i in is_match, cap) for i in shown]]


def _shown(number: int, line: str, match: bool, cap: int) -> list[Any]:
    """``[number, text, is_match, cut]``: a line over ``cap`` bytes cut to its first
    ``cap`` characters, as ripgrep's ``--max-columns`` does."""
    line = line.rstrip("\r")
    if len(line) * 4 <= cap or len(line.encode("utf-8", "surrogateescape")) <= cap:
        return [number, line, match, False]
    return [number, line[:cap], match, True]


def grep(root_fd: int, start_fd: int, parts: list[str], query: dict[str, Any]) -> Iterator[Any]:
    """The answer lines of a ``grep`` request; stops after ``limit`` entries plus one."""
    try:
        regex = re.compile(query["pattern"], re.IGNORECASE if query["case_insensitive"] else 0)
    except re.error as exc:
        yield {"error": f"The pattern is not a valid regular expression: {exc}."}
        return
    whole = re.compile(regex.pattern, regex.flags | re.MULTILINE)
    folder = "/".join(parts)
    if query["is_file"]:
        text = _text(read_fd(start_fd, MAX_FILE_BYTES))
        found = None if text is None or not whole.search(text) else _hits(text, regex, query)
        if found is not None:
            yield [folder, *found]
        return
    keep = GlobFilter(query["glob"], anchored=False) if query["glob"] else None
    prefix = len(folder) + 1 if folder else 0
    entries = 0
    for rel, fd, name in files(root_fd, start_fd, parts):
        if keep is not None and not keep.matches(rel[prefix:]):
            continue
        text = _text(read_file(name, fd, MAX_FILE_BYTES))
        if text is None or not whole.search(text):
            continue
        found = _hits(text, regex, query)
        if found is None:
            continue
        yield [rel, *found]
        entries += len(found[1]) if query["mode"] == "content" else 1
        if entries > query["limit"]:
            return


def files(root_fd: int, start_fd: int, parts: list[str]) -> Iterator[tuple[str, int, str]]:
    """:func:`walk` from the folder open as ``start_fd`` (``parts`` below the root), its
    parents' ``.gitignore`` files read from the root down."""
    rel = "/".join(parts)
    stack = IgnoreStack.above(root_fd, tuple(parts)).entering(start_fd, rel)
    return walk(start_fd, rel, stack)


def main(request: dict[str, Any]) -> None:
    """Answer one request (see the module docstring) on standard output."""
    root_fd, start_fd, parts = request["root_fd"], request["start_fd"], request["parts"]
    out = sys.stdout
    if request["op"] == "list":
        for rel, _, _ in files(root_fd, start_fd, parts):
            out.write(json.dumps(rel) + "\n")
    else:
        for answer in grep(root_fd, start_fd, parts, request["query"]):
            out.write(json.dumps(answer) + "\n")
    out.flush()
