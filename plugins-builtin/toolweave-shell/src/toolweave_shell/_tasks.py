"""Background tasks: commands that outlive the call that started them.

A task's record (command, status, exit code, where its output goes, how much of it
the model has read) is persisted session state (:class:`ShellTasks`), so a host that
restarts still knows its tasks. The live process handles are kept by
:class:`BackgroundTasks`, a resource that may be shared by the host's sessions; each
handle remembers the session that started (or found again) its task, and closing that
session stops its tasks, and only its. Output goes to a
file per task; when a task ends, a small file beside it records the exit code: the
task's shell writes it (:func:`~toolweave_shell._terminal.exit_file`), and the host
that started the task, when it still runs, writes it again with what it knows better
(a signal, a kill by a tool). So any host, also one started after the first exited,
learns how a task ended. A task whose process is gone with no such record (its shell
was killed too, or the machine restarted) is reported as ``lost``.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio
import anyio.lowlevel
from anyio.from_thread import run_sync as run_in_loop
from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, ToolError, preview
from toolweave.runtime import Notification

from toolweave_shell._notify import EXECUTION_NOTIFICATIONS, end_notification
from toolweave_shell._output import cap_text, omission_marker
from toolweave_shell._terminal import BackgroundProcess, Terminal, exit_file, wait_reaped

__all__ = [
    "BackgroundTasks",
    "ShellTasks",
    "TaskOwner",
    "TaskRecord",
    "TaskStatus",
    "default_task_root",
    "owner_of",
    "start_background",
]

logger = logging.getLogger("toolweave.shell")

TaskStatus = Literal["running", "completed", "failed", "killed", "lost"]
"""``completed``: exit code 0; ``failed``: another exit code; ``killed``: stopped by a
tool; ``lost``: the process is gone and how it ended was not recorded (its shell was
killed with it, or the machine restarted)."""

FINISHED: frozenset[str] = frozenset({"completed", "failed", "killed", "lost"})


class TaskRecord(BaseModel):
    """What the session remembers about one background task."""

    id: str
    """The task id the model uses (``task-3``)."""

    command: str
    """The command line."""

    description: str | None = None
    """What the command does, as the model described it."""

    status: TaskStatus = "running"
    """Where the task stands."""

    exit_code: int | None = None
    """The exit code once known (negative: the task's shell was killed by that signal;
    128 + N: a command it ran was ended by signal N)."""

    pid: int = 0
    """The process id of the task's shell (also its process group id)."""

    process: dict[str, Any] = Field(default_factory=dict)
    """The terminal's reference to the process, to find it again after a restart."""

    started_at: float = 0.0
    """When the task started (seconds since the epoch)."""

    ended_at: float | None = None
    """When the task's end was seen (seconds since the epoch)."""

    output_path: str = ""
    """The file the task's combined output goes to."""

    read_offset: int = 0
    """How many bytes of the output the model has read."""

    note: str | None = None
    """Why the task ended the way it did, when that needs saying."""

    @property
    def finished(self) -> bool:
        """Whether the task has ended (in any way)."""
        return self.status in FINISHED


class ShellTasks(BaseModel):
    """The background tasks of a session (persisted session state)."""

    state_key: ClassVar[str] = "shell.tasks"

    tasks: dict[str, TaskRecord] = Field(default_factory=dict)
    """Every task started in the session, by id, oldest first."""

    next_number: int = 1
    """The number of the next task id."""


def default_task_root() -> Path:
    """Where task output goes unless the host says otherwise: a private temp folder."""
    uid = getattr(os, "getuid", lambda: "user")()
    return Path(tempfile.gettempdir()) / f"toolweave-{uid}" / "tasks"


def _private_folder(path: Path) -> None:
    """Make ``path`` (mode 0o700), or check the one there: a folder, not a link, of this
    user, that only this user may enter (a mode that lets others in is tightened).

    Task output can hold what commands print (tokens, keys); under the shared temp
    folder another user could have made the folder first and read it, or put links in
    it. Where the system has no user ids (Windows) only the kind is checked.

    Raises:
        OSError: ``path`` is not a folder, is a link, or belongs to another user.
    """
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(f"{path} is not a folder (a link or a file is there)")
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return
    if info.st_uid != getuid():
        raise PermissionError(
            f"{path} belongs to another user (uid {info.st_uid}); remove it, or give "
            "BackgroundTasks a root of your own"
        )
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)


