"""Call guards: checks a session runs before a call's arguments are validated.

A guard is a function ``(session, entry) -> ToolError | None``. Returning an error
refuses the call with it; returning ``None`` lets the call go on. Packs add guards from
their ``provide_resources`` hook (``session.add_guard(guard)``): plan mode refuses every
tool that is not read-only, a role refuses tools it may not use. Guards also apply to
calls a meta-tool makes through its context.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolweave.errors import ErrorKind, ToolError

if TYPE_CHECKING:
    from toolweave.runtime._session import Session
    from toolweave.catalog._toolset import ToolEntry

__all__ = ["Guard", "check_guards", "read_only_guard"]

logger = logging.getLogger("toolweave")

Guard = Callable[["Session", "ToolEntry"], "ToolError | None"]
"""``(session, entry) -> ToolError | None``: refuse a call with an error, or allow it."""


def check_guards(guards: tuple[Guard, ...], session: Session, entry: ToolEntry) -> ToolError | None:
    """Run ``guards`` in order; the first refusal wins.

    A guard that raises refuses the call (``permission_denied``): a broken check never
    lets a call through.
    """
    for guard in guards:
        try:
            refusal = guard(session, entry)
        except Exception:
            logger.exception("call guard %r raised; refusing %s", guard, entry.name)
            return ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{entry.name} cannot run now: a safety check failed.",
            )
        if refusal is not None:
            return refusal
    return None


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
