"""Search results as both engines produce them, and their text for the model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FileHits", "GrepQuery", "Line", "OutputMode", "format_hits", "max_columns"]

OutputMode = Literal["content", "files_with_matches", "count"]


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a file shown in ``content`` mode."""

    number: int
    text: str
    match: bool
    cut: bool = False
    """Whether the engine left out the end of a very long line (ripgrep's
    ``--max-columns``): the line is longer than ``text``."""


@dataclass(slots=True)
class FileHits:
    """The matches in one file.

    Attributes:
        path: Relative to the workspace root, ``/`` separators.
        count: How many lines match.
        lines: Matching lines and their context, in order (``content`` mode only).
    """

    path: str
    count: int = 0
    lines: list[Line] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GrepQuery:
    """What to search for, as the engines see it.

    Attributes:
        pattern: The regular expression.
        folder: Where to search, relative to the workspace root (``""``: the root).
        is_file: Whether ``folder`` names a single file.
        glob: Only files matching this glob, or ``None``.
        mode: What to report.
        case_insensitive: Ignore case.
        before: Context lines before each match (``content`` mode).
        after: Context lines after each match (``content`` mode).
        limit: Stop after this many entries (lines, files or counts) plus one.
        line_chars: Lines are shown up to this many characters (``content`` mode); an
            engine may cut longer ones, keeping at least this many.
    """

    pattern: str
    folder: str
    is_file: bool
    glob: str | None
    mode: OutputMode
    case_insensitive: bool
    before: int
    after: int
    limit: int
    line_chars: int = 400


def max_columns(line_chars: int) -> int:
    """The longest line, in bytes, an engine returns whole in ``content`` mode; of a
    longer one it keeps the start only (at least ``line_chars`` characters, all that is
    shown) and marks it :attr:`Line.cut`. ripgrep's ``--max-columns``."""
    return max(4 * line_chars + 4, 4096)


def _clip(line: Line, limit: int) -> str:
    text = line.text
    if line.cut:  # the engine kept only the start of a very long line
        return f"{text[:limit]}... [the rest of a very long line left out]"
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return f"{text[:limit]}... [{more} more character{'' if more == 1 else 's'}]"


def format_hits(
    hits: list[FileHits],
    mode: OutputMode,
    *,
    line_numbers: bool,
    context: bool,
    limit: int,
    line_chars: int,
    max_chars: int,
) -> tuple[list[str], list[str], bool]:
    """The result lines for the model: at most ``limit`` entries, about ``max_chars``.

    Returns:
        The lines (``--`` separates groups of context), the files they come from, and
        whether anything was left out.
    """
    out: list[str] = []
    files: list[str] = []
    used = 0
    entries = 0

    def add(text: str, path: str) -> bool:
        nonlocal used
        if used + len(text) + 1 > max_chars:
            return False
        out.append(text)
        used += len(text) + 1
        if not files or files[-1] != path:
            files.append(path)
        return True

    if mode != "content":
        for hit in hits:
            text = hit.path if mode == "files_with_matches" else f"{hit.path}:{hit.count}"
            if entries == limit or not add(text, hit.path):
                return out, files, True
            entries += 1
        return out, files, False
    for hit in hits:
        previous: int | None = None
        for line in hit.lines:
            if entries == limit:
                return out, files, True
            if (
                context
                and out
                and (previous is None or line.number != previous + 1)
                and not add("--", hit.path)
            ):
                return out, files, True
            sep = ":" if line.match else "-"
            number = f"{line.number}{sep}" if line_numbers else ""
            if not add(f"{hit.path}{sep}{number}{_clip(line, line_chars)}", hit.path):
                return out, files, True
            previous = line.number
            entries += 1
    return out, files, False
