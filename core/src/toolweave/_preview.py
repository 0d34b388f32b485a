"""Bounded previews of values that messages echo back (a path, a pattern, a name)."""

from __future__ import annotations

__all__ = ["PREVIEW_CHARS", "preview"]

PREVIEW_CHARS = 200
"""How many characters of a value a message shows by default."""


def preview(value: object, limit: int = PREVIEW_CHARS) -> str:
    """``value`` as text, cut to about ``limit`` characters for a message.

    A model can send a path or a pattern of any size, and a message that echoes it whole
    can be larger than anything the tool would return. Short text comes back unchanged;
    longer text keeps its head, an ellipsis and its full length, so the reader still
    knows what it was and how large.

    Args:
        value: What to show; anything that is not a string is shown through ``str``.
        limit: The most characters of ``value`` kept (at least 1).

    Returns:
        The text, or its first ``limit`` characters followed by
        ``… (N characters)``.

    Example:
        >>> preview("src/app.py")
        'src/app.py'
        >>> preview("x" * 1000, limit=5)
        'xxxxx… (1000 characters)'
    """
    text = value if isinstance(value, str) else str(value)
    limit = max(1, limit)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"
