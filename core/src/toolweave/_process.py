"""Child processes that die with their call.

The contract between the dispatcher and a tool that starts processes (the terminal of
the shell pack, a language server, ...):

1. A call is stopped (``session.cancel(call_id)``, or its deadline passing) by
   cancelling the call's cancel scope: the tool's coroutine receives the event loop's
   cancellation exception at its current ``await``. Nothing is queued: there is no lock
   around dispatch, so a cancel acts at once, whatever else the session is doing.
2. The tool must let that exception propagate, and on its way out kill every process it
   started, including their children. Starting each command as the leader of a new
   session (``start_new_session=True``: its own process group) and signalling the whole
   group does that; :func:`process_group` does both, shielded from the cancellation
   so that the kill itself is never interrupted.
3. Work that runs in a worker thread cannot be interrupted: the call ends at once, but
   the thread finishes on its own. Start processes from async code, not from threads.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import Process

__all__ = ["kill_process_group", "process_group"]


def _signal_group(pid: int, sig: int) -> bool:
    """Send ``sig`` to the process group led by ``pid``; ``False`` when it is gone."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - the group id was reused by someone else
        return False
    return True


async def kill_process_group(process: Process, *, grace: float = 2.0) -> None:
    """Stop ``process`` and every process in its group, then reap it.

    Sends ``SIGTERM`` to the group, waits up to ``grace`` seconds for the leader to
    exit, then sends ``SIGKILL`` to whatever is left of the group. Shielded from
    cancellation. The process must have been started with ``start_new_session=True``
    (on Windows, where there are no process groups, only the process itself is killed).
    """
    with anyio.CancelScope(shield=True):
        if os.name != "posix":  # pragma: no cover - exercised on Windows only
            if process.returncode is None:
                process.kill()
            await process.wait()
            return
        pid = process.pid
        if _signal_group(pid, signal.SIGTERM):
            with anyio.move_on_after(grace):
                await process.wait()
            _signal_group(pid, signal.SIGKILL)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        await process.wait()


@asynccontextmanager
async def process_group(
    command: str | bytes | Sequence[str | bytes],
    *,
    grace: float = 2.0,
    cancel_grace: float = 0.1,
    **kwargs: Any,
) -> AsyncIterator[Process]:
    """Start ``command`` in its own process group; on exit, kill the whole group.

    Whatever ends the block (normal exit, an error, the call being cancelled or timing
    out) every process of the group that is still running is stopped: ``SIGTERM``, then
    ``SIGKILL`` after ``grace`` seconds, or after ``cancel_grace`` seconds when the
    block is left by cancellation (so that a cancelled call returns at once, even when
    the command ignores ``SIGTERM``). Extra arguments go to :func:`anyio.open_process`
    (``stdin``, ``stdout``, ``stderr``, ``cwd``, ``env``).

    Example:
        ``async with process_group(["make", "test"], stdout=PIPE) as proc: ...``
    """
    if os.name == "posix":
        kwargs["start_new_session"] = True
    process = await anyio.open_process(command, **kwargs)
    wait = grace
    try:
        yield process
    except anyio.get_cancelled_exc_class():
        wait = min(grace, cancel_grace)
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await kill_process_group(process, grace=wait)
            await process.aclose()
