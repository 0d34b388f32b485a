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
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc
from toolweave.processes import ProcessTree, boot_id, process_alive, protect_host

__all__ = [
    "BackgroundProcess",
    "ExitCallback",
    "LocalTerminal",
    "RunningCommand",
    "Terminal",
    "exit_file",
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
        """Stop the command and every process it started (its tree), even when cancelled."""
        ...

    async def wait(self) -> int:
        """Wait until the shell (the process :meth:`Terminal.run` started) exits, whatever
        its output does; its exit code. Cancellable: the caller bounds it. (A terminal
        without it: the command is taken to end with its output, its leftovers then
        stopped after the kill grace.)"""
        ...

    async def stop_leftovers(self) -> bool:
        """Once the shell has exited: stop what it left running.

        Processes the command started and left behind (``cmd &`` with its output
        redirected, ``setsid daemon``) are stopped. Called after :meth:`wait` returned;
        should the shell still run, it gets a short grace to exit and is stopped with the
        rest. Runs even when cancelled.

        Returns:
            Whether any process was left running (and so was stopped).
        """
        ...

    async def aclose(self) -> None:
        """Release the pipe and reap the process, even when cancelled.

        A command still running here was given up (its call was cancelled or failed,
        or its stream was closed early): stop its whole tree at once, with no more
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

    def tree_alive(self) -> bool:
        """Whether any process of the command still runs: its shell, or what it started
        (also once the shell has ended, or was killed on its own). Looks at every
        process of the machine: not for a tight loop."""
        ...

    async def kill(self) -> None:
        """Stop the command and every process it started (its tree), even when cancelled."""
        ...


class Terminal:
    """Runs shell commands for the shell tools; subclass it to run them elsewhere.

    Every command runs in a session and process group of its own, and is tracked with
    every process it starts (:class:`toolweave.processes.ProcessTree`), so that stopping
    it stops everything it started, also what left its group.
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

        ``on_exit`` is called once with the exit code when the command ends, in this
        host. A terminal whose commands can record their own end also writes
        ``{"exit_code": N}`` to :func:`exit_file` ``(output)`` when the command ends,
        replacing it in one step, so that a host that did not start the task (the one
        that did has exited) learns how it ended; without that file such a task is
        reported as ``lost``.

        Raises:
            OSError: The shell could not be started.
        """
        raise NotImplementedError

    def attach(self, ref: Mapping[str, Any]) -> BackgroundProcess | None:
        """Find a background process again from its :meth:`BackgroundProcess.ref`.

        Used after the host restarted. Returns ``None`` when the process is gone.
        """
        raise NotImplementedError


def exit_file(output: Path) -> Path:
    """Where the end of the background command writing to ``output`` is recorded."""
    return output.with_suffix(".exit")


_RECORD_END = (
    '"$0" -c "$1"; code=$?; '
    'printf \'{"exit_code": %d}\\n\' "$code" >"$2.$$" && mv -f "$2.$$" "$2"; '
    'exit "$code"'
)
"""The shell program around a background command (``$0``: the shell, ``$1``: the
command, ``$2``: the exit file): it runs the command in a shell of its own, so that
neither ``exit`` nor ``exec`` in it skips what follows, then writes the exit code
next to the output, whoever started it and whether or not that host still runs. A
command ended by signal N gives 128 + N, as shells report it."""


def default_shell() -> str:
    """``bash`` when the machine has it, else ``/bin/sh``."""
    return shutil.which("bash") or "/bin/sh"


class LocalTerminal(Terminal):
    """Runs commands on this machine, each in a new session and process group.

    Args:
        shell: The shell that runs ``shell -c command`` (default: ``bash``, else ``sh``).
        kill_grace: Seconds a command's processes get to exit after SIGTERM before SIGKILL
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
        protect_host()
        tag, tagged = ProcessTree.tag_environment(env)
        try:
            with anyio.CancelScope(shield=True):
                process = await anyio.open_process(
                    [self.shell, "-c", command],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    cwd=cwd,
                    env=tagged,
                    start_new_session=True,
                )
        except BaseException:
            # Interrupted after the fork (asyncio then kills the shell alone): whatever
            # the shell started already carries the tag.
            ProcessTree(-1, tag).kill_now()
            raise
        tree = ProcessTree(process.pid, tag)
        return _PipedProcess(process, tree, self.kill_grace, self.cancel_grace)

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
        protect_host()
        tag, tagged = ProcessTree.tag_environment(env)
        ends = [self.shell, "-c", _RECORD_END, self.shell, command, str(exit_file(output))]
        with open(output, "ab") as sink:
            popen = subprocess.Popen(
                ends,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=tagged,
                start_new_session=True,
                close_fds=True,
            )
        return _SpawnedProcess(popen, ProcessTree(popen.pid, tag), self.kill_grace, on_exit)

    def attach(self, ref: Mapping[str, Any]) -> BackgroundProcess | None:
        """See :meth:`Terminal.attach`."""
        pid = ref.get("pid")
        if not isinstance(pid, int):
            return None
        started = ref.get("start")
        boot = ref.get("boot")
        if boot is not None and boot != boot_id():
            return None
        tag = ref.get("tag")
        tree = ProcessTree(
            pid,
            tag if isinstance(tag, str) else None,
            start=started if isinstance(started, int) else None,
        )
        process = _AttachedProcess(tree, self.kill_grace)
        return process if process.running else None


class _PipedProcess:
    """A foreground command started by :class:`LocalTerminal`."""

    __slots__ = ("_cancel_grace", "_grace", "_process", "_tree")

    def __init__(
        self, process: anyio.abc.Process, tree: ProcessTree, grace: float, cancel_grace: float
    ) -> None:
        self._process = process
        self._tree = tree
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
        await self._tree.kill(self._grace)

    async def wait(self) -> int:
        return await self._process.wait()

    async def stop_leftovers(self) -> bool:
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self._grace):
                await self._process.wait()
            # Reaped, the shell is no longer a member: what is still there, it left.
            left = self._tree.alive()
            if left:
                await self._tree.kill(self._grace)
        return left

    async def aclose(self) -> None:
        try:
            with anyio.CancelScope(shield=True):
                await self._tree.kill(self._cancel_grace)
                await self._process.aclose()
        except BaseException:
            self._tree.kill_now()  # the cancellation got through the shield
            raise


