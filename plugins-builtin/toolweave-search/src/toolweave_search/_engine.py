"""Choosing and running a search engine: ripgrep when present, else pure Python."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

import anyio.to_thread
from pydantic import BaseModel
from toolweave import ErrorKind, ToolError
from toolweave.errors import preview

from toolweave_search._pyengine import python_files, python_grep
from toolweave_search._results import FileHits, GrepQuery
from toolweave_search._rgengine import find_ripgrep, rg_files, rg_grep

__all__ = ["Engine", "EngineParams", "in_thread", "list_files", "resolve_engine", "search"]

Engine = Literal["auto", "ripgrep", "python"]
"""``auto`` uses ripgrep when it is installed; the others force one engine."""


class EngineParams(BaseModel):
    """The engine settings every search tool's configuration has."""

    engine: Engine = "auto"
    """``auto`` (ripgrep when installed), ``ripgrep`` or ``python``."""

    ripgrep_path: str | None = None
    """The ``rg`` program (default: the one installed with ``toolweave-search[rg]``, or
    the first on ``PATH``)."""


T = TypeVar("T")


def resolve_engine(engine: Engine, ripgrep_path: str | None) -> str | None:
    """The ``rg`` program to use, or ``None`` for the Python engine.

    Raises:
        ToolError: ``unavailable`` when ripgrep is required but not installed.
    """
    if engine == "python":
        return None
    if ripgrep_path is not None and not (
        os.path.isfile(ripgrep_path) and os.access(ripgrep_path, os.X_OK)
    ):
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            f"The configured ripgrep program {preview(ripgrep_path)!r} does not exist or "
            "cannot run.",
        )
    found = ripgrep_path or find_ripgrep()
    if found is None and engine == "ripgrep":
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            "ripgrep is not installed here; install it with "
            "pip install 'toolweave-search[rg]', or configure engine = \"auto\".",
        )
    return found


async def in_thread(work: Callable[[threading.Event], T]) -> T:
    """Run ``work`` in a worker thread; a cancelled call sets the event it receives, so
    the work stops at its next check instead of running on abandoned."""
    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(work, stop, abandon_on_cancel=True)
    finally:
        stop.set()  # a cancelled search stops at its next file


async def search(rg: str | None, root: Path, query: GrepQuery) -> list[FileHits]:
    """Run ``query`` with ripgrep (``rg``) or, when ``rg`` is ``None``, in Python."""
    if rg is not None:
        return await rg_grep(rg, root, query)
    return await in_thread(partial(python_grep, root, query))


async def list_files(rg: str | None, root: Path, start: Path) -> list[str]:
    """Every file a search of the folder ``start`` visits, relative to ``root``."""
    if rg is not None:
        return await rg_files(rg, root, start)
    return await in_thread(lambda stop: list(python_files(root, start, stop)))
