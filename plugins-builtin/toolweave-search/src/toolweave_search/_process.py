"""Helper processes of the search engines (ripgrep, the Python engine's worker): their
JSON lines, and stopping and reaping them however the call ends."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator

import anyio
import anyio.abc

__all__ = ["finish", "json_lines", "proc_fd"]

_STOP = getattr(signal, "SIGKILL", signal.SIGTERM)


def proc_fd(fd: int) -> str:
    """The path that names the open descriptor ``fd`` in a child that inherited it
    (``pass_fds``): opening it opens the very file, not a path looked up again."""
    return f"/proc/self/fd/{fd}"


async def json_lines(process: anyio.abc.Process, end: bytes = b"\n") -> AsyncIterator[bytes]:
    """The lines ``process`` writes on its standard output, as they come (``end``: what
    ends each, e.g. the NUL after each path of ``rg --files-with-matches --null``)."""
    assert process.stdout is not None
    pending = bytearray()  # grows in place: a line of many chunks costs its length once
    async for chunk in process.stdout:
        pending += chunk
        if end not in chunk:
            continue
        *complete, rest = bytes(pending).split(end)
        pending = bytearray(rest)
        for line in complete:
            yield line
    if pending:
        yield bytes(pending)


async def finish(process: anyio.abc.Process, early: bool) -> tuple[int | None, str]:
    """Stop (when ``early``: cut short, cancelled or past the deadline) and reap
    ``process``; returns its exit code and error text.

    Shielded, so a cancelled call still kills and reaps its process. The event loop's
    child watcher is the only one that reaps: the signal goes out with ``os.kill``,
    because ``process.kill()`` polls the process first and, when it has just exited,
    reaps it behind the watcher's back ("Unknown child process pid").
    """
    with anyio.CancelScope(shield=True):
        if early and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, _STOP)
        errors = b""
        if process.stderr is not None:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
                errors = await process.stderr.receive(65536)
        await process.wait()
        await process.aclose()
    return process.returncode, errors.decode("utf-8", "replace")
