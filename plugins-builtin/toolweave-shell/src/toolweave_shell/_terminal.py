"""The terminal backend: how a command starts, streams its output and is stopped.

The shell tools never start processes themselves; they ask the session's
:class:`Terminal` resource. The pack provides a :class:`LocalTerminal` for every
session; a host that runs commands elsewhere (a container, a remote machine) inserts
its own :class:`Terminal` subclass into the resources first, and the pack leaves it
alone.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc

from toolweave_shell._procs import (
    boot_id,
    group_alive,
    kill_group,
    process_alive,
    signal_group,
    start_ticks,
)

__all__ = [
    "BackgroundProcess",
    "ExitCallback",
    "LocalTerminal",
    "RunningCommand",
    "Terminal",
    "wait_reaped",
]

ExitCallback = Callable[[int | None], None]
"""Called once, from any thread, when a background process ends (its exit code)."""


class RunningCommand(Protocol):
    """A command started in the foreground: its combined output arrives through a pipe."""

    @property
    def pid(self) -> int:
        """The process id of the command's shell (also its process group id)."""
        ...

    @property
    def returncode(self) -> int | None:
        """The exit code once the shell has ended (negative: killed by that signal)."""
        ...

    async def receive(self) -> bytes:
        """The next chunk of combined stdout and stderr; ``b""`` once the pipe is closed."""
        ...

    async def kill(self) -> None:
        """Stop the whole process group (children and grandchildren), even when cancelled."""
        ...

    async def stop_leftovers(self) -> bool:
        """Once the output has ended: let the shell exit, then stop what it left running.

        Processes the command started in its process group and left behind (``cmd &``
        with its output redirected) are stopped; so is a shell that closed its output
        but does not exit. Runs even when cancelled.

        Returns:
            Whether any process was left running (and so was stopped).
        """
        ...

    async def aclose(self) -> None:
        """Release the pipe and reap the process, even when cancelled.

        A command still running here was given up (its call was cancelled or failed,
        or its stream was closed early): stop its whole group at once, with no more
        than a short grace, so that the cancelled call returns promptly.
        """
        ...


class BackgroundProcess(Protocol):
    """A command started in the background, writing its output to a file."""

    @property
    def pid(self) -> int:
        """The process id of the command's shell (also its process group id)."""
        ...

    @property
    def running(self) -> bool:
        """Whether the command still runs (checked now, never blocks)."""
        ...

    @property
    def returncode(self) -> int | None:
        """The exit code when known (``None`` while running, or when it cannot be known)."""
        ...

    def ref(self) -> dict[str, Any]:
        """JSON-able data that lets :meth:`Terminal.attach` find the process again."""
        ...

    async def kill(self) -> None:
        """Stop the whole process group, even when cancelled."""
        ...


class Terminal:
    """Runs shell commands for the shell tools; subclass it to run them elsewhere.

    Every command runs in a process group of its own, so that stopping it stops
    everything it started.
    """

    async def run(self, command: str, *, cwd: Path, env: Mapping[str, str]) -> RunningCommand:
        """Start ``command`` with its combined output piped back.

        Raises:
            OSError: The shell could not be started.
        """
        raise NotImplementedError

    def spawn(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        output: Path,
        on_exit: ExitCallback,
    ) -> BackgroundProcess:
        """Start ``command`` in the background, appending its combined output to ``output``.

        ``on_exit`` is called once with the exit code when the command ends.

        Raises:
            OSError: The shell could not be started.
        """
        raise NotImplementedError

    def attach(self, ref: Mapping[str, Any]) -> BackgroundProcess | None:
        """Find a background process again from its :meth:`BackgroundProcess.ref`.

        Used after the host restarted. Returns ``None`` when the process is gone.
        """
        raise NotImplementedError


def default_shell() -> str:
    """``bash`` when the machine has it, else ``/bin/sh``."""
    return shutil.which("bash") or "/bin/sh"


