"""The live monitors of one session: their threads, what they saw, how they stop.

A monitor's record (what it watches, its status, its latest events) is persisted
session state (:class:`MonitorState`); the threads that watch are held by
:class:`Monitors`, a resource each session gets for itself. What a thread sees is
handed to the session's event loop, which adds it to the record, emits a
notification and keeps it for the reminder after the model's next call.

After a host restart the records are there and no thread watches for them: a record
left ``running`` by a host process that is gone is marked ``lost`` (the model starts
the monitor again if it still needs it). Closing a session stops its monitors and
marks them ``stopped``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.lowlevel
from anyio.from_thread import run_sync as run_in_loop
from toolweave import ErrorKind, Session, ToolError
from toolweave.processes import process_alive, start_ticks
from toolweave.runtime import Notification

from toolweave_monitor._state import MonitorEvent, MonitorRecord, MonitorState
from toolweave_monitor._watchers import Report, Seen

__all__ = ["MONITOR_NOTIFICATIONS", "Emitter", "Monitors", "Slot", "add_event"]

logger = logging.getLogger("toolweave.monitor")

MONITOR_NOTIFICATIONS = ("monitor_event", "monitor_ended")
"""Emitted when a monitor sees something, and when it stops on its own (the process
exited, the URL was refused, the folder was removed)."""

JOIN_S = 10.0
"""Seconds :meth:`Monitors.close` waits for the watcher threads to end."""


@dataclass(slots=True)
class _Live:
    thread: threading.Thread
    stop: threading.Event


class Slot:
    """A place among a session's running monitors, held from the check of the limit
    until the monitor's thread starts (:meth:`Monitors.start`) or the start fails (the
    ``with`` block ends without a start: the place is given back)."""

    __slots__ = ("_monitors", "held")

    def __init__(self, monitors: Monitors) -> None:
        self._monitors = monitors
        self.held = True
        """Whether it still counts against the limit as a reservation."""

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self._monitors.release(self)


@dataclass(frozen=True, slots=True)
class Emitter:
    """Where a monitor's notifications go: the tool that started it and its call."""

    tool: str
    call_id: str | None


def _this_runner() -> str:
    pid = os.getpid()
    return f"{pid}:{start_ticks(pid) or 0}:{uuid.uuid4().hex[:8]}"


def _runner_alive(runner: str) -> bool:
    pid, _, rest = runner.partition(":")
    started = rest.partition(":")[0]
    if not pid.isdigit() or not started.isdigit():
        return False
    return process_alive(int(pid), int(started) or None)


