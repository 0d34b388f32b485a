"""Running the Python engine in a worker process that dies with the call.

Python's ``re`` cannot be interrupted: a thread matching ``(a*)*b`` against a long
line runs on for minutes after its call timed out, and so may a pattern of a
``.gitignore`` the model wrote. So the whole Python engine (walk, ignore rules,
matching) runs in a child process, killed as soon as the call is cancelled, passes its
deadline or has what it needs; nothing of an abandoned search keeps running.

The child is ``python -I -S`` with a short bootstrap that imports only the engine's
modules (no toolweave, pathspec only when a ``.gitignore`` is met), so it starts in a
few tens of milliseconds; it inherits the descriptors of the workspace root and of the
start (``pass_fds``) and never looks a path up from outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anyio
from toolweave import ErrorKind, ToolError

from toolweave_search._process import finish, json_lines
from toolweave_search._results import FileHits, GrepQuery, Line
from toolweave_search._start import Start

__all__ = ["python_files", "python_grep"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__))

BOOTSTRAP = (
    "import json, sys, types\n"
    "request = json.loads(sys.stdin.readline())\n"
    "sys.path[:0] = request['sys_path']\n"
    "package = types.ModuleType('toolweave_search')\n"
    "package.__path__ = [request['package']]\n"
    "sys.modules['toolweave_search'] = package\n"
    "from toolweave_search._pyengine import main\n"
    "main(request)\n"
)
"""The worker's program: it installs an empty ``toolweave_search`` package so that the
engine's modules load without the package's ``__init__`` (which imports toolweave)."""


async def _run(start: Start, request: dict[str, Any], take: Callable[[Any], bool]) -> None:
    """Run one request in a worker; ``take`` receives each answer and returns ``False``
    to stop the worker early.

    Raises:
        ToolError: ``unavailable`` when no Python program can be started,
            ``execution_error`` when the worker fails.
    """
    if not sys.executable:
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            "the Python engine needs a Python program to run its worker and this host has "
            "none (sys.executable is empty); install ripgrep: "
            "pip install 'toolweave-search[rg]'",
        )
    request = {
        **request,
        "sys_path": [p for p in sys.path if p],
        "package": _PACKAGE,
        "root_fd": start.root_fd,
        "start_fd": start.fd,
        "parts": list(start.parts),
    }
    process = await anyio.open_process(
        [sys.executable, "-I", "-S", "-c", BOOTSTRAP],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(start.root_fd, start.fd),
    )
    completed = False
    try:
        assert process.stdin is not None
        await process.stdin.send(json.dumps(request).encode("utf-8") + b"\n")
        await process.stdin.aclose()
        async for line in json_lines(process):
            if line and not take(json.loads(line)):
                break
        else:
            completed = True
    finally:
        code, errors = await finish(process, early=not completed)
    if completed and code != 0:
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"the search worker failed (exit code {code}): {errors.strip()[-500:]}",
        )


async def python_files(start: Start) -> list[str]:
    """Every file a search of the folder ``start`` visits, relative to the root."""
    files: list[str] = []

    def take(answer: Any) -> bool:
        files.append(str(answer))
        return True

    await _run(start, {"op": "list"}, take)
    return files


async def python_grep(start: Start, query: GrepQuery) -> list[FileHits]:
    """Search like ripgrep would; stops once more than ``query.limit`` entries are found.

    Raises:
        ToolError: ``invalid_params`` for a pattern that is not a regular expression.
    """
    found: list[FileHits] = []
    entries = 0

    def take(answer: Any) -> bool:
        nonlocal entries
        if isinstance(answer, dict):
            raise ToolError(ErrorKind.INVALID_PARAMS, str(answer.get("error")))
        path, count, lines = answer
        hits = FileHits(path, count, [Line(*line) for line in lines])
        found.append(hits)
        entries += len(hits.lines) if query.mode == "content" else 1
        return entries <= query.limit

    fields = (
        "pattern", "glob", "mode", "case_insensitive", "before", "after", "limit", "is_file",
        "line_chars",
    )  # fmt: skip
    await _run(start, {"op": "grep", "query": {k: getattr(query, k) for k in fields}}, take)
    return found
