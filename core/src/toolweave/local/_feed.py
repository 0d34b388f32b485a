"""Plugin-file alerts in the registry center's change feed, through its public store
interface: one flag per plugin folder (``source:dir:<folder>`` / ``plugin_alerts``)
holding its broken files, so every change is audited and published like any other."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolweave.errors import CenterError

if TYPE_CHECKING:
    from toolweave.center import Center

__all__ = ["ALERT_FLAG", "publish_alerts"]

logger = logging.getLogger("toolweave.local")

ALERT_FLAG = "plugin_alerts"
"""The flag of a ``dir:<folder>`` source holding its broken files: ``{file: {"line",
"message"}}`` (unset when every file loads)."""


def publish_alerts(
    center: Center, source: str, alerts: Mapping[str, Mapping[str, Any]], *, actor: str | None
) -> bool:
    """Write the alerts of ``source`` (file → ``{"line", "message"}``) to the center:
    the change is audited (action ``plugin_alert``) and published in the change feed
    (a ``flag`` event on ``source:<source>``). ``False`` when nothing changed or the
    center cannot be written (logged)."""
    if center.store.readonly:
        return False
    value = {file: dict(alert) for file, alert in sorted(alerts.items())} or None
    reason = "; ".join(
        f"{file}:{alert.get('line') or '?'}: {alert.get('message')}"
        for file, alert in sorted(alerts.items())
    )
    try:
        event = center.store.update_flag(
            "source",
            source,
            ALERT_FLAG,
            lambda _old: value,
            actor=actor or "toolweave.local",
            reason=reason or "every plugin file loads",
            action="plugin_alert",
        )
    except CenterError as exc:
        logger.error("the plugin alerts of %s could not reach the center: %s", source, exc)
        return False
    if event is None:
        return False
    center.refresh()  # take the new version now and publish the event to subscribers
    return True
