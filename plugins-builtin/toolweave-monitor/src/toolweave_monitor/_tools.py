"""The monitor tools: ``monitor`` starts one, ``monitors`` lists them with what they
saw, ``stop_monitor`` stops one.

They keep the records in the session state model :class:`MonitorState`, declared with
``state_access = "shared"`` (as the shell pack's task tools do): the watcher threads add
events to the records from the event loop at any moment, and a call never reads,
awaits and writes back, so no call needs to wait for another.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from anyio.from_thread import run_sync as run_in_loop
from anyio.lowlevel import current_token
from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolError, ToolOutput, preview
from toolweave.netguard import AddressPolicy
from toolweave.processes import process_alive, start_ticks
from toolweave.resources import Workspace
from toolweave_shell import BackgroundTasks, LocalTerminal, ShellTasks, Terminal

from toolweave_monitor._monitors import MONITOR_NOTIFICATIONS, Emitter, Monitors
from toolweave_monitor._state import (
    MonitorKind,
    MonitorParams,
    MonitorRecord,
    MonitorState,
)
from toolweave_monitor._watchers import (
    Report,
    Seen,
    UrlCheck,
    read_tail,
    url_status,
    watch_path,
    watch_process,
    watch_url,
)

__all__ = [
    "ListMonitors",
    "ListMonitorsArgs",
    "ListMonitorsResult",
    "Monitor",
    "MonitorArgs",
    "MonitorStarted",
    "MonitorSummary",
    "StopMonitor",
    "StopMonitorArgs",
    "StopMonitorResult",
]

SHOWN_PER_MONITOR = 5
"""New events a listing of every monitor shows per monitor (one monitor: all kept)."""

Body = Callable[[threading.Event, Report], None]


class MonitorSummary(BaseModel):
    """Where one monitor stands, with the events the model has not seen yet."""

    monitor_id: str
    """The monitor's id."""

    kind: MonitorKind
    """What it watches."""

    target: str
    """The path, task id, process id or URL."""

    status: str
    """``running``, ``ended``, ``stopped``, ``failed`` or ``lost``."""

    events: list[str] = Field(default_factory=list)
    """Events shown by this call, oldest first."""

    earlier_events: int = 0
    """New events not shown (no longer kept, or past what one listing shows)."""

    last_status: str | None = None
    """URLs: the latest status."""

    exit_code: int | None = None
    """Tasks: the exit code once known."""

    output_tail: str | None = None
    """Tasks: the end of the output once the task ended."""

    note: str | None = None
    """Why it stopped the way it did, when that needs saying."""

    def text(self) -> str:
        """The monitor's line, then its events."""
        head = f"{self.monitor_id} ({self.kind} {self.target}): {self.status}"
        if self.last_status is not None:
            head += f", status {self.last_status}"
        if self.note:
            head += f" ({self.note})"
        lines = [head]
        if self.earlier_events:
            lines.append(f"  ... {self.earlier_events} earlier new events not shown")
        lines += [f"  - {event}" for event in self.events]
        if self.output_tail:
            lines.append("  output tail:\n" + self.output_tail.rstrip("\n"))
        return "\n".join(lines)


def _summary(record: MonitorRecord, *, limit: int | None) -> MonitorSummary:
    """``record``'s summary with its unseen events (at most ``limit``), now seen."""
    new = record.total_events - record.shown_events
    kept = record.events[-new:] if new > 0 else []
    shown = kept if limit is None else kept[-limit:]
    record.shown_events = record.total_events
    return MonitorSummary(
        monitor_id=record.id,
        kind=record.kind,
        target=record.target,
        status=record.status,
        events=[event.text for event in shown],
        earlier_events=max(new, 0) - len(shown),
        last_status=record.last_status,
        exit_code=record.exit_code,
        output_tail=record.output_tail,
        note=record.note,
    )


def monitors_of(ctx: Context) -> Monitors:
    """The session's monitors (the pack provides them; a session without the pack's
    resources gets its own on first use)."""
    found = ctx.resources.get(Monitors)
    if found is None:
        found = Monitors(ctx.session)
        ctx.session.set_resource(found)
        ctx.session.on_close(found.close)
    return found


def _prepare(ctx: Context) -> tuple[MonitorState, Monitors]:
    state = ctx.state(MonitorState)
    monitors = monitors_of(ctx)
    monitors.reconcile(state)
    return state, monitors


def _find(state: MonitorState, monitor_id: str) -> MonitorRecord:
    record = state.monitors.get(monitor_id.strip())
    if record is None:
        known = ", ".join(state.monitors) or "none yet"
        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"There is no monitor {preview(monitor_id)!r} in this session (monitors: {known}).",
        )
    return record


