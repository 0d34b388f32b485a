"""Call hooks: code that runs around every call of a session.

A hook is a :class:`CallHook` that overrides any of four methods, each a plain or an
``async`` function:

- ``admit(call)``: before the arguments are validated (``call.arguments`` is
  ``None``). Return a :class:`~toolweave.ToolError` (or raise one) to refuse the
  call; roles, enable/disable and circuit breakers decide here, so a refused call
  costs no validation and its answer does not depend on its arguments. An admit step
  may also :meth:`~HookCall.route` the call to another behaviour version of its tool
  (the registry center's pins and gray releases).
- ``before(call)``: after validation (``call.arguments`` holds the validated
  arguments). Refuse as above, or return a mapping of new arguments (client
  parameter names, as a model would send them): they are validated again and the
  call goes on with them.
- ``after(call, result)``: the call succeeded; return text to add for the model, or
  ``None``.
- ``on_error(call, result)``: the call failed (any error, refusals and invalid
  arguments included); return text to add, or ``None``.

A session compiles its hooks once per tool entry (only the methods a hook overrides,
only for the entries its :meth:`CallHook.applies_to` accepts), so a session without
hooks keeps the plain path, and an entry no hook applies to pays one dictionary
look-up. Every call, whatever its entry point (``call``, ``stream``, calls a tool
makes through its context, ``call_many``, ``run_tool_calls``, the MCP server), passes
each hook exactly once; ``call.depth`` tells a call from the host (0) from a call a
tool made.

A hook that raises anything but a ``ToolError`` is isolated: the error is logged with
the hook's name and, when the hook is ``fail_closed`` (the default), the call is
refused (``admit``/``before``: ``permission_denied``) or its result withheld
(``after``: ``execution_error``: a failed redaction or audit never lets output
through); with ``fail_closed = False`` the hook is skipped.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, final

from pydantic import ValidationError

from toolweave.authoring._context import Context
from toolweave.errors import ErrorKind, ToolError
from toolweave.results import CallResult
from toolweave.runtime._outcomes import TOOL_FAILURES, error_result, steers

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.runtime._session import Session

__all__ = ["CallHook", "HookCall", "HookPlan", "compile_hooks"]

logger = logging.getLogger("toolweave")

Verdict = ToolError | Mapping[str, Any] | None
"""What ``admit`` and ``before`` return: a refusal, new arguments, or ``None``."""


class CallHook:
    """Base class of call hooks; override any of ``admit``, ``before``, ``after`` and
    ``on_error`` (plain or ``async``). See :mod:`toolweave.runtime` for when each runs.

    Attributes:
        name: The hook's name in logs and messages (default: the class name).
        fail_closed: When the hook itself fails: ``True`` refuses the call (or
            withholds its result); ``False`` logs the failure and skips the hook.

    Example:
        ```python
        class NoDeletes(CallHook):
            def admit(self, call: HookCall) -> ToolError | None:
                if call.entry.kind == "delete":
                    return ToolError(ErrorKind.PERMISSION_DENIED, "deleting is off")
                return None
        ```
    """

    name: str = ""
    fail_closed: bool = True
    guard: Callable[..., ToolError | None] | None = None
    """Set by :class:`~toolweave.runtime.GuardHook`: the guard function it runs."""

    def applies_to(self, entry: ToolEntry) -> bool:
        """Whether the hook runs for calls of ``entry`` (asked once per entry)."""
        return True

    def admit(self, call: HookCall) -> Verdict | Awaitable[Verdict]:
        """Before validation: ``None`` lets the call on, a ``ToolError`` refuses it."""
        return None

    def before(self, call: HookCall) -> Verdict | Awaitable[Verdict]:
        """After validation: ``None``, a refusal, or new arguments (validated again)."""
        return None

    def after(self, call: HookCall, result: CallResult) -> str | Awaitable[str | None] | None:
        """After a successful call: text to add for the model, or ``None``."""
        return None

    def on_error(self, call: HookCall, result: CallResult) -> str | Awaitable[str | None] | None:
        """After a failed call: text to add for the model, or ``None``."""
        return None

    def __repr__(self) -> str:
        return f"<CallHook {self.name or type(self).__name__}>"


@final
class HookCall(Context):
    """One call as hooks see it: the call's :class:`~toolweave.Context` (the tool runs
    with this very object), plus the validated arguments.

    Attributes:
        session: The session the call runs in.
        entry: The entry called (client name, erased tool, effective kind, params).
        arguments: The validated arguments (``None`` in ``admit``): the ``Args`` model
            of a class tool, the keyword arguments of a ``@tool`` function, the JSON
            object of an external tool.
        call_id: The model's id for the call (``None`` for calls a tool makes).
        depth: 0 for a call from the host, 1 and more for calls tools make.
    """

    __slots__ = ("arguments", "hook_data")
    entry: ToolEntry

    def __init__(self, session: Session, entry: ToolEntry, call_id: str | None) -> None:
        self.session = session
        self.entry = entry
        self.call_id = call_id
        self._record = None
        self.arguments: Any = None
        self.hook_data: Any = None
        """Free for hooks: a value kept from one step of the call to the next (the
        registry center keeps the time the call was admitted)."""

    def route(self, entry: ToolEntry) -> None:
        """Run ``entry`` instead (from an ``admit`` step): another behaviour version of
        the same tool under the same client name, e.g. from
        :meth:`ToolSet.version_entry <toolweave.ToolSet.version_entry>`. Its arguments
        are validated against that version.

        Raises:
            UsageError: ``entry`` has another client name, or the arguments were
                validated already (``before`` steps cannot route).
        """
        if entry.name != self.entry.name or self.arguments is not None:
            from toolweave.errors import UsageError

            raise UsageError(
                "a call is routed only from an admit step, to an entry of the same name"
            )
        self.entry = entry

    @property
    def name(self) -> str:
        """The client-visible name of the tool called."""
        return self.entry.name

    def __repr__(self) -> str:
        return f"<HookCall {self.name} call_id={self.call_id!r} depth={self.depth}>"


_Step = tuple[CallHook, Callable[..., Any], bool]
"""A compiled hook method: the hook, the bound method, whether it is async."""


def _label(hook: CallHook) -> str:
    return hook.name or type(hook).__name__


@final
class HookPlan:
    """The hooks of one entry, compiled: only the methods that are overridden."""

    __slots__ = ("admit", "after", "before", "ends", "guards", "on_error", "synchronous")

    def __init__(self, hooks: list[CallHook]) -> None:
        def steps(method: str) -> tuple[_Step, ...]:
            found: list[_Step] = []
            for hook in hooks:
                if getattr(type(hook), method) is getattr(CallHook, method):
                    continue
                fn = getattr(hook, method)
                found.append((hook, fn, inspect.iscoroutinefunction(fn)))
            return tuple(found)

        self.admit = steps("admit")
        self.before = steps("before")
        self.after = steps("after")
        self.on_error = steps("on_error")
        self.ends = bool(self.after or self.on_error)
        """Some hook has an ``after`` or ``on_error`` step."""
        every = self.admit + self.before + self.after + self.on_error
        self.synchronous = not any(is_async for _, _, is_async in every)
        """No step needs ``await``: the pipeline runs the steps itself, without a
        coroutine."""
        only_guards = every and all(hook.guard is not None for hook, _, _ in every)
        self.guards: tuple[tuple[CallHook, Callable[..., Any]], ...] = (
            tuple((hook, hook.guard) for hook, _, _ in self.admit) if only_guards else ()  # type: ignore[misc]
        )
        """When the plan is only guards: their functions, which the pipeline calls
        without a :class:`HookCall` (the plan mode of the plan pack costs a function
        call)."""

    async def check(self, call: HookCall, steps: tuple[_Step, ...]) -> CallResult | None:
        """Run ``admit`` or ``before`` steps in order; a result when the call is refused
        (or its rewritten arguments are invalid), else ``None``."""
        for hook, fn, is_async in steps:
            try:
                verdict = fn(call)
                if is_async:
                    verdict = await verdict
            except TOOL_FAILURES as exc:
                verdict = check_failed(hook, call.entry, exc)
            except BaseException as exc:
                if steers(exc):
                    raise
                verdict = check_failed(hook, call.entry, exc)
            if verdict is not None:
                stop = apply_verdict(hook, call, verdict)
                if stop is not None:
                    return stop
        return None

    def finish_now(self, call: HookCall, result: CallResult) -> CallResult:
        """:meth:`finish` for plans whose steps are all plain functions."""
        failed = result.error is not None
        for hook, fn, _ in self.on_error if failed else self.after:
            try:
                extra = fn(call, result)
            except TOOL_FAILURES:
                result = _finish_failed(hook, call, result)
                continue
            except BaseException as exc:
                if steers(exc):
                    raise
                result = _finish_failed(hook, call, result)
                continue
            if extra:
                _add_text(result, extra)
        return result

    async def finish(self, call: HookCall, result: CallResult) -> CallResult:
        """Run ``after`` (success) or ``on_error`` (failure) steps; text they return is
        added to the result's text."""
        failed = result.error is not None
        for hook, fn, is_async in self.on_error if failed else self.after:
            try:
                extra = fn(call, result)
                if is_async:
                    extra = await extra
            except TOOL_FAILURES:
                result = _finish_failed(hook, call, result)
                continue
            except BaseException as exc:
                if steers(exc):
                    raise
                result = _finish_failed(hook, call, result)
                continue
            if extra:
                _add_text(result, extra)
        return result


