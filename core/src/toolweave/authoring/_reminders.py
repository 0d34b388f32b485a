"""Reminders: short notes appended to what the model reads after a tool call.

After each call (when the set has reminders turned on), every active reminder looks at
what happened and may return text; each fragment is appended to the call's model text
inside ``<system-reminder>`` tags. The structured output is never touched.

Two kinds, one interface:

- **Cross-tool reminders** come from packs through the ``register_reminders`` hook
  (``builder.add_reminder(MyReminder())``). One whose ``requires`` expression does not
  hold for the configured set is left out of the set.
- **Tool-internal reminders** are declared by a tool class (``reminders = (MyReminder,)``)
  and are active whenever that tool is in the set.

Order is deterministic: registration order, which puts tool-internal reminders first (in
the order their tools were registered; packs register tools before reminders), then
cross-tool reminders. Ids are unique: a second cross-tool reminder with a taken id is
refused; a reminder class declared by several tools is registered once. A reminder that
raises is logged and skipped; it never fails a call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolweave.errors import UsageError
from toolweave.results import CallResult

if TYPE_CHECKING:
    from toolweave.authoring._context import Context
    from toolweave.catalog._erasure import ErasedTool

__all__ = [
    "CallInfo",
    "FunctionReminder",
    "Reminder",
    "ToolReminder",
    "apply_reminders",
    "as_reminder",
    "register_reminder",
    "register_tool_reminders",
    "reminder",
    "wrap_reminder",
]

logger = logging.getLogger("toolweave")

Fragments = Sequence[str] | str | None
"""What ``collect`` returns: one fragment, several, or nothing."""


@dataclass(slots=True)
class CallInfo:
    """What happened in the call a reminder looks at (treat it as read-only).

    Attributes:
        name: The client-visible name the call was addressed to.
        tool: The fully qualified id of the tool that actually ran.
        args: The validated arguments: an ``Args`` model for class tools, a dict of
            keyword arguments for ``@tool`` functions and external tools.
        result: The result, with the model text as the tool produced it.
    """

    name: str
    tool: str
    args: Any
    result: CallResult


class Reminder:
    """A reminder: subclass it, give it an ``id`` and implement :meth:`collect`.

    Example:
        >>> class ReadBeforeEdit(Reminder):
        ...     id = "read_before_edit"
        ...     requires = "read_file"
        ...     def collect(self, ctx, call):
        ...         if call.result.error is not None and call.name == "edit_file":
        ...             return "Read the file again before editing it."
        ...         return None

    Attributes:
        id: Unique among the reminders of a set.
        requires: A dependency expression over the configured set (``"read_file"``,
            ``"edit_file && !plan_mode"``); the reminder is inactive when it does not
            hold. ``None``: always active.
    """

    id: str = ""
    requires: str | None = None

    def collect(self, ctx: Context, call: CallInfo) -> Fragments:
        """Text to append after ``call``, or ``None``.

        Runs after every call of the session (cancelled ones excepted), in the event
        loop: keep it quick and do not block. ``ctx`` is the finished call's context
        (``ctx.state(...)`` reads session state).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id!r}>"


class FunctionReminder(Reminder):
    """A reminder made from a function by :func:`reminder`."""

    def __init__(
        self,
        fn: Callable[[Context, CallInfo], Fragments],
        id: str,
        requires: str | None = None,
    ) -> None:
        self.fn = fn
        self.id = id
        self.requires = requires

    def collect(self, ctx: Context, call: CallInfo) -> Fragments:
        """Call the function."""
        return self.fn(ctx, call)


def reminder(
    *, id: str | None = None, requires: str | None = None
) -> Callable[[Callable[[Context, CallInfo], Fragments]], FunctionReminder]:
    """Turn a function ``(ctx, call) -> str | list[str] | None`` into a reminder.

    Example:
        >>> @reminder(id="be_brief")
        ... def be_brief(ctx, call):
        ...     return "Keep answers short." if len(call.result.text) > 10_000 else None
        >>> be_brief.id
        'be_brief'
    """

    def wrap(fn: Callable[[Context, CallInfo], Fragments]) -> FunctionReminder:
        return FunctionReminder(fn, id or fn.__name__, requires)

    return wrap


def as_reminder(value: Reminder | type[Reminder]) -> Reminder:
    """An instance from a reminder or a reminder class (instantiated with no arguments).

    Raises:
        TypeError: Not a reminder, or it has no id.
    """
    instance = value() if isinstance(value, type) else value
    if not isinstance(instance, Reminder) or not callable(getattr(instance, "collect", None)):
        raise TypeError(f"{value!r} is not a Reminder")
    if not isinstance(instance.id, str) or not instance.id:
        raise TypeError(f"reminder {type(instance).__qualname__} has no id")
    return instance