def _folder_name(session_id: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", session_id) and session_id not in {".", ".."}:
        return session_id
    return hashlib.sha256(session_id.encode()).hexdigest()[:32]


def _complete_utf8(data: bytes) -> int:
    """How many leading bytes of ``data`` end on a character boundary."""
    size = len(data)
    for back in range(1, min(4, size) + 1):
        byte = data[size - back]
        if byte < 0x80:
            return size
        if byte >= 0xC0:  # the leading byte of the last sequence: is the sequence whole?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return size if back >= need else size - back
    return size


class TaskOwner:
    """Stands for one :class:`~toolweave.Session` object among the owners of tasks.

    The pack puts one into each session's own resources; closing the session stops the
    tasks it owns. Compared by identity: two sessions with the same id (a host that
    restarted) own their tasks separately.
    """

    __slots__ = ("session_id",)

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"TaskOwner({self.session_id!r})"


def owner_of(ctx: Context) -> TaskOwner | None:
    """The owner of the tasks the calling session starts (``None``: no session closes them)."""
    return ctx.resources.get(TaskOwner)


class BackgroundTasks:
    """The live processes of background tasks, for every session of a host.

    The pack puts one into the resources of each session that has none; a host that
    wants task output elsewhere inserts its own (``BackgroundTasks(root=...)``) into the
    shared resources first. Shared or not, closing a session (:meth:`close_owner`,
    called by the pack when the session closes) stops only the tasks that session
    started or found again; :meth:`kill_all` stops every task, for a host shutting down.

    Args:
        root: The folder that holds one folder of task output per session.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_task_root()
        self._live: dict[tuple[str, str], BackgroundProcess] = {}
        self._exits: dict[tuple[str, str], int | None] = {}
        self._killing: set[tuple[str, str]] = set()
        self._owners: dict[tuple[str, str], TaskOwner] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"BackgroundTasks(root={str(self.root)!r}, live={len(self._live)})"

    def folder(self, session_id: str) -> Path:
        """The folder holding the output of ``session_id``'s tasks."""
        return self.root / _folder_name(session_id)

    def _prepare(self, folder: Path) -> None:
        """Make ``folder`` ready for output: private to this user, as are the folders
        of the default root (``<temp>/toolweave-<uid>/tasks``); a root the host chose
        is created as needed and otherwise left as the host made it."""
        if self.root == default_task_root():
            _private_folder(self.root.parent)
            _private_folder(self.root)
        else:
            self.root.mkdir(parents=True, exist_ok=True)
        _private_folder(folder)

    # -- starting ---------------------------------------------------------------------

    def start(
        self,
        state: ShellTasks,
        terminal: Terminal,
        *,
        session_id: str,
        command: str,
        description: str | None,
        cwd: Path,
        env: Mapping[str, str],
        on_end: Callable[[str, int | None, bool], None] | None = None,
        owner: TaskOwner | None = None,
    ) -> TaskRecord:
        """Start ``command`` as a new task of ``state`` and record it there.

        Args:
            on_end: Called from another thread when the task ends, with the task id, the
                exit code and whether a tool killed it.
            owner: The session whose closing stops the task (``None``: none does).

        Raises:
            ToolError: ``execution_error`` when the shell could not be started.
        """
        number = state.next_number
        task_id = f"task-{number}"
        while task_id in state.tasks:
            number += 1
            task_id = f"task-{number}"
        folder = self.folder(session_id)
        try:
            self._prepare(folder)
        except OSError as exc:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"The folder for the task's output cannot be used: {exc}",
            ) from exc
        state.next_number = number + 1
        output = folder / f"{task_id}.log"
        ended_file = exit_file(output)
        for stale in (output, ended_file):
            with contextlib.suppress(OSError):
                stale.unlink(missing_ok=True)
        key = (session_id, task_id)
        record = TaskRecord(
            id=task_id,
            command=command,
            description=description,
            started_at=time.time(),
            output_path=str(output),
        )

        def ended(code: int | None) -> None:
            with self._lock:
                self._exits[key] = code
                killed = key in self._killing
            data = {"exit_code": code, "ended_at": time.time(), "killed": killed}
            try:
                tmp = ended_file.with_suffix(".exit.tmp")
                tmp.write_text(json.dumps(data))
                os.replace(tmp, ended_file)
            except OSError:
                logger.warning("could not record the end of %s in %s", task_id, ended_file)
            if on_end is not None:
                try:
                    on_end(task_id, code, killed)
                except Exception:
                    logger.exception("reporting the end of %s failed", task_id)

        try:
            process = terminal.spawn(command, cwd=cwd, env=env, output=output, on_exit=ended)
        except OSError as exc:
            state.next_number = number  # the number was not used
            raise ToolError(
                ErrorKind.EXECUTION_ERROR, f"The shell could not be started: {exc}"
            ) from exc
        record.pid = process.pid
        record.process = process.ref()
        with self._lock:
            self._live[key] = process
            if owner is not None:
                self._owners[key] = owner
        state.tasks[task_id] = record
        return record

    # -- keeping records true -----------------------------------------------------------

    def refresh(
        self,
        state: ShellTasks,
        terminal: Terminal,
        session_id: str,
        owner: TaskOwner | None = None,
    ) -> None:
        """Bring every running record of ``state`` up to date with its process.

        A task whose process is found again (after a restart) is owned by ``owner``."""
        for record in state.tasks.values():
            if record.finished:
                continue
            key = (session_id, record.id)
            with self._lock:
                live = self._live.get(key)
                known = key in self._exits
                code = self._exits.get(key)
                killed = key in self._killing
            if known:
                self._finish(record, code, killed)
                continue
            if live is None:
                ended = self._read_exit_file(record)
                if ended is not None:
                    self._finish(record, ended[0], ended[1], ended_at=ended[2])
                    continue
                live = terminal.attach(record.process) if record.process else None
                if live is None:
                    self._lose(record)
                    continue
                with self._lock:
                    self._live[key] = live
                    if owner is not None:
                        self._owners.setdefault(key, owner)
            if not live.running and live.returncode is None:
                ended = self._read_exit_file(record)
                if ended is not None:
                    self._finish(record, ended[0], ended[1], ended_at=ended[2])
                elif killed:
                    self._finish(record, None, True)
                else:
                    self._lose(record)

    def _finish(
        self, record: TaskRecord, code: int | None, killed: bool, *, ended_at: float | None = None
    ) -> None:
        record.exit_code = code
        record.ended_at = ended_at if ended_at is not None else time.time()
        if killed:
            record.status = "killed"
        else:
            record.status = "completed" if code == 0 else "failed"

    def _lose(self, record: TaskRecord) -> None:
        record.status = "lost"
        record.ended_at = time.time()
        record.note = (
            "the process is gone and how it ended was not recorded (its shell was killed "
            "with it, or the machine restarted), so its exit code is unknown; its output "
            "so far can still be read"
        )

    def _read_exit_file(self, record: TaskRecord) -> tuple[int | None, bool, float] | None:
        path = exit_file(Path(record.output_path))
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        code = data.get("exit_code")
        ended_at = data.get("ended_at")
        return (
            code if isinstance(code, int) else None,
            bool(data.get("killed")),
            float(ended_at) if isinstance(ended_at, (int, float)) else time.time(),
        )

    # -- acting on tasks ------------------------------------------------------------------

    def get(self, state: ShellTasks, task_id: str) -> TaskRecord:
        """The record of ``task_id``.

        Raises:
            ToolError: ``not_found`` naming the known task ids.
        """
        record = state.tasks.get(task_id.strip())
        if record is None:
            known = ", ".join(state.tasks) or "none yet"
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"There is no background task {preview(task_id)!r} in this session (tasks: {known}).",
            )
        return record

    def lingers(self, session_id: str, record: TaskRecord) -> bool:
        """Whether ``record`` has ended while processes it started still run (its shell
        was killed on its own, or it left them behind). Known only for a task this host
        started or found again while it ran; looks at every process of the machine."""
        if not record.finished:
            return False
        with self._lock:
            live = self._live.get((session_id, record.id))
        return live is not None and _tree_alive(live)

    async def kill(
        self, state: ShellTasks, terminal: Terminal, session_id: str, record: TaskRecord
    ) -> bool:
        """Stop a task's whole process tree; a running task is recorded as killed.

        A task that has ended keeps its record, but processes it started that still run
        are stopped too (:meth:`lingers`).

        Returns:
            Whether anything was stopped.
        """
        key = (session_id, record.id)
        with self._lock:
            if not record.finished:
                self._killing.add(key)
            live = self._live.get(key)
        if live is None and not record.finished:
            self.refresh(state, terminal, session_id)
            with self._lock:
                live = self._live.get(key)
        stopped = False
        if live is not None and (not record.finished or _tree_alive(live)):
            await live.kill()
            await wait_reaped(live)
            stopped = True
        self.refresh(state, terminal, session_id)
        if not record.finished and live is not None and not live.running:
            self._finish(record, live.returncode, True)
        return stopped

    def read_new(self, record: TaskRecord, limit: int) -> tuple[str, bool]:
        """The output the model has not read yet (at most about ``limit`` characters).

        Moves the record's read offset to the end of what was returned. Output in the
        middle of a long stretch is left out (head and tail kept, with a marker).

        Returns:
            The text and whether some of it was left out.
        """
        path = Path(record.output_path)
        try:
            with open(path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                start = min(record.read_offset, size)
                if size <= start:
                    return "", False
                budget = max(limit, 1) * 4  # bytes enough for ``limit`` characters
                if size - start <= 2 * budget:
                    fh.seek(start)
                    data = fh.read(size - start)
                    end = start + len(data)
                    if not record.finished:
                        keep = _complete_utf8(data)
                        end = start + keep
                        data = data[:keep]
                    record.read_offset = end
                    return cap_text(data.decode("utf-8", "replace"), limit)
                fh.seek(start)
                head = fh.read(budget)
                fh.seek(size - budget)
                tail = fh.read(budget)
        except FileNotFoundError:
            return "", False
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        head_text = decoder.decode(head)
        tail_keep = len(tail) if record.finished else _complete_utf8(tail)
        tail_text = tail[:tail_keep].decode("utf-8", "replace")
        record.read_offset = size - budget + tail_keep
        skipped = size - start - len(head) - len(tail)
        half = limit // 2
        head_text = head_text[:half]
        tail_text = tail_text[-(limit - half) :]
        marker = omission_marker(skipped, 0).replace("characters", "bytes and more")
        return head_text + marker + tail_text, True

    async def kill_all(self) -> None:
        """Stop every task this host started or found again (for a host shutting down),
        with every process each started, also those its shell left running."""
        with self._lock:
            items = list(self._live.items())
            self._killing.update(key for key, process in items if process.running)
        await self._stop(items)

    async def close_owner(self, owner: TaskOwner) -> None:
        """Stop the tasks ``owner`` started or found again, and their monitors (the pack
        calls this when the owner's session closes). Other sessions' tasks go on."""
        with self._lock:
            keys = [key for key, held in self._owners.items() if held is owner]
            items = [(key, self._live[key]) for key in keys if key in self._live]
            self._killing.update(key for key, process in items if process.running)
            for key in keys:
                del self._owners[key]
        await self._stop(items)

    async def _stop(self, items: list[tuple[tuple[str, str], BackgroundProcess]]) -> None:
        """Kill each process (even one whose shell ended: what it left may run).

        All at once, so that they share one grace period: closing a session with many
        tasks that ignore SIGTERM costs about one grace period, not one per task."""

        async def stop(process: BackgroundProcess) -> None:
            try:
                await process.kill()
            except Exception:
                logger.exception("stopping background process %s failed", process.pid)

        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for _, process in items:
                    group.start_soon(stop, process)

    def forget(self, session_id: str, task_id: str) -> None:
        """Drop the live handle of a finished task."""
        key = (session_id, task_id)
        with self._lock:
            self._live.pop(key, None)
            self._exits.pop(key, None)
            self._killing.discard(key)
            self._owners.pop(key, None)


def _tree_alive(process: BackgroundProcess) -> bool:
    """:meth:`BackgroundProcess.tree_alive`, or ``running`` for a terminal without it."""
    check = getattr(process, "tree_alive", None)
    return bool(check()) if callable(check) else process.running


def tasks_of(ctx: Context) -> BackgroundTasks:
    """The session's background-task manager (one shared by the host when none is given)."""
    return ctx.resources.get_or_default(BackgroundTasks, BackgroundTasks)


async def start_background(
    ctx: Context,
    terminal: Terminal,
    command: str,
    description: str | None,
    env: Mapping[str, str],
    state: ShellTasks,
) -> TaskRecord:
    """Start ``command`` as a background task of the calling session.

    When the task ends, the session's notifier gets ``execution_complete`` (exit code 0)
    or ``execution_failed``, delivered in the event loop that started it.
    """
    manager = tasks_of(ctx)
    owner = owner_of(ctx)
    manager.refresh(state, terminal, ctx.session_id, owner)
    token = anyio.lowlevel.current_token()
    session = ctx.session
    tool = ctx.entry.tool.fqid if ctx.entry is not None else ""
    call_id = ctx.call_id

    def on_end(task_id: str, code: int | None, killed: bool) -> None:
        notification = Notification(
            name=end_notification(code),
            data={
                "task_id": task_id,
                "command": command,
                "description": description,
                "background": True,
                "exit_code": code,
                "killed": killed,
            },
            tool=tool,
            session_id=session.session_id,
            call_id=call_id,
        )
        with contextlib.suppress(anyio.RunFinishedError, RuntimeError):  # loop gone
            run_in_loop(session.notifier.emit, notification, EXECUTION_NOTIFICATIONS, token=token)

    return manager.start(
        state,
        terminal,
        session_id=ctx.session_id,
        command=command,
        description=description,
        cwd=ctx.session.workspace,
        env=env,
        on_end=on_end,
        owner=owner,
    )