class _SpawnedProcess:
    """A background command started by :class:`LocalTerminal` in this host.

    A thread (its monitor) waits for the shell and reports its exit code."""

    __slots__ = ("_grace", "_monitor", "_popen", "_tree")

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        tree: ProcessTree,
        grace: float,
        on_exit: ExitCallback,
    ) -> None:
        self._popen = popen
        self._tree = tree
        self._grace = grace

        def watch() -> None:
            code = popen.wait()
            on_exit(code)

        self._monitor = threading.Thread(
            target=watch, name=f"toolweave-task-{popen.pid}", daemon=True
        )
        self._monitor.start()

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
        return {
            "pid": self._popen.pid,
            "start": self._tree.start,
            "boot": boot_id(),
            "tag": self._tree.tag,
        }

    def tree_alive(self) -> bool:
        return self._tree.alive()

    async def kill(self) -> None:
        """Stop the tree, then wait (at most ``grace`` more) until the monitor is done."""
        await self._tree.kill(self._grace)
        with anyio.CancelScope(shield=True), anyio.move_on_after(max(self._grace, 2.0)):
            for delay in _polls():  # the monitor reports in the event loop: never block it
                if not self._monitor.is_alive():
                    break
                await anyio.sleep(delay)


def _polls() -> Iterator[float]:
    """Sleep lengths for polling a state with no event to wait on: 5 ms up to 50 ms."""
    delay = 0.005
    while True:
        yield delay
        delay = min(delay * 2, 0.05)


async def wait_reaped(process: BackgroundProcess, *, seconds: float = 2.0) -> None:
    """Wait (shielded, at most ``seconds``) until a killed process is seen gone."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(seconds):
        for delay in _polls():  # ended by a signal already sent: no event to wait on
            if not process.running:
                return
            await anyio.sleep(delay)


class _AttachedProcess:
    """A background command found again after the host restarted (not our child)."""

    __slots__ = ("_grace", "_tree")

    def __init__(self, tree: ProcessTree, grace: float) -> None:
        self._tree = tree
        self._grace = grace

    @property
    def pid(self) -> int:
        return self._tree.root

    @property
    def running(self) -> bool:
        return process_alive(self._tree.root, self._tree.start)

    @property
    def returncode(self) -> int | None:
        return None

    def ref(self) -> dict[str, Any]:
        return {
            "pid": self._tree.root,
            "start": self._tree.start,
            "boot": boot_id(),
            "tag": self._tree.tag,
        }

    def tree_alive(self) -> bool:
        return self._tree.alive()

    async def kill(self) -> None:
        await self._tree.kill(self._grace)
