"""Command output: decoding, line batching, and a cap that keeps the head and the tail."""

from __future__ import annotations

import codecs
from collections import deque

__all__ = ["CappedText", "LineBatcher", "cap_text", "omission_marker"]


def omission_marker(chars: int, lines: int) -> str:
    """The line that stands where output was left out."""
    what = f"{chars} characters" + (f", {lines} lines" if lines else "")
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

    ``feed`` returns the decoded text of a chunk (for the final output) and the lines
    completed by it (for progress items); a partial last line waits for the next chunk
    or for :meth:`flush`.
    """

    __slots__ = ("_decoder", "_partial")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""

    def feed(self, chunk: bytes) -> tuple[str, str]:
        """Decode ``chunk``; returns ``(text, completed_lines)``."""
        text = self._decoder.decode(chunk)
        pending = self._partial + text
        cut = pending.rfind("\n")
        if cut < 0:
            self._partial = pending
            return text, ""
        self._partial = pending[cut + 1 :]
        return text, pending[:cut]

    def flush(self) -> tuple[str, str]:
        """End of output: the rest of the text, and the last (unterminated) line."""
        text = self._decoder.decode(b"", final=True)
        rest = self._partial + text
        self._partial = ""
        return text, rest