# -- monitor ------------------------------------------------------------------------------


class MonitorArgs(BaseModel):
    """Arguments of ``monitor``: exactly one of ``path``, ``task_id``, ``pid``, ``url``."""

    path: str | None = Field(
        default=None,
        description="A file or folder of the workspace to watch for changes (a folder: "
        "everything under it).",
    )
    """A file or folder of the workspace."""

    task_id: str | None = Field(
        default=None,
        description="A background shell task's id (e.g. task-3) to watch until it exits; "
        "its exit code and the end of its output are reported.",
    )
    """A background task of the shell pack."""

    pid: int | None = Field(
        default=None,
        ge=1,
        description="The id of a process running in the workspace to watch until it exits.",
    )
    """A process whose working folder is inside the workspace."""

    url: str | None = Field(
        default=None,
        description="An http or https URL to request periodically; reports when its "
        "status changes (e.g. 503 -> 200, or unreachable).",
    )
    """An http(s) URL."""

    interval_s: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        description="Seconds between two checks of a process or URL (raised to the "
        "configured minimum).",
    )
    """Seconds between two checks (processes and URLs)."""

    description: str | None = Field(
        default=None, max_length=200, description="Why you watch it, in a few words."
    )
    """Why the model watches it."""


class MonitorStarted(ToolOutput):
    """What ``monitor`` returns."""

    monitor_id: str
    """The new monitor's id."""

    kind: MonitorKind
    """What it watches."""

    target: str
    """The path, task id, process id or URL."""

    last_status: str | None = None
    """URLs: the status of the first request."""

    def to_model(self) -> str:
        """One line: what is watched now."""
        status = f" (status now {self.last_status})" if self.last_status else ""
        return (
            f"Started {self.monitor_id}: watching {self.kind} {self.target}{status}. "
            "What it sees is added after your next calls."
        )


class Monitor(Tool[MonitorArgs, MonitorStarted]):
    """Start a background monitor."""

    id = "monitor"
    namespace = "monitor"
    kind = Kind.MONITOR
    description = """\
Watch something in the background and be told when it changes: a file or folder of \
the workspace (`{param:path}`), a background shell task until it exits \
(`{param:task_id}`, with its exit code and the end of its output), a process of the \
workspace until it exits (`{param:pid}`), or an HTTP URL's status (`{param:url}`, e.g. \
a dev server coming up). Give exactly one of them. Returns at once; what the monitor \
sees is added after your next calls, once per change, and \
{name:monitors|the monitor listing} shows it all.

Do not use it to wait for a task in the foreground (use \
{name:wait_tasks|the task wait tool}), to read a file once, or to poll public websites \
often: URL checks are spaced by a configured minimum interval."""
    capabilities = Capabilities(read_only=True, scope="system", timeout=60.0)
    params = MonitorParams
    state = (MonitorState, ShellTasks)
    state_access = "shared"
    emitted_notifications = MONITOR_NOTIFICATIONS

    async def run(self, ctx: Context, args: MonitorArgs) -> MonitorStarted:
        """Check the target, record the monitor, start its thread."""
        given = [
            name for name in ("path", "task_id", "pid", "url") if getattr(args, name) is not None
        ]
        if len(given) != 1:
            what = ", ".join(given) if given else "none of them"
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"Give exactly one of path, task_id, pid or url (got {what}).",
            )
        params = ctx.params(MonitorParams)
        state, monitors = _prepare(ctx)
        # The place is held from the check of the limit on, before anything is awaited
        # (a URL's first request is): calls running at once (several `monitor` calls
        # of one turn) cannot all pass the check. It is given back if the start fails.
        with monitors.reserve(params.max_monitors) as slot:
            record = MonitorRecord(
                id="", kind="file", target="", description=args.description, started_at=time.time()
            )
            body = await self._plan(ctx, args, params, record)
            if monitors.closed:
                raise ToolError(ErrorKind.UNAVAILABLE, "The session is closed; no monitor starts.")
            number = state.next_number
            while f"monitor-{number}" in state.monitors:
                number += 1
            record.id = f"monitor-{number}"
            state.next_number = number + 1
            state.monitors[record.id] = record
            _drop_oldest(state, params.max_records)
            emitter = Emitter(tool=ctx.entry.tool.fqid if ctx.entry else "", call_id=ctx.call_id)
            monitors.start(
                record,
                body,
                emitter=emitter,
                max_events=params.max_events_per_monitor,
                slot=slot,
            )
        return MonitorStarted(
            monitor_id=record.id,
            kind=record.kind,
            target=record.target,
            last_status=record.last_status,
        )

    async def _plan(
        self, ctx: Context, args: MonitorArgs, params: MonitorParams, record: MonitorRecord
    ) -> Body:
        """Fill ``record`` in and return what its thread runs (checking the target now,
        so that a bad one fails this call)."""
        if args.path is not None:
            return _plan_path(ctx, args.path, params, record)
        if args.task_id is not None:
            return _plan_task(ctx, args.task_id, args.interval_s, params, record)
        if args.pid is not None:
            return _plan_pid(ctx, args.pid, args.interval_s, params, record)
        assert args.url is not None
        return await _plan_url(args.url, args.interval_s, params, record)


