"""``.gitignore`` rules, as both search engines apply them.

The rules: ``.gitignore`` files in the searched folder and below apply to their own
subtree; those of its parent folders up to the workspace root apply too, and none
above the root. For each file or folder the deepest ``.gitignore`` with a matching
pattern decides (within one file, the last matching pattern wins; ``!`` re-includes).
A pattern matches a path itself, never the contents of a matching folder: ignored
folders are simply not entered, so a folder searched explicitly is searched even when
it is ignored. ``.git`` folders are always skipped; hidden files are searched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from toolweave_search._fdwalk import open_dir, read_file

__all__ = [
    "IGNORE_FILE",
    "IgnoreFile",
    "IgnoreStack",
    "ignore_lines",
    "read_ignore_file",
    "rebase_patterns",
]

IGNORE_FILE = ".gitignore"

MAX_IGNORE_BYTES = 1024 * 1024
"""A longer ``.gitignore`` is read only this far."""


class IgnoreFile:
    """The patterns of one ``.gitignore`` file.

    Attributes:
        base: The folder holding it, relative to the workspace root (``""``: the root).
        rules: ``(regex, ignore)`` per pattern, in file order; ``ignore`` is ``False``
            for ``!`` patterns.
    """

    __slots__ = ("base", "rules")

    def __init__(self, base: str, rules: tuple[tuple[re.Pattern[str], bool], ...]) -> None:
        self.base = base
        self.rules = rules

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """``True`` (ignored), ``False`` (re-included) or ``None`` (no pattern matches).

        Args:
            path: Relative to :attr:`base`, with ``/`` separators.
            is_dir: Whether the path is a folder (patterns ending in ``/`` need one).
        """
        candidate = path + "/" if is_dir else path
        verdict: bool | None = None
        for regex, ignore in self.rules:
            match = regex.match(candidate)
            if match is None:
                continue
            if (
                match.end() < len(candidate)
                and "ps_d" in regex.groupindex
                and match.group("ps_d") is not None
            ):
                continue  # matched a parent folder of the path, not the path itself
            verdict = ignore
        return verdict


def ignore_lines(dir_fd: int) -> list[str]:
    """The lines of the ``.gitignore`` in the folder open as ``dir_fd`` (none when it
    has none, it is a link or it cannot be read); read relative to the descriptor."""
    data = read_file(IGNORE_FILE, dir_fd, MAX_IGNORE_BYTES)
    return [] if data is None else data.decode("utf-8", "replace").splitlines()


def read_ignore_file(dir_fd: int, base: str) -> IgnoreFile | None:
    """The ``.gitignore`` of the folder open as ``dir_fd`` (``None``: none or empty).

    pathspec is imported here, only when a folder has one: the Python engine's worker
    process then starts without it when a tree has no ``.gitignore``.
    """
    lines = ignore_lines(dir_fd)
    if not lines:
        return None
    from pathspec import GitIgnoreSpec

    spec = GitIgnoreSpec.from_lines(lines)
    rules = tuple(
        (p.regex, bool(p.include))
        for p in spec.patterns
        if p.include is not None and isinstance(p.regex, re.Pattern)
    )
    return IgnoreFile(base, rules) if rules else None


class IgnoreStack:
    """The ``.gitignore`` files in force at one folder, shallowest first."""

    __slots__ = ("files",)

    def __init__(self, files: tuple[IgnoreFile, ...] = ()) -> None:
        self.files = files

    def entering(self, dir_fd: int, base: str) -> IgnoreStack:
        """The stack inside the folder open as ``dir_fd`` (``base`` below the root)."""
        found = read_ignore_file(dir_fd, base)
        return self if found is None else IgnoreStack((*self.files, found))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (relative to the workspace root) is ignored."""
        for file in reversed(self.files):
            if file.base:
                if not path.startswith(file.base + "/"):
                    continue
                inner = path[len(file.base) + 1 :]
            else:
                inner = path
            verdict = file.decide(inner, is_dir)
            if verdict is not None:
                return verdict
        return False

    @classmethod
    def above(cls, root_fd: int, parts: tuple[str, ...]) -> IgnoreStack:
        """The stack of the folder ``parts`` below the root (open as ``root_fd``): its
        parents' files from the root down, not its own. Each parent is opened relative
        to the one before without following links; when one cannot be (swapped for a
        link meanwhile), the files above it are all that apply."""
        stack = cls()
        for base, fd in parents(root_fd, parts):
            stack = stack.entering(fd, base)
        return stack


def parents(root_fd: int, parts: tuple[str, ...]) -> Iterator[tuple[str, int]]:
    """``(base, descriptor)`` of each parent of ``parts`` from the root down (the root's
    base is ``""``); each descriptor is open only until the next one is produced."""
    if not parts:
        return
    yield "", root_fd
    here = root_fd
    try:
        for i in range(len(parts) - 1):
            fd = open_dir(parts[i], here)
            if fd is None:
                return
            if here != root_fd:
                os.close(here)
            here = fd
            yield "/".join(parts[: i + 1]), here
    finally:
        if here != root_fd:
            os.close(here)


_GLOB_SPECIAL = re.compile(r"([*?\[\]\\!#])")


def rebase_patterns(lines: list[str], base: str) -> list[str]:
    """The patterns of the ``.gitignore`` in ``base`` rewritten relative to the
    workspace root.

    ``build/`` in ``src/.gitignore`` becomes ``/src/**/build/``, ``/out`` becomes
    ``/src/out``, so one ignore file read from the root means the same thing.
    """
    if not base:
        return lines
    prefix = "/" + _GLOB_SPECIAL.sub(r"\\\1", base) + "/"
    out: list[str] = []
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        negate = line.startswith("!")
        body = line[1:] if negate else line
        dir_only = body.endswith("/")
        core = body.rstrip("/")
        if not core:
            continue
        anchored = "/" in core
        rebased = prefix + (core.lstrip("/") if anchored else "**/" + core)
        out.append(("!" if negate else "") + rebased + ("/" if dir_only else ""))
    return out
