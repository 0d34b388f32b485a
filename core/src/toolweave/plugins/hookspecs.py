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
    from collections.abc import Mapping, Sequence
    from typing import Any

    from toolweave.catalog import ToolSetBuilder
    from toolweave.errors import ToolError
    from toolweave.resources import Resources
    from toolweave.results import CallResult
    from toolweave.runtime import CallHook, HookCall, Session

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


@hookspec
def before_call(call: HookCall) -> ToolError | Mapping[str, Any] | None:
    """Check or change a call after its arguments are validated, before it runs.

    Called for every call of every session of a set built from the packs (calls a
    tool makes through ``ctx.call`` included), once per pack that implements it, in
    load order, after the host's and the packs' call hooks. The implementation is the
    ``before`` step of a call hook (see :class:`~toolweave.CallHook`), so it goes
    through the one pipeline; a plain or an ``async`` function.

    Args:
        call: The call: ``call.name`` (the tool's client name), ``call.entry``,
            ``call.arguments`` (validated: the ``Args`` model of a class tool, the
            keyword arguments of a ``@tool`` function, the JSON object of an external
            tool), ``call.session``, ``call.call_id``, ``call.depth``.

    Returns:
        ``None`` to let the call go on; a ``ToolError`` to refuse it with that kind and
        reason (``ToolError(ErrorKind.PERMISSION_DENIED, "no pushes on Fridays")``);
        or a mapping of new arguments (every argument, with client parameter names, as
        a model would send them), which are validated again (invalid ones end the call
        with ``invalid_params``) and seen by the next implementation. An
        implementation that raises anything else refuses the call (``permission_denied``,
        "a safety check failed"); the error is logged with the pack's name.
    """


@hookspec
def after_call(call: HookCall, result: CallResult) -> str | None:
    """See a call's result after it succeeded.

    Called once per pack that implements it, in load order, for every successful
    call; the ``after`` step of a call hook. A plain or an ``async`` function.

    Args:
        call: The call (as in ``before_call``; ``call.arguments`` are the ones it ran
            with).
        result: The result (``result.output``, ``result.text``); do not change it.

    Returns:
        Text to add for the model (after the tool's text), or ``None``. An
        implementation that raises is logged with the pack's name and skipped: the
        result is kept.
    """


@hookspec
def on_call_error(call: HookCall, result: CallResult) -> str | None:
    """See a call that failed: refused (by a rule, a role, a hook), invalid
    arguments, a tool error, a timeout or a cancellation.

    Called once per pack that implements it, in load order; the ``on_error`` step of
    a call hook. A plain or an ``async`` function.

    Args:
        call: The call (``call.arguments`` is ``None`` when it failed before its
            arguments were validated).
        result: The failed result (``result.error.kind``, ``result.error.message``).

    Returns:
        Text to add for the model, or ``None``. An implementation that raises is
        logged with the pack's name and skipped.
    """