def _drop_oldest(state: MonitorState, keep: int) -> None:
    """Drop the oldest finished records past ``keep``."""
    finished = [key for key, record in state.monitors.items() if record.finished]
    for key in finished[: max(len(state.monitors) - keep, 0)]:
        del state.monitors[key]


def _interval(asked: float | None, default: float, minimum: float) -> float:
    return max(default if asked is None else asked, minimum)


def _plan_path(ctx: Context, path: str, params: MonitorParams, record: MonitorRecord) -> Body:
    workspace = ctx.require(Workspace)
    target = workspace.resolve(path, must_exist=True)
    is_file = not target.is_dir()
    record.kind = "file" if is_file else "folder"
    record.target = workspace.relative(target)

    def show(changed: str) -> str:
        return workspace.relative(changed)

    def body(stop: threading.Event, report: Report) -> None:
        watch_path(
            target,
            is_file=is_file,
            show=show,
            batch_window_ms=params.batch_window_ms,
            stop=stop,
            report=report,
        )

    return body


def _plan_task(
    ctx: Context,
    task_id: str,
    interval_s: float | None,
    params: MonitorParams,
    record: MonitorRecord,
) -> Body:
    session = ctx.session
    tasks = ctx.resources.get_or_default(BackgroundTasks, BackgroundTasks)
    terminal = ctx.resources.get_or_default(Terminal, LocalTerminal)
    shell = ctx.state(ShellTasks)
    tasks.refresh(shell, terminal, ctx.session_id)
    task = tasks.get(shell, task_id)
    record.kind = "task"
    record.target = task.id
    token = current_token()

    def in_loop() -> tuple[str, int | None, str] | None:
        state = session.state.get(ShellTasks)
        tasks.refresh(state, terminal, session.session_id)
        found = state.tasks.get(task.id)
        if found is None:
            return "lost", None, ""
        return (found.status, found.exit_code, found.output_path) if found.finished else None

    def check() -> Seen | None:
        ended = run_in_loop(in_loop, token=token)
        if ended is None:
            return None
        status, code, output = ended
        how = f"exited with code {code}" if code is not None else status
        return Seen(
            f"{task.id} {how}",
            end="ended",
            exit_code=code,
            output_tail=read_tail(output, params.tail_chars) if output else None,
        )

    return _process_body(check, interval_s, params, record)


def _process_body(
    check: Callable[[], Seen | None],
    interval_s: float | None,
    params: MonitorParams,
    record: MonitorRecord,
) -> Body:
    """What the thread of a task or process monitor runs: ``check`` every interval."""
    interval = record.interval_s = _interval(
        interval_s, params.default_process_interval_s, params.min_process_interval_s
    )

    def body(stop: threading.Event, report: Report) -> None:
        watch_process(check, interval_s=interval, stop=stop, report=report)

    return body


def _plan_pid(
    ctx: Context, pid: int, interval_s: float | None, params: MonitorParams, record: MonitorRecord
) -> Body:
    started = start_ticks(pid)
    if started is None or not process_alive(pid, started):
        raise ToolError(ErrorKind.NOT_FOUND, f"There is no running process {pid}.")
    if pid == os.getpid():
        raise ToolError(ErrorKind.INVALID_PARAMS, "That is the host itself; it cannot be watched.")
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        raise ToolError(
            ErrorKind.PERMISSION_DENIED,
            f"Process {pid}'s working folder cannot be read, so it cannot be told to belong "
            "to the workspace.",
        ) from None
    try:
        ctx.require(Workspace).resolve(cwd)
    except ToolError:
        raise ToolError(
            ErrorKind.PERMISSION_DENIED,
            f"Process {pid} does not run in the workspace; only the workspace's processes "
            "can be watched.",
        ) from None
    record.kind = "process"
    record.target = str(pid)

    def check() -> Seen | None:
        if process_alive(pid, started):
            return None
        return Seen(
            f"process {pid} exited (its exit code is known only to its parent)", end="ended"
        )

    return _process_body(check, interval_s, params, record)


