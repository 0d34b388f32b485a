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

import re
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = ["IGNORE_FILE", "IgnoreFile", "IgnoreStack", "read_ignore_file", "rebase_patterns"]

IGNORE_FILE = ".gitignore"


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The patterns of one ``.gitignore`` file.

    Attributes:
        base: The folder holding it, relative to the workspace root (``""``: the root).
        rules: ``(regex, ignore)`` per pattern, in file order; ``ignore`` is ``False``
            for ``!`` patterns.
    """

    base: str
    rules: tuple[tuple[re.Pattern[str], bool], ...]

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


def read_ignore_file(folder: Path, base: str) -> IgnoreFile | None:
    """The ``.gitignore`` of ``folder`` (``None`` when it has none or cannot be read)."""
    lines = _read_lines(folder / IGNORE_FILE)
    if not lines:
        return None
    spec = GitIgnoreSpec.from_lines(lines)
    rules = tuple(
        (p.regex, bool(p.include))
        for p in spec.patterns
        if p.include is not None and isinstance(p.regex, re.Pattern)
    )
    return IgnoreFile(base, rules) if rules else None


def _read_lines(path: Path) -> list[str]:
    try:
        if not path.is_file() or path.is_symlink():
            return []
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


class IgnoreStack:
    """The ``.gitignore`` files in force at one folder, shallowest first."""

    __slots__ = ("files",)

    def __init__(self, files: tuple[IgnoreFile, ...] = ()) -> None:
        self.files = files

    def entering(self, folder: Path, base: str) -> IgnoreStack:
        """The stack inside ``folder`` (whose path relative to the root is ``base``)."""
        found = read_ignore_file(folder, base)
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
    def above(cls, root: Path, folder: Path) -> IgnoreStack:
        """The stack of ``folder``'s parents from ``root`` down (not ``folder`` itself)."""
        stack = cls()
        if folder == root:
            return stack
        parts = folder.relative_to(root).parts
        current = root
        stack = stack.entering(current, "")
        for i in range(len(parts) - 1):
            current = current / parts[i]
            stack = stack.entering(current, "/".join(parts[: i + 1]))
        return stack


_GLOB_SPECIAL = re.compile(r"([*?\[\]\\!#])")


def rebase_patterns(folder: Path, base: str) -> list[str]:
    """The patterns of ``folder/.gitignore`` rewritten relative to the workspace root.

    ``build/`` in ``src/.gitignore`` becomes ``/src/**/build/``, ``/out`` becomes
    ``/src/out``, so one ignore file read from the root means the same thing.
    """
    lines = _read_lines(folder / IGNORE_FILE)
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
