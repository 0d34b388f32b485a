"""Process and process-group checks that tell a live process from a dead one.

A zombie (ended, not yet reaped by its parent) counts as dead; a process id that now
belongs to another process (compared by start time where the system says it) counts
as dead too. On Linux the answers come from ``/proc``; elsewhere from ``kill(pid, 0)``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import anyio

__all__ = [
    "boot_id",
    "group_alive",
    "kill_group",
    "process_alive",
    "signal_group",
    "start_ticks",
]

_PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, or ``None``."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    end = raw.rfind(b")")
    if end < 0:
        return None
    return raw[end + 2 :].decode("ascii", "replace").split()


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (``None`` when unknown)."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def boot_id() -> str | None:
    """An id of the current boot of the machine (``None`` when the system has none)."""
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip() or None
    except OSError:
        return None


def process_alive(pid: int, started: int | None = None) -> bool:
    """Whether process ``pid`` exists, is not a zombie and (if given) started at ``started``."""
    if pid <= 0:
        return False
    if _PROC.is_dir():
        fields = _stat_fields(pid)
        if fields is None or not fields or fields[0] == "Z":
            return False
        return started is None or len(fields) < 20 or fields[19] == str(started)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies do not count)."""
    if pgid <= 0:
        return False
    if not _PROC.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    wanted = str(pgid)
    try:
        entries = os.listdir(_PROC)
    except OSError:  # pragma: no cover - /proc vanished
        return False
    for name in entries:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if fields is not None and len(fields) > 2 and fields[2] == wanted and fields[0] != "Z":
            return True
    return False


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to every process of group ``pgid``; ``False`` when the group is gone."""
    if pgid <= 0:
        return False
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


async def kill_group(pgid: int, grace: float) -> None:
    """End process group ``pgid``: SIGTERM, up to ``grace`` seconds to exit, then SIGKILL.

    Runs shielded from cancellation, so a cancelled caller still leaves no process of
    the group running.
    """
    with anyio.CancelScope(shield=True):
        if not signal_group(pgid, signal.SIGTERM):
            return
        deadline = time.monotonic() + grace
        delay = 0.005
        while time.monotonic() < deadline:
            if not group_alive(pgid):
                return
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        with contextlib.suppress(OSError):
            signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:  # SIGKILL cannot be refused: this is quick
            if not group_alive(pgid):
                return
            await anyio.sleep(0.01)