async def _plan_url(
    url: str, interval_s: float | None, params: MonitorParams, record: MonitorRecord
) -> Body:
    policy = AddressPolicy(
        allow_private=params.allow_private,
        allow_loopback=params.allow_loopback,
        allowed_hosts=frozenset(params.allowed_hosts),
    )
    check = UrlCheck(url, policy, params.url_timeout_s, params.max_response_bytes)
    first = await url_status(check)  # the guard's refusal fails this call
    record.kind = "url"
    record.target = url
    record.last_status = first
    record.interval_s = _interval(
        interval_s, params.default_url_interval_s, params.min_url_interval_s
    )
    interval = record.interval_s

    def body(stop: threading.Event, report: Report) -> None:
        watch_url(check, last=first, interval_s=interval, stop=stop, report=report)

    return body


# -- monitors -----------------------------------------------------------------------------


class ListMonitorsArgs(BaseModel):
    """Arguments of ``monitors``."""

    monitor_id: str | None = Field(
        default=None,
        description="Show this monitor with all its kept events (default: every monitor, "
        "with its new events).",
    )
    """One monitor to show in full."""


class ListMonitorsResult(ToolOutput):
    """What ``monitors`` returns."""

    monitors: list[MonitorSummary]
    """The session's monitors, oldest first."""

    def to_model(self) -> str:
        """One block per monitor."""
        if not self.monitors:
            return "No monitors in this session."
        return "\n".join(summary.text() for summary in self.monitors)


class ListMonitors(Tool[ListMonitorsArgs, ListMonitorsResult]):
    """List the session's monitors and what they saw."""

    id = "monitors"
    namespace = "monitor"
    kind = Kind.MONITOR
    description = """\
List this session's monitors (started by {name:monitor}) with where each stands and \
the events you have not seen yet; give `{param:monitor_id}` to see every event one monitor \
kept. Monitors of earlier sessions are listed too, as stopped or lost.

Not for starting or stopping monitors, nor for reading files or task output."""
    capabilities = Capabilities(read_only=True, scope="none", timeout=10.0)
    params = MonitorParams
    state = MonitorState
    state_access = "shared"

    async def run(self, ctx: Context, args: ListMonitorsArgs) -> ListMonitorsResult:
        """Summarise the monitors (their new events are seen from now on)."""
        state, monitors = _prepare(ctx)
        if args.monitor_id is not None:
            record = _find(state, args.monitor_id)
            record.shown_events = max(record.total_events - len(record.events), 0)
            summaries = [_summary(record, limit=None)]
        else:
            summaries = [
                _summary(record, limit=SHOWN_PER_MONITOR) for record in state.monitors.values()
            ]
        monitors.take_pending([summary.monitor_id for summary in summaries])
        return ListMonitorsResult(monitors=summaries)


# -- stop_monitor -------------------------------------------------------------------------


class StopMonitorArgs(BaseModel):
    """Arguments of ``stop_monitor``."""

    monitor_id: str = Field(min_length=1, description="The id of the monitor to stop.")
    """The id of the monitor to stop."""


class StopMonitorResult(ToolOutput):
    """What ``stop_monitor`` returns."""

    monitor: MonitorSummary
    """Where the monitor stands now, with the events you had not seen."""

    already_stopped: bool = False
    """Whether it had stopped before the call."""

    def to_model(self) -> str:
        """The outcome, then the monitor."""
        head = (
            "It had already stopped."
            if self.already_stopped
            else f"Stopped {self.monitor.monitor_id}."
        )
        return f"{head}\n{self.monitor.text()}"


class StopMonitor(Tool[StopMonitorArgs, StopMonitorResult]):
    """Stop a monitor."""

    id = "stop_monitor"
    namespace = "monitor"
    kind = Kind.MONITOR
    description = """\
Stop a monitor started by {name:monitor} and get the events you had not seen. A \
monitor that has already stopped is left as it is.

Not for stopping background tasks or processes themselves \
({name:kill_task|the task kill tool} does that); only the watching stops."""
    capabilities = Capabilities(read_only=True, scope="none", timeout=30.0)
    params = MonitorParams
    state = MonitorState
    state_access = "shared"

    async def run(self, ctx: Context, args: StopMonitorArgs) -> StopMonitorResult:
        """Stop its thread and mark it stopped."""
        state, monitors = _prepare(ctx)
        record = _find(state, args.monitor_id)
        already = record.finished
        if not already:
            await monitors.stop(record, "stopped by stop_monitor")
        monitors.take_pending([record.id])
        return StopMonitorResult(monitor=_summary(record, limit=None), already_stopped=already)