class LocalTerminal(Terminal):
    """Runs commands on this machine, each in a new session and process group.

    Args:
        shell: The shell that runs ``shell -c command`` (default: ``bash``, else ``sh``).
        kill_grace: Seconds a process group gets to exit after SIGTERM before SIGKILL
            when a command is stopped on purpose (it ran out of time, a task is killed).
        cancel_grace: The same when a command is given up (its call cancelled, its
            stream closed early): short, so that a cancelled call returns at once.
    """

    def __init__(
        self, *, shell: str | None = None, kill_grace: float = 2.0, cancel_grace: float = 0.1
    ) -> None:
        self.shell = shell or default_shell()
        self.kill_grace = kill_grace
        self.cancel_grace = min(cancel_grace, kill_grace)

    def __repr__(self) -> str:
        return (
            f"LocalTerminal(shell={self.shell!r}, kill_grace={self.kill_grace!r}, "
            f"cancel_grace={self.cancel_grace!r})"
        )

    async def run(self, command: str, *, cwd: Path, env: Mapping[str, str]) -> RunningCommand:
        """See :meth:`Terminal.run`."""
        process = await anyio.open_process(
            [self.shell, "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
        return _PipedProcess(process, self.kill_grace, self.cancel_grace)

    def spawn(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        output: Path,
        on_exit: ExitCallback,
    ) -> BackgroundProcess:
        """See :meth:`Terminal.spawn`."""
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(output, "ab") as sink:
            popen = subprocess.Popen(
                [self.shell, "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=dict(env),
                start_new_session=True,
                close_fds=True,
            )
        return _SpawnedProcess(popen, self.kill_grace, on_exit)

    def attach(self, ref: Mapping[str, Any]) -> BackgroundProcess | None:
        """See :meth:`Terminal.attach`."""
        pid = ref.get("pid")
        if not isinstance(pid, int):
            return None
        started = ref.get("start")
        boot = ref.get("boot")
        if boot is not None and boot != boot_id():
            return None
        process = _AttachedProcess(
            pid, started if isinstance(started, int) else None, self.kill_grace
        )
        return process if process.running else None


class _PipedProcess:
    """A foreground command started by :class:`LocalTerminal`."""

    __slots__ = ("_cancel_grace", "_grace", "_process")

    def __init__(self, process: anyio.abc.Process, grace: float, cancel_grace: float) -> None:
        self._process = process
        self._grace = grace
        self._cancel_grace = cancel_grace

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def receive(self) -> bytes:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            return await stdout.receive(65536)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return b""

    async def kill(self) -> None:
        await kill_group(self._process.pid, self._grace)

    async def stop_leftovers(self) -> bool:
        pgid = self._process.pid
        left = False
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self._grace):
                await self._process.wait()
            # Reaped, the shell no longer holds its id: a group still there is what it left.
            left = signal_group(pgid, 0) and group_alive(pgid)
            if left:
                await kill_group(pgid, self._grace)
        return left

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            if self._process.returncode is None:
                await kill_group(self._process.pid, self._cancel_grace)
            await self._process.aclose()


class _SpawnedProcess:
    """A background command started by :class:`LocalTerminal` in this host."""

    __slots__ = ("_grace", "_popen", "_start")

    def __init__(self, popen: subprocess.Popen[bytes], grace: float, on_exit: ExitCallback) -> None:
        self._popen = popen
        self._grace = grace
        self._start = start_ticks(popen.pid)

        def watch() -> None:
            code = popen.wait()
            on_exit(code)

        threading.Thread(target=watch, name=f"toolweave-task-{popen.pid}", daemon=True).start()

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def running(self) -> bool:
        return self._popen.returncode is None

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    def ref(self) -> dict[str, Any]:
        return {"pid": self._popen.pid, "start": self._start, "boot": boot_id()}

    async def kill(self) -> None:
        await kill_group(self._popen.pid, self._grace)
        await wait_reaped(self)


async def wait_reaped(process: BackgroundProcess, *, seconds: float = 2.0) -> None:
    """Wait (shielded, at most ``seconds``) until a killed process is seen gone."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(seconds):
        delay = 0.005
        while process.running:  # ended by a signal already sent: no event to wait on
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)


class _AttachedProcess:
    """A background command found again after the host restarted (not our child)."""

    __slots__ = ("_grace", "_pid", "_start")

    def __init__(self, pid: int, start: int | None, grace: float) -> None:
        self._pid = pid
        self._start = start
        self._grace = grace

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def running(self) -> bool:
        return process_alive(self._pid, self._start)

    @property
    def returncode(self) -> int | None:
        return None

    def ref(self) -> dict[str, Any]:
        return {"pid": self._pid, "start": self._start, "boot": boot_id()}

    async def kill(self) -> None:
        if self.running:  # the id still names the process we started: its own group
            await kill_group(self._pid, self._grace)