def _refusal(entry: ToolEntry) -> ToolError:
    return ToolError(
        ErrorKind.PERMISSION_DENIED, f"{entry.name} cannot run now: a safety check failed."
    )


def check_failed(hook: CallHook, entry: ToolEntry, exc: BaseException) -> ToolError | None:
    """The verdict of an ``admit``/``before`` step (or a guard) that raised ``exc``."""
    if isinstance(exc, ToolError):
        return exc
    logger.error("call hook %s failed on %s", _label(hook), entry.name, exc_info=exc)
    return _refusal(entry) if hook.fail_closed else None


def apply_verdict(hook: CallHook, call: HookCall, verdict: Any) -> CallResult | None:
    """Act on a step's verdict: the result that ends the call (a refusal, or invalid
    rewritten arguments), or ``None`` to go on (rewritten arguments are set on
    ``call``)."""
    entry = call.entry
    if isinstance(verdict, ToolError):
        return error_result(verdict, entry, call.call_id)
    if isinstance(verdict, Mapping) and call.arguments is not None:
        try:
            call.arguments = entry.parse(dict(verdict))
        except (ValidationError, ToolError) as exc:
            return error_result(exc, entry, call.call_id)
        return None
    logger.error("call hook %s returned %r; refusing %s", _label(hook), verdict, entry.name)
    if hook.fail_closed:
        return error_result(_refusal(entry), entry, call.call_id)
    return None