class ToolReminder(Reminder):
    """A tool-internal reminder as the builder registers it: active when one of the
    tools declaring it is in the set and its own ``requires`` holds.

    Attributes:
        inner: The declared reminder; :meth:`collect` delegates to it.
        tools: Fully qualified ids of the tools that declare it.
    """

    def __init__(self, inner: Reminder, fqid: str) -> None:
        self.inner = inner
        self.id = inner.id
        self.tools: list[str] = []
        self.add_tool(fqid)

    def add_tool(self, fqid: str) -> None:
        """Also activate the reminder when the tool ``fqid`` is in the set."""
        if fqid in self.tools:
            return
        self.tools.append(fqid)
        self._update_requires()

    def keep_tools(self, present: Callable[[str], bool]) -> bool:
        """Forget the declaring tools for which ``present`` is false (they were removed
        from the builder); ``True`` when any declaring tool is left."""
        self.tools = [t for t in self.tools if present(t)]
        if self.tools:
            self._update_requires()
        return bool(self.tools)

    def _update_requires(self) -> None:
        present = " or ".join(f"tool:{t}" for t in self.tools)
        own = self.inner.requires
        self.requires = f"({present}) and ({own})" if own else present

    def collect(self, ctx: Context, call: CallInfo) -> Fragments:
        """Delegate to the declared reminder."""
        return self.inner.collect(ctx, call)

    def __repr__(self) -> str:
        return f"<ToolReminder {self.id!r} of {', '.join(self.tools)}>"


def register_reminder(registered: list[Reminder], value: Reminder | type[Reminder]) -> Reminder:
    """Append a cross-tool reminder to ``registered`` (the builder's list).

    Raises:
        UsageError: Another reminder has the same id.
        TypeError: ``value`` is not a reminder.
    """
    rem = as_reminder(value)
    for other in registered:
        if other.id == rem.id:
            raise UsageError(f"reminder id {rem.id!r} is registered twice ({other!r}, {rem!r})")
    registered.append(rem)
    return rem


def register_tool_reminders(registered: list[Reminder], tool: ErasedTool) -> None:
    """Append the reminders ``tool``'s class declares (``reminders = (...)``) to
    ``registered``, each active while the tool is in the set. A reminder declared by
    several tools is registered once and active while any of them is in the set."""
    instance = tool.tool
    declared = getattr(type(instance), "reminders", ()) if instance is not None else ()
    for value in declared:
        rem = as_reminder(value)
        for other in registered:
            if other.id != rem.id:
                continue
            if isinstance(other, ToolReminder) and type(other.inner) is type(rem):
                other.add_tool(tool.fqid)
            else:
                logger.warning(
                    "reminder id %r of %s is taken by %r; %s's reminder is left out",
                    rem.id,
                    tool.fqid,
                    other,
                    tool.fqid,
                )
            break
        else:
            registered.append(ToolReminder(rem, tool.fqid))


def wrap_reminder(fragment: str) -> str:
    """One fragment inside ``<system-reminder>`` tags."""
    return f"<system-reminder>\n{fragment.strip()}\n</system-reminder>"


def apply_reminders(reminders: Sequence[Reminder], ctx: Context, call: CallInfo, text: str) -> str:
    """``text`` followed by every fragment the ``reminders`` collect for ``call``."""
    parts: list[str] | None = None
    for rem in reminders:
        try:
            got = rem.collect(ctx, call)
        except KeyboardInterrupt:
            raise
        except BaseException:  # a reminder's own BaseException, GeneratorExit, ...
            logger.warning("reminder %r raised; skipped", rem.id, exc_info=True)
            continue
        if got is None:
            continue
        if isinstance(got, str):
            got = (got,)
        elif not isinstance(got, (list, tuple)):
            logger.warning("reminder %r returned %s, not text; skipped", rem.id, type(got).__name__)
            continue
        for fragment in got:
            if not isinstance(fragment, str):
                logger.warning(
                    "reminder %r returned %s, not text; skipped", rem.id, type(fragment).__name__
                )
            elif fragment.strip():
                if parts is None:
                    parts = []
                parts.append(wrap_reminder(fragment))
    if parts is None:
        return text
    return "\n\n".join([text, *parts]) if text else "\n\n".join(parts)
