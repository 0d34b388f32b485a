"""Path patterns of permission rules, matched against resolved locations.

A pattern follows ``.gitignore``: one without a ``/`` (``*.md``, ``.env``) matches a
name at any depth; one with a ``/`` is anchored at the workspace root (``src/**``,
``docs/*.md``) or, when it starts with ``/``, at the file-system root. ``*`` and ``?``
never cross a ``/``; ``**`` does. A path is compared only after it has been resolved
(``..`` and every symbolic link followed, as :meth:`Workspace.resolve
<toolweave.Workspace.resolve>` does), and so is the literal part of a pattern: never
by string prefix.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import final

from toolweave._confined import real_path

__all__ = ["Located", "PathPattern", "escape", "glob_chars", "locate"]

_GLOB = re.compile(r"[*?\[]")


def glob_chars(text: str) -> bool:
    """Whether ``text`` holds a glob character (``*``, ``?``, ``[``)."""
    return _GLOB.search(text) is not None


def _translate(glob: str) -> str:
    """The regular expression of a glob over ``/``-separated paths."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:[^/]+/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\").replace("/", "") + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@final
@dataclass(frozen=True, slots=True)
class Located:
    """Where a path a tool was given leads.

    Attributes:
        real: The location with ``..`` and every symbolic link resolved.
        lexical: The location with ``..`` folded by text only (links not followed).
    """

    real: str
    lexical: str


def locate(path: str, base: str) -> Located | None:
    """Resolve ``path`` (relative to ``base``, or absolute); ``None`` when it cannot
    be a path (a NUL byte, not text) or cannot be resolved (a loop of links)."""
    if not isinstance(path, str) or "\0" in path:
        return None
    joined = os.path.join(base, path)
    try:
        real = real_path(joined)
    except (OSError, ValueError):
        return None
    return None if real is None else Located(real, os.path.normpath(joined))


def _inside(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` (``""`` for ``base`` itself), or ``None``."""
    if path == base:
        return ""
    prefix = base.rstrip(os.sep) + os.sep
    if path.startswith(prefix):
        return path[len(prefix) :]
    return None


@final
class PathPattern:
    """A compiled path pattern (see the module's docstring).

    Attributes:
        text: The pattern as written.
    """

    __slots__ = ("_anchor", "_directory", "_regex", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        pattern = text
        self._directory = pattern.endswith("/") and len(pattern) > 1
        """``src/``: the directory and everything in it."""
        pattern = pattern.rstrip("/") or "/"
        self._anchor: str | None = None
        """The literal leading part (``src``, ``/etc``), resolved per workspace;
        ``None`` for a pattern that matches a name at any depth."""
        if "/" not in pattern:
            self._regex = re.compile("(?:.*/)?" + _translate(pattern))
            return
        parts = pattern.split("/")
        literal: list[str] = []
        for part in parts:
            if glob_chars(part):
                break
            literal.append(part)
        rest = parts[len(literal) :]
        anchor = "/".join(literal)
        if pattern.startswith("/"):
            anchor = anchor or "/"
        self._anchor = anchor
        self._regex = re.compile(_translate("/".join(rest))) if rest else re.compile("")

    def __repr__(self) -> str:
        return f"PathPattern({self.text!r})"

    def _base(self, root: str) -> str:
        assert self._anchor is not None
        return os.path.realpath(os.path.join(root, self._anchor))

    def matches(self, path: str, root: str, *, anywhere: bool = False) -> bool:
        """Whether the location ``path`` (absolute, already resolved or folded)
        matches, with relative patterns anchored at the workspace ``root``. A pattern
        without ``/`` matches names inside the root, and with ``anywhere`` outside too."""
        if self._anchor is None:
            rel = _inside(path, root)
            if rel is None:
                if not anywhere:
                    return False
                rel = path.lstrip("/")
            return bool(rel) and self._regex.fullmatch(rel) is not None
        rel = _inside(path, self._base(root))
        if rel is None:
            return False
        if self._regex.pattern == "":
            return rel == "" or self._directory
        return bool(rel) and self._regex.fullmatch(rel) is not None

    def allows(self, where: Located, root: str) -> bool:
        """For an ``allow`` rule: the resolved location matches (where the tool acts)."""
        return self.matches(where.real, root)

    def hits(self, where: Located, root: str) -> bool:
        """For ``deny`` and ``ask`` rules: the resolved location or the path as it was
        spelled matches (a link named like a secret counts as one)."""
        return self.matches(where.real, root, anywhere=True) or self.matches(
            where.lexical, root, anywhere=True
        )


def escape(path: str) -> str:
    """``path`` as a pattern that matches only itself (glob characters bracketed)."""
    return _GLOB.sub(lambda m: f"[{m.group(0)}]", path)
