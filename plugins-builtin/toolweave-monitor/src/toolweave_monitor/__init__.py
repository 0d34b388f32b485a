"""toolweave-monitor: watch a file or folder, a background task or process until it
exits, or an HTTP URL's status, in the background, and hear about it.

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``monitor``). Each session watches on threads of its own
(:class:`Monitors`), emits ``monitor_event`` and ``monitor_ended`` notifications, and
adds what its monitors saw after the model's next call. Records are persisted session
state (:class:`MonitorState`); closing the session stops its monitors.
"""

from __future__ import annotations

from toolweave_monitor import _pack as pack
from toolweave_monitor._monitors import MONITOR_NOTIFICATIONS, Monitors
from toolweave_monitor._reminder import MonitorReminder
from toolweave_monitor._state import (
    MonitorEvent,
    MonitorKind,
    MonitorParams,
    MonitorRecord,
    MonitorState,
    MonitorStatus,
)
from toolweave_monitor._tools import (
    ListMonitors,
    ListMonitorsArgs,
    ListMonitorsResult,
    Monitor,
    MonitorArgs,
    MonitorStarted,
    MonitorSummary,
    StopMonitor,
    StopMonitorArgs,
    StopMonitorResult,
)

__all__ = [
    "MONITOR_NOTIFICATIONS",
    "ListMonitors",
    "ListMonitorsArgs",
    "ListMonitorsResult",
    "Monitor",
    "MonitorArgs",
    "MonitorEvent",
    "MonitorKind",
    "MonitorParams",
    "MonitorRecord",
    "MonitorReminder",
    "MonitorStarted",
    "MonitorState",
    "MonitorStatus",
    "MonitorSummary",
    "Monitors",
    "StopMonitor",
    "StopMonitorArgs",
    "StopMonitorResult",
    "pack",
]
