"""Glob patterns, matched the same way whichever engine listed the files.

``*`` and ``?`` stay within one path segment, ``**`` spans segments, ``[abc]`` is a
character class and ``{a,b}`` lists alternatives (nestable).

A glob must be well formed, by the same rules whichever engine runs
(:func:`check_glob`): ripgrep refuses a malformed one, and Python's :mod:`fnmatch`
would quietly read it as literal text. Every ``[`` closes with ``]`` in the same path
segment, ranges go upwards, every ``{`` closes with ``}``, and a ``\\`` escapes the
next character, so it is neither last nor inside ``[...]`` (where ripgrep reads it as
itself and this module as an escape).

A model writes these patterns, so what one can cost is bounded: a pattern is at most
:data:`MAX_PATTERN_CHARS` long and expands to at most :data:`MAX_ALTERNATIVES` brace
alternatives (counted before anything is expanded), and matching never backtracks
more than one segment at a time. Each segment compiles to a regular expression whose
``*`` runs are atomic (as :func:`fnmatch.translate` writes them), and ``**`` is matched
segment by segment over the set of positions reachable so far, so one path costs at
most (pattern segments × path segments) segment matches.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable

TYPE_CHECKING = False  # not from typing: the Python engine's worker starts faster
if TYPE_CHECKING:
    from toolweave import ToolError

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_EXPANDED_CHARS",
    "MAX_PATTERN_CHARS",
    "GlobFilter",
    "check_glob",
    "expand_braces",
    "literal_prefix",
    "ripgrep_glob",
    "syntax_problem",
]

_META = frozenset("*?[{")

MAX_PATTERN_CHARS = 1_000
"""The longest glob accepted, in characters."""

MAX_ALTERNATIVES = 256
"""The most alternatives the ``{a,b}`` groups of one glob may expand to."""

MAX_EXPANDED_CHARS = 16_384
"""The most characters all alternatives of one glob may hold together (about)."""


def check_glob(pattern: str, field: str) -> None:
    """Refuse a glob that holds a NUL, is too long, is malformed (:func:`syntax_problem`,
    in itself or in one of its alternatives) or expands to too many alternatives.

    Raises:
        ToolError: ``invalid_params`` naming ``field`` and the rule.
    """
    if "\x00" in pattern:
        raise _invalid(
            f"`{field}` contains a NUL character, which no file name holds; leave it out",
        )
    if len(pattern) > MAX_PATTERN_CHARS:
        from toolweave.errors import preview

        raise _invalid(
            f"`{field}` is {len(pattern)} characters long ({preview(pattern, 60)!r}); "
            f"the limit is {MAX_PATTERN_CHARS}",
        )
    problem = syntax_problem(pattern)
    if problem is None:
        count = _count(pattern)
        if count > MAX_ALTERNATIVES or count * len(pattern) > MAX_EXPANDED_CHARS:
            raise _invalid(
                f"`{field}` expands to too many alternatives through its {{a,b}} groups (the "
                f"limits are {MAX_ALTERNATIVES} alternatives and {MAX_EXPANDED_CHARS} "
                "characters in all); use fewer groups or shorter lists",
            )
        if count > 1:  # each alternative is matched, so each must be valid too: the
            # comma of "{[,],x}" splits its class in two
            problem = next(filter(None, map(syntax_problem, _expand(pattern))), None)
    if problem is not None:
        from toolweave.errors import preview

        raise _invalid(f"`{field}` is not a valid glob ({preview(pattern, 60)!r}): {problem}")


def syntax_problem(pattern: str) -> str | None:
    """What makes ``pattern`` a malformed glob, or ``None`` when it is well formed.

    The rules are ripgrep's (its ``globset``), so that a glob is never refused by one
    engine and read as literal text by the other: every ``[`` is closed by ``]`` within
    its path segment (a ``]`` right after ``[``, ``[!`` or ``[^`` belongs to the class),
    a range goes upwards (``[a-z]``), no ``\\`` stands inside a class or at the end, and
    every ``{`` is closed by ``}`` (counted as :func:`expand_braces` counts them, in
    classes too).
    """
    depth = 0
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 == len(pattern):
                return "it ends with a lone `\\`; write `\\\\` to match a backslash"
            i += 2
            continue
        if char == "[":
            end, problem = _class_end(pattern, i)
            if problem is not None:
                return problem
            for inner in pattern[i + 1 : end - 1]:
                depth = _braces(inner, depth)
            i = end
            continue
        depth = _braces(char, depth)
        i += 1
    if depth > 0:
        return "a `{` is never closed by `}`; write `\\{` to match a literal `{`"
    return None


def _braces(char: str, depth: int) -> int:
    """The depth of ``{...}`` groups after ``char`` (an unopened ``}`` is literal)."""
    if char == "{":
        return depth + 1
    if char == "}" and depth > 0:
        return depth - 1
    return depth


def _class_end(pattern: str, start: int) -> tuple[int, str | None]:
    """The index after the class that opens at ``pattern[start]`` (a ``[``), and what
    is wrong with it, if anything."""
    i = start + 1
    if pattern.startswith(("!", "^"), i):
        i += 1
    first = i
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern) and pattern[i] not in "]/":
        if pattern[i] == "\\":
            return i, (
                "a `\\` inside `[...]` is not allowed (ripgrep reads it as itself, not as "
                "an escape); to match `]`, put it first in the class (`[]a]`)"
            )
        i += 1
    if i == len(pattern) or pattern[i] == "/":
        return i, (
            "a `[` opens a character class that is never closed by `]` in its path "
            "segment; write `\\[` to match a literal `[`"
        )
    body = pattern[first:i]
    for k in range(1, len(body) - 1):
        low, high = body[k - 1], body[k + 1]
        if body[k] == "-" and low > high and (k < 2 or body[k - 2] != "-"):
            return i, f"the range `{low}-{high}` in `[...]` goes downwards; write `{high}-{low}`"
    return i + 1, None


def ripgrep_glob(alternative: str) -> str | None:
    """A brace-free alternative (from :func:`expand_braces`) as ripgrep reads the same
    thing: a ``{`` or ``}`` left in it is literal here (a group of one option, an
    unopened ``}``) and is escaped for ripgrep. ``None`` for one that a
    ``--type-add=NAME:GLOB`` definition cannot carry (empty, or holding a ``:``)."""
    if not alternative or ":" in alternative:
        return None
    out: list[str] = []
    i = 0
    while i < len(alternative):
        char = alternative[i]
        if char == "\\":  # with the next character (never last: see syntax_problem)
            out.append(alternative[i : i + 2])
            i += 2
        elif char == "[":  # a class as it is: no escape inside (see syntax_problem)
            end, _ = _class_end(alternative, i)
            out.append(alternative[i:end])
            i = end
        else:
            out.append("\\" + char if char in "{}" else char)
            i += 1
    return "".join(out)


def _invalid(message: str) -> ToolError:
    """``invalid_params``; toolweave is imported here, not at the top, because the
    Python engine's worker process imports this module without toolweave (its start-up
    stays short; the parent checks every glob before the worker sees it)."""
    from toolweave import ErrorKind, ToolError

    return ToolError(ErrorKind.INVALID_PARAMS, message)


def _groups(pattern: str) -> tuple[int, int, list[str]] | None:
    """The first top-level ``{...}`` group with two options or more: its start, its
    end and its options."""
    depth = 0
    start = -1
    escaped = False
    for i, char in enumerate(pattern):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
            continue
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                options = _split_top(pattern[start + 1 : i])
                if len(options) >= 2:
                    return start, i, options
    return None


def _count(pattern: str, budget: int = MAX_ALTERNATIVES + 1) -> int:
    """How many alternatives ``pattern`` expands to, counting stopped above ``budget``
    (a product of group sizes, never an expansion)."""
    found = _groups(pattern)
    if found is None:
        return 1
    _, end, options = found
    inner = 0
    for option in options:
        inner += _count(option, budget)
        if inner > budget:
            return inner
    rest = _count(pattern[end + 1 :], budget)
    return inner * rest if inner * rest <= budget else budget + 1


def expand_braces(pattern: str) -> list[str]:
    """Every alternative of ``pattern``'s ``{a,b}`` groups (``*.{ts,tsx}`` → two globs),
    without duplicates, in order.

    Raises:
        ToolError: ``invalid_params`` when there would be more than
            :data:`MAX_ALTERNATIVES` (see :func:`check_glob`).
    """
    check_glob(pattern, "pattern")
    return list(dict.fromkeys(_expand(pattern)))


def _expand(pattern: str) -> list[str]:
    found = _groups(pattern)
    if found is None:
        return [pattern]
    start, end, options = found
    head = pattern[:start]
    tails = _expand(pattern[end + 1 :])
    return [head + alt + tail for option in options for alt in _expand(option) for tail in tails]


def _split_top(inner: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    escaped = False
    for char in inner:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        current.append(char)
    parts.append("".join(current))
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


def _segment(text: str) -> Callable[[str], bool]:
    """A matcher of one path segment for the glob segment ``text``."""
    if not any(c in "*?[\\" for c in text):
        return text.__eq__
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            escaped = text[i + 1]  # a wildcard in a class of its own is literal
            out.append(f"[{escaped}]" if escaped in "*?[" else escaped)
            i += 2
            continue
        if char == "[" and text.startswith("[^", i):
            out.append("[!")
            i += 2
            continue
        out.append(char)
        i += 1
    regex = re.compile(fnmatch.translate("".join(out)))
    return lambda segment: regex.match(segment) is not None


class _Alternative:
    """One brace-free glob, matched segment by segment."""

    __slots__ = ("segments",)

    def __init__(self, pattern: str) -> None:
        parts = [p for p in pattern.split("/") if p not in ("", ".")]
        self.segments: list[Callable[[str], bool] | None] = []
        for i, part in enumerate(parts):
            if part == "**":
                last = i == len(parts) - 1
                if not self.segments or self.segments[-1] is not None:
                    self.segments.append(None)  # any number of segments
                if last:
                    self.segments.append(_anything)  # "dir/**": at least one below
            else:
                self.segments.append(_segment(part))

    def matches(self, names: list[str]) -> bool:
        reach = {0}
        for matcher in self.segments:
            if not reach:
                return False
            if matcher is None:
                reach = set(range(min(reach), len(names) + 1))
                continue
            reach = {j + 1 for j in reach if j < len(names) and matcher(names[j])}
        return len(names) in reach


def _anything(segment: str) -> bool:
    return True


class GlobFilter:
    """Matches file paths (relative to a search folder) against a glob.

    Args:
        pattern: The glob.
        anchored: ``True``: the whole path must match (``*.py`` only at the top).
            ``False``: a pattern without ``/`` matches the file name at any depth.

    Raises:
        ToolError: ``invalid_params`` for a glob over the limits of :func:`check_glob`.
    """

    __slots__ = ("_alternatives", "alternatives", "basename_only", "pattern")

    def __init__(self, pattern: str, *, anchored: bool) -> None:
        self.pattern = pattern
        alternatives = expand_braces(pattern.strip())
        self.alternatives = tuple(alternatives)
        """The brace-free globs the pattern expands to, in order."""
        self.basename_only = not anchored and all("/" not in a for a in alternatives)
        compiled: list[_Alternative] = []
        for alt in alternatives:
            if alt.endswith("/") and alt.strip("/"):
                continue  # names a folder: never a file
            if not anchored and "/" not in alt:
                alt = "**/" + alt
            compiled.append(_Alternative(alt))
        self._alternatives = tuple(compiled)

    def matches(self, path: str) -> bool:
        """Whether the file at ``path`` (relative to the search folder) matches."""
        names = path.split("/")
        return any(alt.matches(names) for alt in self._alternatives)
