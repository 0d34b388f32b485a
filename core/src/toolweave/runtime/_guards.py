"""Call guards: checks a session runs before a call's arguments are validated.

A guard is a function ``(session, entry) -> ToolError | None``: the simplest call
hook, run as the ``admit`` step of a :class:`GuardHook`. Returning an error refuses
the call with it; returning ``None`` lets the call go on. Packs add guards from their
``provide_resources`` hook (``session.add_guard(guard)``): plan mode refuses every tool
that is not read-only. Guards apply to every call, calls tools make included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, final

from toolweave.errors import ErrorKind, ToolError
from toolweave.runtime._hooks import CallHook, HookCall

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.runtime._session import Session

__all__ = ["Guard", "GuardHook", "read_only_guard"]

Guard = Callable[["Session", "ToolEntry"], "ToolError | None"]
"""``(session, entry) -> ToolError | None``: refuse a call with an error, or allow it."""


@final
class GuardHook(CallHook):
    """A guard as a call hook: its check is the hook's ``admit`` step, so it refuses a
    call before the arguments are validated. A guard that raises refuses the call
    (``permission_denied``): a broken check never lets a call through."""

    fail_closed = True

    guard: Guard

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.name = getattr(guard, "__qualname__", repr(guard))

    def admit(self, call: HookCall) -> ToolError | None:
        return self.guard(call.session, call.entry)


def read_only_guard(reason: str) -> Guard:
    """A guard that refuses every tool that is not read-only.

    Args:
        reason: Why, for the model (``"Plan mode is on: only read-only tools may run."``).

    Example:
        ``remove = session.add_guard(read_only_guard("Plan mode is on."))``
    """

    def guard(session: Session, entry: ToolEntry) -> ToolError | None:
        if entry.tool.read_only:
            return None
        return ToolError(ErrorKind.PERMISSION_DENIED, f"{entry.name} is not allowed: {reason}")

    guard.__qualname__ = f"read_only_guard({reason!r})"
    return guard
