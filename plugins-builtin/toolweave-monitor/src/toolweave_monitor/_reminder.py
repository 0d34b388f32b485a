"""After a call, what the monitors saw since the last one: "monitor-1 (folder src) saw:
modified src/app.py", once per change batch."""

from __future__ import annotations

from toolweave import CallInfo, Context, Reminder

from toolweave_monitor._monitors import Monitors
from toolweave_monitor._state import MonitorState

__all__ = ["MonitorReminder"]

SHOWN = 3
"""Batches named per monitor in one reminder; earlier ones are counted."""


class MonitorReminder(Reminder):
    """Adds what each monitor saw since the previous reminder (or listing) after the
    next call of the session, whichever tool it was."""

    id = "monitor.changes"
    requires = "tool:monitor:monitor"

    def collect(self, ctx: Context, call: CallInfo) -> list[str] | None:
        """The monitors' new batches, one line per monitor."""
        monitors = ctx.resources.get(Monitors)
        if monitors is None:
            return None
        pending = monitors.take_pending()
        if not pending:
            return None
        records = ctx.session.state.get(MonitorState).monitors
        lines = []
        for monitor_id, batches in pending.items():
            record = records.get(monitor_id)
            if record is None:
                continue
            record.shown_events = record.total_events
            earlier = len(batches) - SHOWN
            saw = "; ".join(batches[-SHOWN:])
            if earlier > 0:
                saw = f"({earlier} earlier changes) {saw}"
            lines.append(f"monitor {monitor_id} ({record.kind} {record.target}) saw: {saw}")
        return lines or None
