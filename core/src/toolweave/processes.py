"""Child processes that die with their call, and every process they started.

The contract between the dispatcher and a tool that starts processes (the terminal of
the shell pack, a language server, ...):

1. A call is stopped (``session.cancel(call_id)``, or its deadline passing) by
   cancelling it: the tool's coroutine receives the event loop's cancellation exception
   at its current ``await``.
2. The tool must let that exception propagate, and on its way out kill every process it
   started, including their children. :func:`process_group` does that, shielded from
   the cancellation so that the kill itself is not interrupted.
3. Work that runs in a worker thread cannot be interrupted: the call ends at once, but
   the thread finishes on its own. Start processes from async code, not from threads.

What "every process it started" means is a :class:`ProcessTree`: a process group is not
enough, since ``setsid cmd &`` or a daemon's double fork leaves the group (and the
session), and a parent that exits hands its children to ``init``. A tree therefore
counts, on Linux (from ``/proc``):

- the root process, and every process of its process group and of its session (the
  root is started as the leader of a new session);
- every process whose environment carries the tree's tag: the variable
  :data:`TAG_VARIABLE`, which the root gets and which every descendant inherits unless
  it clears its environment — it survives ``setsid``, double forks and re-parenting;
- every process seen as a member before (by id and start time, so a reused id is not
  mistaken for one), and every child of a member, by parent links.

A member that dies after it was re-parented to this process (when the host made itself
a child subreaper) is reaped here; nothing else is ever reaped, so the exit status of
another library's child is never taken from it. Elsewhere (macOS, no ``/proc``) a tree
is its process group only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
from anyio.abc import Process

__all__ = [
    "DUMPABLE_VARIABLE",
    "TAG_VARIABLE",
    "ProcessTree",
    "boot_id",
    "kill_process_group",
    "process_alive",
    "process_group",
    "protect_host",
    "start_ticks",
]

TAG_VARIABLE: Final = "TOOLWEAVE_PROCESS_TREE"
"""The environment variable that marks every process of a :class:`ProcessTree`."""

DUMPABLE_VARIABLE: Final = "TOOLWEAVE_HOST_DUMPABLE"
"""Set to ``1`` to keep :func:`protect_host` from marking the host not dumpable."""

_PROC = Path("/proc")
_PR_SET_DUMPABLE: Final = 4
_prctl: Any = None
_KILL_ROUNDS = 50
"""SIGKILL rounds at most before :meth:`ProcessTree.kill_now` gives up on a fork bomb."""


# -- the host ---------------------------------------------------------------------------


def protect_host() -> bool:
    """Keep the processes this host starts out of its start-up environment and memory.

    On Linux any process of the same user may read ``/proc/<pid>/environ`` of another,
    the environment it was started with (where API keys usually are), and, where
    ``ptrace`` is allowed, its memory. Commands and servers started for a model run as
    the host's user, so toolweave calls this before it starts one (the shell pack's
    commands, :func:`process_group`, stdio MCP servers): the host is marked not dumpable
    (``prctl(PR_SET_DUMPABLE, 0)``), which gives those files to root. The processes it
    starts are dumpable again from their ``exec``, so nothing changes for them.

    The cost falls on the host: it leaves no core dump, and a debugger or profiler that
    attaches to it (``gdb -p``, ``py-spy``) needs root. Set ``TOOLWEAVE_HOST_DUMPABLE=1``
    to leave the host as it is. Elsewhere than Linux this does nothing.

    Returns:
        Whether the host is now protected.
    """
    global _prctl
    if not sys.platform.startswith("linux") or os.environ.get(DUMPABLE_VARIABLE) == "1":
        return False
    if _prctl is None:
        import ctypes

        try:
            _prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _prctl = False
    if _prctl is False:
        return False
    # Every time: whatever reset it (a change of user, a library) is undone before a start.
    return bool(_prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)


# -- reading /proc ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stat:
    """The fields of ``/proc/<pid>/stat`` a tree needs."""

    state: str
    ppid: int
    pgid: int
    sid: int
    start: int

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def _stat(pid: int) -> _Stat | None:
    """``/proc/<pid>/stat``, or ``None`` when the process is gone."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        state, ppid, pgid, sid, start = fields[0], fields[1], fields[2], fields[3], fields[19]
        return _Stat(state.decode(), int(ppid), int(pgid), int(sid), int(start))
    except (IndexError, ValueError):
        return None


