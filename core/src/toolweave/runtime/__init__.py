"""The session runtime: the session facade, the one call pipeline and its hooks,
contexts, deadlines and cancellation, streaming, batches and notifications.
"""

from toolweave.runtime._guards import Guard, read_only_guard
from toolweave.runtime._notifications import Notification, NotificationListener, Notifier
from toolweave.runtime._session import Session
from toolweave.runtime._sync import SyncSession
from toolweave.runtime._toolstream import ProgressCallback, ToolStream

__all__ = [
    "Guard",
    "Notification",
    "NotificationListener",
    "Notifier",
    "ProgressCallback",
    "Session",
    "SyncSession",
    "ToolStream",
    "read_only_guard",
]
