"""What a session remembers about its monitors (persisted), and the tools' params."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

__all__ = [
    "MonitorEvent",
    "MonitorKind",
    "MonitorParams",
    "MonitorRecord",
    "MonitorState",
    "MonitorStatus",
]

MonitorKind = Literal["file", "folder", "task", "process", "url"]
"""What a monitor watches: a file, a folder (and everything under it), a background task
of the shell pack, another process, or an HTTP URL."""

MonitorStatus = Literal["running", "ended", "stopped", "failed", "lost"]
"""``running``: watching; ``ended``: what it watched is over (the process exited);
``stopped``: stopped by a tool or because its session closed; ``failed``: the watcher
could not go on (the guard refused a redirect, the folder is gone); ``lost``: the host
process that ran it is gone and it was not stopped (start it again)."""

FINISHED: frozenset[str] = frozenset({"ended", "stopped", "failed", "lost"})


class MonitorEvent(BaseModel):
    """One thing a monitor saw."""

    at: float
    """When it was seen (seconds since the epoch)."""

    text: str
    """What was seen, in a line (``modified notes.txt``, ``status 200 -> 503``)."""


class MonitorRecord(BaseModel):
    """What the session remembers about one monitor."""

    id: str
    """The id the model uses (``monitor-2``)."""

    kind: MonitorKind
    """What it watches."""

    target: str
    """The path, task id, process id or URL, as given."""

    description: str | None = None
    """Why the model started it."""

    status: MonitorStatus = "running"
    """Where it stands."""

    started_at: float = 0.0
    """When it started (seconds since the epoch)."""

    ended_at: float | None = None
    """When it stopped watching (seconds since the epoch)."""

    interval_s: float | None = None
    """Seconds between two checks (processes and URLs; files and folders are pushed)."""

    events: list[MonitorEvent] = Field(default_factory=list)
    """The latest events, oldest first (at most ``max_events_per_monitor``)."""

    total_events: int = 0
    """Every event seen, those no longer kept included."""

    shown_events: int = 0
    """How many of :attr:`total_events` the model has seen (listing or reminder)."""

    last_status: str | None = None
    """URLs: the latest status (``200``, ``unreachable``)."""

    exit_code: int | None = None
    """Tasks: the exit code once known."""

    output_tail: str | None = None
    """Tasks: the end of the output once the task ended."""

    note: str | None = None
    """Why it stopped the way it did, when that needs saying."""

    runner: str = ""
    """The host process that runs it (``pid:start``), to tell a lost monitor after a
    restart from one another process still runs."""

    @property
    def finished(self) -> bool:
        """Whether it no longer watches (in any way)."""
        return self.status in FINISHED


class MonitorState(BaseModel):
    """The monitors of a session (persisted session state)."""

    state_key: ClassVar[str] = "monitor.monitors"

    monitors: dict[str, MonitorRecord] = Field(default_factory=dict)
    """Every monitor started in the session, by id, oldest first."""

    next_number: int = 1
    """The number of the next monitor id."""


class MonitorParams(BaseModel):
    """Configuration shared by the monitor tools (units in the names)."""

    max_monitors: int = Field(default=8, ge=1, le=64)
    """Monitors running at once in a session; starting one more is refused."""

    max_records: int = Field(default=50, ge=1, le=1000)
    """Records kept per session; the oldest finished ones are dropped past it."""

    max_events_per_monitor: int = Field(default=50, ge=1, le=1000)
    """Events kept per monitor; older ones are dropped (and counted)."""

    min_url_interval_s: float = Field(default=5.0, ge=0.05, le=3600.0)
    """The shortest interval between two requests of a URL monitor."""

    default_url_interval_s: float = Field(default=30.0, ge=0.05, le=86_400.0)
    """A URL monitor's interval when the call gives none."""

    min_process_interval_s: float = Field(default=0.2, ge=0.01, le=3600.0)
    """The shortest interval between two checks of a process monitor."""

    default_process_interval_s: float = Field(default=1.0, ge=0.01, le=86_400.0)
    """A process monitor's interval when the call gives none."""

    url_timeout_s: float = Field(default=10.0, gt=0.0, le=120.0)
    """Seconds one request of a URL monitor may take (look-up and redirects included)."""

    max_response_bytes: int = Field(default=1_000_000, ge=1024)
    """The most body bytes read per request (a larger body counts as an error)."""

    batch_window_ms: int = Field(default=500, ge=10, le=60_000)
    """File changes arriving within this window are reported as one event."""

    tail_chars: int = Field(default=2000, ge=0, le=100_000)
    """Characters of a task's output kept when it ends."""

    allow_loopback: bool = False
    """URL monitors may reach this machine (127.0.0.0/8, ::1)."""

    allow_private: bool = False
    """URL monitors may reach private networks (10/8, 192.168/16, fc00::/7...)."""

    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names URL monitors reach whatever their addresses (an operator's exemption)."""
