"""Following edits of the server file by polling its metadata (no extra dependency)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

__all__ = ["watch_file"]

logger = logging.getLogger("toolweave.mcp")

SETTLE = 0.05
"""Seconds a changed file must stay unchanged before it is read (editors write in steps)."""


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


async def watch_file(path: Path, interval: float, changed: Callable[[], Awaitable[None]]) -> None:
    """Call ``changed`` whenever ``path`` is modified, replaced, created or deleted.

    Runs until cancelled; an exception from ``changed`` is logged, never raised.
    """
    last = _signature(path)
    while True:
        await anyio.sleep(interval)
        now = _signature(path)
        if now == last:
            continue
        await anyio.sleep(SETTLE)
        settled = _signature(path)
        if settled != now:
            continue
        last = now
        try:
            await changed()
        except Exception:
            logger.exception("applying the changed MCP server file %s failed", path)
