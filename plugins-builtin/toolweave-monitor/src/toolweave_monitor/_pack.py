"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import Resources, Session, ToolSetBuilder, hookimpl

from toolweave_monitor._monitors import Monitors
from toolweave_monitor._reminder import MonitorReminder
from toolweave_monitor._tools import ListMonitors, Monitor, StopMonitor


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register ``monitor``, ``monitors`` and ``stop_monitor``."""
    builder.add(Monitor)
    builder.add(ListMonitors)
    builder.add(StopMonitor)


@hookimpl
def register_reminders(builder: ToolSetBuilder) -> None:
    """Register the reminder that tells what the monitors saw."""
    builder.add_reminder(MonitorReminder())


@hookimpl
def provide_resources(resources: Resources, session: Session) -> None:
    """Give the session its own monitors and stop them when it closes."""
    monitors = Monitors(session)
    resources.insert(monitors)
    session.on_close(monitors.close)