def _finish_failed(hook: CallHook, call: HookCall, result: CallResult) -> CallResult:
    """The result after an ``after``/``on_error`` step raised: withheld when the hook is
    fail-closed and the call had succeeded, else unchanged."""
    logger.exception("call hook %s failed after %s", _label(hook), call.entry.name)
    if not hook.fail_closed or result.error is not None:
        return result
    err = ToolError(
        ErrorKind.EXECUTION_ERROR,
        f"{call.entry.name} ran, but a check after it failed: its result is withheld.",
    )
    return CallResult(None, err.message, err, result.call_id, result.effective_tool, result.name)


def _add_text(result: CallResult, extra: Any) -> None:
    if isinstance(extra, str):
        result.text = f"{result.text}\n\n{extra}" if result.text else extra


def compile_hooks(hooks: tuple[CallHook, ...], entry: ToolEntry) -> HookPlan | None:
    """The plan of the ``hooks`` that apply to ``entry``; ``None`` when none does
    anything for it. A hook whose ``applies_to`` raises is kept (fail-closed) when it is
    ``fail_closed``, else left out; either way the error is logged."""
    chosen: list[CallHook] = []
    for hook in hooks:
        try:
            applies = hook.applies_to(entry)
        except TOOL_FAILURES:
            logger.exception("applies_to of call hook %s failed on %s", _label(hook), entry.name)
            applies = hook.fail_closed
        except BaseException as exc:
            if steers(exc):
                raise
            logger.exception("applies_to of call hook %s failed on %s", _label(hook), entry.name)
            applies = hook.fail_closed
        if applies:
            chosen.append(hook)
    plan = HookPlan(chosen)
    if plan.admit or plan.before or plan.after or plan.on_error:
        return plan
    return None
