"""The session runtime: the session facade, the one call pipeline and its call hooks,
deadlines and cancellation, streaming, batches and notifications.

Call hooks (:class:`CallHook`) run around every call of a session: ``admit`` before
the arguments are validated, ``before`` after (may refuse or rewrite them),
``after`` / ``on_error`` at the end (may add text for the model). Hosts pass them to
the session (``Session(hooks=[...])``, :meth:`Session.add_hook`); packs return them
from their ``provide_call_hooks`` hook.
"""

from toolweave.runtime._guards import Guard, GuardHook, read_only_guard
from toolweave.runtime._hooks import CallHook, HookCall
from toolweave.runtime._notifications import Notification, NotificationListener, Notifier
from toolweave.runtime._session import Session
from toolweave.runtime._sync import SyncSession
from toolweave.runtime._toolstream import ProgressCallback, ToolStream

__all__ = [
    "CallHook",
    "Guard",
    "GuardHook",
    "HookCall",
    "Notification",
    "NotificationListener",
    "Notifier",
    "ProgressCallback",
    "Session",
    "SyncSession",
    "ToolStream",
    "read_only_guard",
]
