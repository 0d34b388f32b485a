"""Command output: decoding, line batching, and a cap that keeps the head and the tail."""

from __future__ import annotations

import codecs
from collections import deque

__all__ = ["PROGRESS_MAX_CHARS", "CappedText", "LineBatcher", "cap_text", "omission_marker"]

PROGRESS_MAX_CHARS = 8192
"""The longest progress message; longer ones keep their head and tail."""


def omission_marker(chars: int, lines: int) -> str:
    """The line that stands where output was left out."""
    what = f"{chars} character{'' if chars == 1 else 's'}"
    if lines:
        what += f", {lines} line{'' if lines == 1 else 's'}"
    return f"\n\n[... {what} of output omitted here ...]\n\n"


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, keeping its head and tail.

    Returns:
        The text (with a marker where the middle was cut) and whether it was cut.
    """
    if len(text) <= limit:
        return text, False
    head_len = limit // 2
    tail_len = limit - head_len
    middle = text[head_len : len(text) - tail_len]
    marker = omission_marker(len(middle), middle.count("\n"))
    return text[:head_len] + marker + text[len(text) - tail_len :], True


class CappedText:
    """Collects streamed text in bounded memory: the first and last ``limit / 2`` characters.

    Args:
        limit: The most characters kept (the marker comes on top).
    """

    __slots__ = (
        "_dropped_chars",
        "_dropped_lines",
        "_head",
        "_head_room",
        "_tail",
        "_tail_len",
        "_tail_room",
    )

    def __init__(self, limit: int) -> None:
        self._head: list[str] = []
        self._head_room = limit // 2
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._tail_room = limit - self._head_room
        self._dropped_chars = 0
        self._dropped_lines = 0

    def append(self, text: str) -> None:
        """Add text at the end."""
        if self._head_room > 0:
            take = text[: self._head_room]
            self._head.append(take)
            self._head_room -= len(take)
            text = text[len(take) :]
            if not text:
                return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._tail_room and self._tail:
            excess = self._tail_len - self._tail_room
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                dropped = first
            else:
                dropped = first[:excess]
                self._tail[0] = first[excess:]
            self._tail_len -= len(dropped)
            self._dropped_chars += len(dropped)
            self._dropped_lines += dropped.count("\n")

    @property
    def truncated(self) -> bool:
        """Whether some of the middle was left out."""
        return self._dropped_chars > 0

    def text(self) -> str:
        """The kept text, with a marker where the middle was left out."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self._dropped_chars:
            return head + tail
        return head + omission_marker(self._dropped_chars, self._dropped_lines) + tail


class LineBatcher:
    """Turns raw output chunks into text: decoded as UTF-8, split on complete lines.

    ``feed`` returns the decoded text of a chunk (for the final output) and the text to
    report now (for progress items): the lines completed by the chunk, or everything
    pending once a partial line grows past ``max_partial`` characters. A shorter
    partial line waits for the next chunk, for :meth:`take_partial` (the caller saw no
    output for a while) or for :meth:`flush`. Pending text is kept in pieces, so a huge
    line costs linear time, never repeated concatenation.

    Args:
        max_partial: How long a partial line may grow before it is reported anyway.
    """

    __slots__ = ("_decoder", "_parts", "_pending", "max_partial")

    def __init__(self, max_partial: int = 4096) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parts: list[str] = []
        self._pending = 0
        self.max_partial = max_partial

    def feed(self, chunk: bytes) -> tuple[str, str]:
        """Decode ``chunk``; returns ``(text, to_report)``."""
        text = self._decoder.decode(chunk)
        cut = text.rfind("\n")
        if cut < 0:
            self._parts.append(text)
            self._pending += len(text)
            return text, self.take_partial() if self._pending >= self.max_partial else ""
        rest = text[cut + 1 :]
        if len(rest) >= self.max_partial:
            self._parts.append(text)
            return text, self.take_partial()
        self._parts.append(text[:cut])
        done = "".join(self._parts)
        self._parts = [rest] if rest else []
        self._pending = len(rest)
        return text, done

    def take_partial(self) -> str:
        """The pending partial line (``""`` when none), which is then no longer pending."""
        partial = "".join(self._parts)
        self._parts = []
        self._pending = 0
        return partial

    def flush(self) -> tuple[str, str]:
        """End of output: the rest of the text, and the last (unterminated) line."""
        text = self._decoder.decode(b"", final=True)
        self._parts.append(text)
        return text, self.take_partial()
