"""Choosing and running a search engine: ripgrep when present, else pure Python."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
from toolweave import ErrorKind, ToolError
from toolweave.errors import preview

from toolweave_search._process import proc_fd
from toolweave_search._pyrunner import python_files, python_grep
from toolweave_search._results import FileHits, GrepQuery
from toolweave_search._rgengine import find_ripgrep, rg_files, rg_grep
from toolweave_search._start import Start

__all__ = ["Engine", "EngineParams", "list_files", "resolve_engine", "search"]

Engine = Literal["auto", "ripgrep", "python"]
"""``auto`` uses ripgrep when it is installed; the others force one engine."""


class EngineParams(BaseModel):
    """The engine settings every search tool's configuration has."""

    engine: Engine = "auto"
    """``auto`` (ripgrep when installed), ``ripgrep`` or ``python``."""

    ripgrep_path: str | None = None
    """The ``rg`` program (default: the one installed with ``toolweave-search[rg]``, or
    the first on ``PATH``)."""


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
    if found is not None and not _fd_paths():
        if engine == "ripgrep":
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "ripgrep is confined to the workspace through /proc/self/fd, which this "
                'system lacks; configure engine = "auto" or "python".',
            )
        return None
    return found


@functools.cache
def _fd_paths() -> bool:
    """Whether open descriptors have paths a child can open (``/proc/self/fd``)."""
    fd = os.open(os.devnull, os.O_RDONLY)
    try:
        return os.path.exists(proc_fd(fd))
    finally:
        os.close(fd)


async def search(rg: str | None, root: Path, start: Start, query: GrepQuery) -> list[FileHits]:
    """Run ``query`` from ``start`` with ripgrep (``rg``) or, when ``rg`` is ``None``, in
    the Python engine's worker process."""
    if rg is not None:
        return await rg_grep(rg, root, start, query)
    return await python_grep(start, query)


async def list_files(rg: str | None, root: Path, start: Start) -> list[str]:
    """Every file a search of the folder ``start`` visits, relative to ``root``; with
    ripgrep, names it saw (see :func:`._rgengine.rg_files`)."""
    if rg is not None:
        return await rg_files(rg, root, start)
    return await python_files(start)
