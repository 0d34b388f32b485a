"""Hook specifications: the contract between toolweave and a pack.

A pack is a module (or any object) that implements some of these hooks, marked with
:data:`toolweave.hookimpl`, and is named by an entry point in the group
``toolweave.packs``::

    [project.entry-points."toolweave.packs"]
    fs = "toolweave_fs:pack"

Promise to pack authors: hooks only ever **gain** arguments, never lose them. pluggy
passes an implementation only the arguments it names, so an implementation written
against today's signature keeps working.

Each hook is called once per pack, in load order; a pack that raises is reported with
its name and the exception and skipped (or, in strict mode, the load fails).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from toolweave.catalog import ToolSetBuilder
    from toolweave.resources import Resources
    from toolweave.runtime import CallHook, Session

__all__ = ["hookimpl", "hookspec"]

PROJECT = "toolweave"

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marks a hook specification (used only in this module)."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a pack's hook implementation: ``@hookimpl def register_tools(builder): ...``."""


# -- tools -----------------------------------------------------------------------------


@hookspec
def register_tools(builder: ToolSetBuilder) -> None:
    """Register the pack's tools.

    Called once per pack when the host builds a tool set (before any session exists).

    Args:
        builder: Call ``builder.add(ToolClass)`` for each tool; the registration
            remembers this pack as its origin.

    Returns:
        Nothing. Raise to report the pack as broken; its tools are then left out.
    """


@hookspec
def register_reminders(builder: ToolSetBuilder) -> None:
    """Register cross-tool reminders.

    Called once per pack, after every pack's ``register_tools``, so a reminder's
    dependency expression can name tools of other packs.

    Args:
        builder: Call ``builder.add_reminder(...)`` for each reminder.

    Returns:
        Nothing.
    """


# -- resources -------------------------------------------------------------------------


@hookspec
def provide_resources(resources: Resources, session: Session) -> None:
    """Put the resources the pack's tools need into a new session.

    Called once per pack for every new session, before its first call. Resources the
    host inserted already are visible; a pack should not replace them (use
    ``resources.get_or_default``).

    Args:
        resources: The session's resource container.
        session: The new session (its id and workspace are set).

    Returns:
        Nothing.
    """


# -- calls -----------------------------------------------------------------------------


@hookspec
def provide_call_hooks(session: Session) -> Sequence[CallHook] | None:
    """Call hooks the pack runs around every call of a new session.

    Called once per pack for every new session, after ``provide_resources``. Each hook
    sees every call of the session exactly once (see :class:`~toolweave.CallHook`):
    ``admit`` before validation, ``before`` after it, ``after`` / ``on_error`` at the
    end. Hooks of the host (``Session(hooks=...)``) run first, then the packs' in load
    order.

    Args:
        session: The new session.

    Returns:
        The hooks, or ``None``. Raise to report the pack as broken; the session goes
        on without its hooks.
    """
