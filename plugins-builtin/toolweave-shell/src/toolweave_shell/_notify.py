"""The notifications the shell tools emit when a command ends."""

from __future__ import annotations

from typing import Any

from toolweave import Context

__all__ = ["EXECUTION_NOTIFICATIONS", "end_notification", "notify_end"]

EXECUTION_NOTIFICATIONS = ("execution_complete", "execution_failed", "execution_timeout")
"""Emitted when a command ends: with exit code 0, otherwise, or by running out of time."""


def end_notification(code: int | None, *, timed_out: bool = False) -> str:
    """The notification name for a command that ended with ``code``."""
    if timed_out:
        return "execution_timeout"
    return "execution_complete" if code == 0 else "execution_failed"


def notify_end(
    ctx: Context, code: int | None, *, timed_out: bool = False, data: dict[str, Any]
) -> None:
    """Emit the notification for a foreground command that ended with ``code``."""
    ctx.notify(end_notification(code, timed_out=timed_out), {**data, "exit_code": code})
