"""Following edits of the server file by polling its metadata (no extra dependency)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import anyio

__all__ = ["file_signature", "watch_file"]

logger = logging.getLogger("toolweave.mcp")

SETTLE = 0.05
"""Seconds a changed file must stay unchanged before it is read (editors write in steps)."""


Signature = tuple[int, int, int] | None


def file_signature(path: Path) -> Signature:
    """What tells one version of ``path`` from the next (``None``: it does not exist)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


async def watch_file(
    path: Path,
    interval: float,
    changed: Callable[[], Awaitable[None]],
    seen: Signature | Literal["now"] = "now",
) -> None:
    """Call ``changed`` whenever ``path`` is modified, replaced, created or deleted.

    ``seen`` is the :func:`file_signature` of the version already read (taken before
    reading it, so an edit made before this task first runs is not missed); ``"now"``
    takes it when the task starts. Runs until cancelled; an exception from ``changed``
    is logged, never raised.
    """
    last = file_signature(path) if seen == "now" else seen
    while True:
        await anyio.sleep(interval)
        now = file_signature(path)
        if now == last:
            continue
        await anyio.sleep(SETTLE)
        settled = file_signature(path)
        if settled != now:
            continue
        last = now
        try:
            await changed()
        except Exception:
            logger.exception("applying the changed MCP server file %s failed", path)