def _snapshot() -> dict[int, _Stat]:
    """Every process of the machine, by id (one pass over ``/proc``)."""
    found: dict[int, _Stat] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return found
    for name in names:
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None:
                found[int(name)] = stat
    return found


def _carries(pid: int, marker: bytes) -> bool:
    """Whether the environment of ``pid`` holds ``marker`` (``NAME=value``)."""
    try:
        environ = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return environ.startswith(marker + b"\0") or b"\0" + marker + b"\0" in environ


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (``None`` when unknown)."""
    stat = _stat(pid)
    return stat.start if stat is not None else None


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
        stat = _stat(pid)
        if stat is None or stat.zombie:
            return False
        return started is None or stat.start == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _send(pid: int, sig: int, *, group: bool = False) -> bool:
    """Send ``sig`` to a process (or a group); ``False`` when it is gone or not ours."""
    if pid <= 1:  # never "every process" (-1) or init
        return False
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


# -- the tree ---------------------------------------------------------------------------


class ProcessTree:
    """Every process one command started, found again whenever asked (see the module).

    Args:
        root: The process id of the command (the leader of a new session and group).
        tag: The value of :data:`TAG_VARIABLE` in the command's environment (see
            :meth:`tag_environment`); ``None`` when it has none.
        start: The root's start time (:func:`start_ticks`), to tell a reused id apart.
    """

    __slots__ = ("_marker", "_seen", "root", "start", "tag")

    def __init__(self, root: int, tag: str | None = None, *, start: int | None = None) -> None:
        self.root = root
        self.tag = tag
        self.start = start if start is not None else start_ticks(root)
        self._marker = f"{TAG_VARIABLE}={tag}".encode() if tag else None
        self._seen: dict[int, int] = {}
        """Members seen so far, with their start times."""

    def __repr__(self) -> str:
        return f"ProcessTree(root={self.root}, tag={self.tag!r})"

    @staticmethod
    def tag_environment(env: Mapping[str, str] | None = None) -> tuple[str, dict[str, str]]:
        """A new tag, and ``env`` (default: this process's environment) carrying it."""
        tag = uuid.uuid4().hex
        tagged = dict(os.environ if env is None else env)
        tagged[TAG_VARIABLE] = tag
        return tag, tagged

    def _scan(self) -> tuple[set[int], set[int]]:
        """The members now: ``(alive, zombies)``; remembers the living ones."""
        if not _PROC.is_dir():  # pragma: no cover - not Linux: the group is the tree
            return ({self.root} if _send(self.root, 0, group=True) else set()), set()
        procs = _snapshot()
        me = os.getpid()
        root = procs.get(self.root)
        # The root's id names another process now: its group and session are not ours.
        owner = -1 if root is not None and self.start not in (None, root.start) else self.root
        members: set[int] = set()
        for pid, stat in procs.items():
            if pid == me:
                continue
            if (
                stat.pgid == owner
                or stat.sid == owner
                or self._seen.get(pid) == stat.start
                or (
                    self._marker is not None
                    and not stat.zombie
                    and stat.ppid != 2  # kernel threads have no environment
                    and pid != 2
                    and _carries(pid, self._marker)
                )
            ):
                members.add(pid)
        children: dict[int, list[int]] = {}
        for pid, stat in procs.items():
            children.setdefault(stat.ppid, []).append(pid)
        todo = list(members)
        while todo:  # and every descendant of a member, by parent links
            for child in children.get(todo.pop(), ()):
                if child not in members and child != me:
                    members.add(child)
                    todo.append(child)
        alive = {pid for pid in members if not procs[pid].zombie}
        zombies = members - alive
        for pid in alive:
            self._seen[pid] = procs[pid].start
        for pid in [p for p in self._seen if p not in alive]:
            del self._seen[pid]
        self._reap(zombies, procs)
        return alive, zombies

    def _reap(self, zombies: set[int], procs: dict[int, _Stat]) -> None:
        """Reap members that died as children of this process (re-parented to it).

        The root is left to whoever started it (``subprocess``, asyncio), which waits
        for it; every other member became our child only by re-parenting."""
        me = os.getpid()
        for pid in zombies:
            if pid != self.root and procs[pid].ppid == me:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)

    def members(self) -> set[int]:
        """The ids of the tree's processes that run now (zombies excluded)."""
        return self._scan()[0]

    def alive(self) -> bool:
        """Whether any process of the tree still runs."""
        return bool(self.members())

    def signal(self, sig: int) -> int:
        """Send ``sig`` to every process of the tree; returns how many got it."""
        sent = 0
        for pid in self.members():
            sent += _send(pid, sig)
        return sent

    def kill_now(self) -> bool:
        """SIGKILL every process of the tree, again until none is left; never awaits, so
        nothing can interrupt it. Returns whether the tree is gone (a fork bomb that
        outgrows :data:`_KILL_ROUNDS` rounds is not)."""
        for _ in range(_KILL_ROUNDS):
            if not self.signal(signal.SIGKILL):
                return True
        return not self.alive()

    async def kill(self, grace: float) -> None:
        """SIGTERM the tree, wait up to ``grace`` seconds for it to exit, then SIGKILL
        whatever is left. Shielded from cancellation; should the cancellation reach it
        anyway, the tree is killed at once before it propagates."""
        try:
            with anyio.CancelScope(shield=True):
                if not self.signal(signal.SIGTERM):
                    return  # nothing ran: nothing can have forked since
                if grace > 0:
                    for delay in _backoff(grace):
                        if not self.alive():
                            return
                        await anyio.sleep(delay)
                self.kill_now()
        except BaseException:
            self.kill_now()
            raise

    async def wait_gone(self, seconds: float) -> bool:
        """Wait up to ``seconds`` until no process of the tree runs; whether none does."""
        with anyio.CancelScope(shield=True):
            for delay in _backoff(seconds):
                if not self.alive():
                    return True
                await anyio.sleep(delay)
        return not self.alive()