class Monitors:
    """The watcher threads of one session (the pack gives each session its own).

    Args:
        session: The session whose state holds the records and whose notifier hears
            what the monitors see.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self.runner = _this_runner()
        """This object in this host process (``pid:start:nonce``), stored in records."""
        self.closed = False
        self._live: dict[str, _Live] = {}
        self._pending: dict[str, list[str]] = {}
        self._reserved = 0
        """Places held by ``monitor`` calls still checking their target."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Monitors(session={self.session.session_id!r}, live={len(self._live)})"

    def running(self) -> list[str]:
        """The ids of the monitors with a live thread."""
        with self._lock:
            return [key for key, live in self._live.items() if live.thread.is_alive()]

    def threads(self) -> list[threading.Thread]:
        """The watcher threads still alive (for hosts and tests)."""
        with self._lock:
            return [live.thread for live in self._live.values() if live.thread.is_alive()]

    # -- starting ---------------------------------------------------------------------

    def reserve(self, limit: int) -> Slot:
        """Hold a place for a monitor about to start, when fewer than ``limit`` run or
        are being started; use the result in a ``with`` block around the start.

        The count and the reservation are one step (no await between them), so calls
        running at once cannot all pass the check before any of them starts.

        Raises:
            ToolError: ``rate_limited`` when ``limit`` monitors run or are starting;
                ``unavailable`` when the session is closed.
        """
        with self._lock:
            if self.closed:
                raise ToolError(ErrorKind.UNAVAILABLE, "The session is closed; no monitor starts.")
            running = [key for key, live in self._live.items() if live.thread.is_alive()]
            if len(running) + self._reserved >= limit:
                starting = f" and {self._reserved} being started" if self._reserved else ""
                listed = f" ({', '.join(running)})" if running else ""
                raise ToolError(
                    ErrorKind.RATE_LIMITED,
                    f"{len(running)} monitors already run{listed}{starting}, the most a "
                    f"session may have is {limit}; stop one first.",
                )
            self._reserved += 1
            return Slot(self)

    def release(self, slot: Slot) -> None:
        """Give back the place ``slot`` holds, unless a monitor took it (twice is
        harmless)."""
        with self._lock:
            if slot.held:
                slot.held = False
                self._reserved -= 1

    def start(
        self,
        record: MonitorRecord,
        body: Callable[[threading.Event, Report], None],
        *,
        emitter: Emitter,
        max_events: int,
        slot: Slot | None = None,
    ) -> None:
        """Run ``body(stop, report)`` on a new thread for ``record`` (already in the state),
        taking the place ``slot`` holds.

        Must be called in the session's event loop: what the thread reports is handed
        back to it.

        Raises:
            ToolError: ``unavailable`` when the session closed meanwhile (no thread
                starts).
        """
        token = anyio.lowlevel.current_token()
        record.runner = self.runner
        stop = threading.Event()

        def report(seen: Seen) -> None:
            with contextlib.suppress(anyio.RunFinishedError, RuntimeError):  # loop gone
                run_in_loop(self._apply, record.id, seen, emitter, max_events, token=token)

        def run() -> None:
            try:
                body(stop, report)
            except Exception:
                logger.exception("monitor %s failed", record.id)

        thread = threading.Thread(target=run, name=f"toolweave-monitor-{record.id}", daemon=True)
        with self._lock:
            if self.closed:
                raise ToolError(ErrorKind.UNAVAILABLE, "The session is closed; no monitor starts.")
            if slot is not None and slot.held:
                slot.held = False
                self._reserved -= 1
            self._live[record.id] = _Live(thread, stop)
            # Started under the lock: a thread counted as live is alive from now on.
            thread.start()

    def _apply(self, monitor_id: str, seen: Seen, emitter: Emitter, max_events: int) -> None:
        """In the event loop: add what a watcher saw to its record, keep it for the
        reminder and emit the notification."""
        record = self.session.state.get(MonitorState).monitors.get(monitor_id)
        if record is None:
            return
        add_event(record, seen, max_events)
        if seen.end is not None and not record.finished:
            record.status = seen.end
            record.ended_at = time.time()
            record.note = seen.note
        with self._lock:
            self._pending.setdefault(monitor_id, []).append(seen.text)
        name = "monitor_ended" if seen.end is not None else "monitor_event"
        data: dict[str, object] = {
            "monitor_id": monitor_id,
            "kind": record.kind,
            "target": record.target,
            "text": seen.text,
            "status": record.status,
        }
        if seen.exit_code is not None or seen.output_tail is not None:
            data |= {"exit_code": seen.exit_code, "output_tail": seen.output_tail}
        notification = Notification(
            name=name,
            data=data,
            tool=emitter.tool,
            session_id=self.session.session_id,
            call_id=emitter.call_id,
        )
        self.session.notifier.emit(notification, MONITOR_NOTIFICATIONS)

    # -- reading what was seen ------------------------------------------------------------

    def take_pending(self, monitor_ids: list[str] | None = None) -> dict[str, list[str]]:
        """What the monitors saw since the last take (all, or those of ``monitor_ids``),
        and forget it."""
        with self._lock:
            if monitor_ids is None:
                taken, self._pending = self._pending, {}
                return taken
            return {key: self._pending.pop(key) for key in monitor_ids if key in self._pending}

    def reconcile(self, state: MonitorState) -> None:
        """Mark ``lost`` the running records no live thread watches for: those of this
        object whose thread ended without a word, and those of a host process that is
        gone. Records another live session or process runs are left alone."""
        with self._lock:
            live = {key for key, held in self._live.items() if held.thread.is_alive()}
        for record in state.monitors.values():
            if record.finished or record.id in live:
                continue
            if record.runner != self.runner and _runner_alive(record.runner):
                continue
            record.status = "lost"
            record.ended_at = time.time()
            record.note = (
                "the host process that ran it is gone (it restarted or crashed); "
                "start the monitor again if you still need it"
            )

    # -- stopping -------------------------------------------------------------------------

    async def stop(self, record: MonitorRecord, note: str) -> None:
        """Stop the thread of ``record``, wait for it, and mark the record stopped."""
        with self._lock:
            live = self._live.pop(record.id, None)
        if live is not None:
            live.stop.set()
            await _joined([live.thread])
        if not record.finished:
            record.status = "stopped"
            record.ended_at = time.time()
            record.note = note

    async def close(self) -> None:
        """Stop every monitor of the session and mark their records stopped (the pack
        calls this when the session closes)."""
        with self._lock:
            self.closed = True
            lives, self._live = dict(self._live), {}
        for live in lives.values():
            live.stop.set()
        with anyio.CancelScope(shield=True):
            await _joined([live.thread for live in lives.values()])
        if not lives:
            return
        state = self.session.state.get(MonitorState)
        for key in lives:
            record = state.monitors.get(key)
            if record is not None and not record.finished:
                record.status = "stopped"
                record.ended_at = time.time()
                record.note = "its session closed"


def add_event(record: MonitorRecord, seen: Seen, max_events: int) -> None:
    """Add ``seen`` to ``record``'s events (dropping the oldest past ``max_events``)."""
    record.events.append(MonitorEvent(at=time.time(), text=seen.text))
    del record.events[: max(len(record.events) - max_events, 0)]
    record.total_events += 1
    if seen.last_status is not None:
        record.last_status = seen.last_status
    if seen.exit_code is not None:
        record.exit_code = seen.exit_code
    if seen.output_tail is not None:
        record.output_tail = seen.output_tail


async def _joined(threads: list[threading.Thread]) -> None:
    """Wait (in the event loop, without a worker thread) until ``threads`` have ended."""
    deadline = anyio.current_time() + JOIN_S
    while any(thread.is_alive() for thread in threads):
        if anyio.current_time() > deadline:
            alive = [t.name for t in threads if t.is_alive()]
            logger.warning("monitor threads still running after %s s: %s", JOIN_S, alive)
            return
        await anyio.sleep(0.02)
