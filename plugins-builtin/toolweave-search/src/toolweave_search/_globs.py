"""Glob patterns, matched the same way whichever engine listed the files.

``*`` and ``?`` stay within one path segment, ``**`` spans segments, ``[abc]`` is a
character class and ``{a,b}`` lists alternatives (nestable).
"""

from __future__ import annotations

from pathspec import GitIgnoreSpec

from toolweave_search._ignore import IgnoreFile

__all__ = ["GlobFilter", "expand_braces", "literal_prefix"]

_META = frozenset("*?[{")


def expand_braces(pattern: str) -> list[str]:
    """Every alternative of ``pattern``'s ``{a,b}`` groups (``*.{ts,tsx}`` → two globs)."""
    depth = 0
    start = -1
    for i, char in enumerate(pattern):
        if char == "\\":
            continue
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                options = _split_top(pattern[start + 1 : i])
                if len(options) < 2:
                    continue
                head, tail = pattern[:start], pattern[i + 1 :]
                out: list[str] = []
                for option in options:
                    for expanded in expand_braces(head + option + tail):
                        if expanded not in out:
                            out.append(expanded)
                return out
    return [pattern]


def _split_top(inner: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current = ""
    for char in inner:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        current += char
    parts.append(current)
    return parts


def literal_prefix(pattern: str) -> str:
    """The leading folders of ``pattern`` that contain no wildcard (``src/app`` of
    ``src/app/**/*.py``), without the last segment."""
    segments = pattern.strip("/").split("/")[:-1]
    kept: list[str] = []
    for segment in segments:
        if segment in ("", ".", "..") or any(c in _META or c == "\\" for c in segment):
            break
        kept.append(segment)
    return "/".join(kept)


class GlobFilter:
    """Matches file paths (relative to a search folder) against a glob.

    Args:
        pattern: The glob.
        anchored: ``True``: the whole path must match (``*.py`` only at the top).
            ``False``: a pattern without ``/`` matches the file name at any depth.
    """

    __slots__ = ("_file", "basename_only", "pattern")

    def __init__(self, pattern: str, *, anchored: bool) -> None:
        self.pattern = pattern
        alternatives = expand_braces(pattern.strip())
        self.basename_only = not anchored and all("/" not in a for a in alternatives)
        lines: list[str] = []
        for alt in alternatives:
            if anchored or "/" in alt:
                alt = "/" + alt.lstrip("/")
            elif alt.startswith(("!", "#")):
                alt = "\\" + alt
            lines.append(alt)
        spec = GitIgnoreSpec.from_lines(lines)
        rules = tuple((p.regex, True) for p in spec.patterns if p.include and p.regex is not None)
        self._file = IgnoreFile("", rules)

    def matches(self, path: str) -> bool:
        """Whether the file at ``path`` (relative to the search folder) matches."""
        return self._file.decide(path, False) is True