def _backoff(seconds: float) -> Iterator[float]:
    """Sleep lengths for polling during ``seconds``: 5 ms, doubling up to 50 ms."""
    deadline = time.monotonic() + seconds
    delay = 0.005
    while (left := deadline - time.monotonic()) > 0:
        yield min(delay, left)
        delay = min(delay * 2, 0.05)


# -- anyio processes --------------------------------------------------------------------


async def kill_process_group(
    process: Process, *, grace: float = 2.0, tree: ProcessTree | None = None
) -> None:
    """Stop ``process`` and every process it started, then reap it.

    Sends ``SIGTERM`` to the tree (:class:`ProcessTree`; by default the process's group,
    session and descendants), waits up to ``grace`` seconds, then sends ``SIGKILL`` to
    whatever is left. Shielded from cancellation. The process must have been started
    with ``start_new_session=True`` (on Windows only the process itself is killed).
    """
    with anyio.CancelScope(shield=True):
        if os.name != "posix":  # pragma: no cover - exercised on Windows only
            if process.returncode is None:
                process.kill()
            await process.wait()
            return
        await (tree or ProcessTree(process.pid)).kill(grace)
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
    """Start ``command`` in a session and group of its own; on exit, kill its tree.

    Whatever ends the block (normal exit, an error, the call being cancelled or timing
    out) every process the command started that is still running is stopped, also those
    that left its group (:class:`ProcessTree`): ``SIGTERM``, then ``SIGKILL`` after
    ``grace`` seconds, or after ``cancel_grace`` seconds when the block is left by
    cancellation (so that a cancelled call returns at once, even when the command ignores
    ``SIGTERM``). Extra arguments go to :func:`anyio.open_process` (``stdin``,
    ``stdout``, ``stderr``, ``cwd``, ``env``); the environment gets the tree's tag.

    Example:
        ``async with process_group(["make", "test"], stdout=PIPE) as proc: ...``
    """
    tree: ProcessTree | None = None
    protect_host()
    if os.name == "posix":
        kwargs["start_new_session"] = True
        tag, kwargs["env"] = ProcessTree.tag_environment(kwargs.get("env"))
    try:
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(command, **kwargs)
    except BaseException:
        if os.name == "posix":  # started, then interrupted: what it started may run
            ProcessTree(-1, tag).kill_now()
        raise
    if os.name == "posix":
        tree = ProcessTree(process.pid, tag)
    wait = grace
    try:
        yield process
    except anyio.get_cancelled_exc_class():
        wait = min(grace, cancel_grace)
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await kill_process_group(process, grace=wait, tree=tree)
            await process.aclose()
