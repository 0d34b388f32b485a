"""The call pipeline: the one path every call takes, read top to bottom.

Every entry point (``Session.call``, ``Session.stream``, calls a tool makes through
its context, ``call_many``, ``run_tool_calls``, the MCP server) runs :func:`run_call`;
they differ only in how they hand in the call and take the result (a progress sink,
a parent call). In order:

1. **resolve** the client name (built-in tools, then external ones);
2. **admit**: the ``admit`` steps of the call hooks compiled for the entry;
3. **validate** the arguments (client parameter names mapped back);
4. **before**: the hooks' ``before`` steps (may refuse or rewrite the arguments); a
   call whose ``async`` step waits (for approval) is tracked from then on, so
   ``cancel(call_id)`` ends it (elsewhere than asyncio: every such call, in a cancel
   scope);
5. **lock** the tool's exclusive state models (a wait counts against the deadline),
   held until the state the call changed is saved;
6. **execute**: the first step inline, the rest under the deadline and cancellable by
   id (:mod:`toolweave.runtime._deadline`); a streaming tool step by step, its progress
   to the sink; on event loops other than asyncio, inside a cancel scope;
7. **finish**: the output through the tool's declared type, the model's text;
8. **post-process** (calls from the host): save the state the call touched (a call
   holding state locks saved it before giving them back), append reminders (not to a
   cancelled call's result);
9. **after**: the hooks' ``after`` or ``on_error`` steps.

A session without hooks skips 2, 4 and 9 with one test each; a call that neither
suspends, takes locks, nor touches state goes from 1 to 8 with no allocation beyond
its context and result.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from toolweave.authoring._context import CallRecord, Context
from toolweave.authoring._reminders import CallInfo, apply_reminders
from toolweave.errors import ErrorKind, ToolError
from toolweave.results import CallResult, Progress
from toolweave.runtime._deadline import Running, Stopped, drive
from toolweave.runtime._hooks import HookCall, HookPlan, apply_verdict, check_failed
from toolweave.runtime._outcomes import (
    NOTHING,
    TOOL_FAILURES,
    after_result,
    error_result,
    failure,
    from_exception,
    no_result,
    steers,
    stop_error,
)

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.runtime._session import Session

__all__ = ["MAX_DEPTH", "Abandoned", "Sink", "emit", "run_call"]

logger = logging.getLogger("toolweave")

MAX_DEPTH = 8
"""How deeply tools may nest calls through ``ctx.call``."""

Sink = Callable[[Progress], Awaitable[None] | None]
"""Where a streaming tool's progress goes: a plain or an async function."""

_new_call_info = CallInfo.__new__


class Abandoned(BaseException):
    """Thrown into a streamed call at its progress item when its consumer leaves early:
    the tool is stopped where it stands and the call is post-processed."""


class _Emit:
    __slots__ = ("item",)

    def __init__(self, item: Progress) -> None:
        self.item = item


@types.coroutine
def emit(item: Progress) -> Generator[Any, Any, None]:
    """The sink of :class:`~toolweave.ToolStream`: hands ``item`` to the stream's
    consumer; the call resumes when the consumer asks for the next item."""
    yield _Emit(item)


async def run_call(
    session: Session,
    name: str,
    arguments: Any = None,
    call_id: str | None = None,
    on_progress: Sink | None = None,
    *,
    _parent: CallRecord | None = None,
    _running: Running | None = None,
) -> CallResult:
    """Run the tool the model called ``name`` with ``arguments`` (JSON text, bytes or a
    dict); :meth:`Session.call <toolweave.Session.call>` is this function.

    The call goes through the session's pipeline (see :mod:`toolweave.runtime._pipeline`):
    hooks, argument validation, state locks, its deadline (cancellable by ``call_id``),
    then post-processing: state it changed is saved and reminders are appended to its
    text. Failures are results with an error; nothing a model sends raises.

    Args:
        session: The session (``self`` of ``Session.call``).
        name: The client-visible tool name.
        arguments: The arguments as the model sent them.
        call_id: The model's id for the call; needed to :meth:`~toolweave.Session.cancel`
            it.
        on_progress: Called with each progress item of a streaming tool (a plain or an
            async function). One that raises is logged (``toolweave`` logger) and the
            call goes on. Without it, a tool with a plain path as well takes that one.
        _parent: For the runtime: the record of the calling tool's call.
        _running: For the runtime: the handle that cancels this call (a stream's own).

    Returns:
        The result.
    """
    # 1. resolve (Session.resolve, inlined: a method call per call is measurable here)
    try:
        entry = session.toolset._by_name.get(name) or session._external.get(name)
    except TypeError:  # an unhashable name
        entry = None
    if entry is None:
        if session._overlay is not None and type(name) is str:
            entry = session._late(name)
        if entry is None:
            return session._unknown(name, call_id)
    if _parent is not None and _parent.depth >= MAX_DEPTH:
        return failure(
            ErrorKind.EXECUTION_ERROR,
            f"{entry.name} was not called: tools may nest calls at most {MAX_DEPTH} deep",
            entry.name,
            None,
        )
    plan: HookPlan | None = None
    if session._hooks:
        plan = session._plans.get(entry, NOTHING)
        if plan is NOTHING:
            plan = session._compile(entry)
    hook_call: HookCall | None = None
    if plan is not None and plan.guards:
        for guard_hook, guard in plan.guards:  # plan.guard, inlined
            try:
                refusal = guard(session, entry)
            except TOOL_FAILURES as exc:
                refusal = check_failed(guard_hook, entry, exc)
            except BaseException as exc:
                if steers(exc):
                    raise
                refusal = check_failed(guard_hook, entry, exc)
            if refusal is not None:
                return error_result(refusal, entry, call_id)
    elif plan is not None:
        # The hooks' view of the call is the call's context: one object per call.
        hook_call = HookCall(session, entry, call_id)
        if _parent is not None:
            hook_call._record = CallRecord(_parent)
        # 2. admit
        if plan.admit:
            if plan.synchronous:  # plan.check, inlined: no coroutine, no frame
                for hook, fn, _ in plan.admit:
                    try:
                        verdict = fn(hook_call)
                    except TOOL_FAILURES as exc:
                        verdict = check_failed(hook, entry, exc)
                    except BaseException as exc:
                        if steers(exc):
                            raise
                        verdict = check_failed(hook, entry, exc)
                    if verdict is not None:
                        refused = apply_verdict(hook, hook_call, verdict)
                        if refused is not None:
                            return await _after(plan, hook_call, refused)
            else:
                refused = await plan.check(hook_call, plan.admit)
                if refused is not None:
                    return await _after(plan, hook_call, refused)
            entry = hook_call.entry  # an admit step may route the call (HookCall.route)
    # 3. validate
    try:
        args = entry.parse(arguments)
    except (ValidationError, ToolError) as exc:
        result = error_result(exc, entry, call_id)
        if hook_call is None:
            return result
        assert plan is not None
        return await _after(plan, hook_call, result)
    # 4. before
    if hook_call is not None:
        assert plan is not None
        hook_call.arguments = args
        if plan.before:
            if plan.synchronous:  # as in step 2
                for hook, fn, _ in plan.before:
                    try:
                        verdict = fn(hook_call)
                    except TOOL_FAILURES as exc:
                        verdict = check_failed(hook, entry, exc)
                    except BaseException as exc:
                        if steers(exc):
                            raise
                        verdict = check_failed(hook, entry, exc)
                    if verdict is not None:
                        refused = apply_verdict(hook, hook_call, verdict)
                        if refused is not None:
                            return await _after(plan, hook_call, refused)
            else:
                # An async step may wait (for a person's approval): a call whose step
                # waits is tracked from then on, so `running` lists it and
                # `cancel(call_id)` ends it; the execute step goes on with its handle.
                if session._inline or (session._inline is None and session._detect_inline()):
                    check = plan.check(hook_call, plan.before)
                    try:
                        pending = check.send(None)  # most steps answer at once
                    except StopIteration as done:
                        refused = done.value
                    else:
                        _running = _running or Running()
                        refused = await _before_waits(
                            session, check, pending, entry, call_id, _running
                        )
                else:
                    _running = _running or Running()
                    refused = await _before_scoped(session, plan, hook_call, call_id, _running)
                if refused is not None:
                    return await _after(plan, hook_call, refused)
            args = hook_call.arguments
    if hook_call is None:
        ctx = Context(session, entry, call_id)
        if _parent is not None:
            ctx._record = CallRecord(_parent)
    else:
        ctx = hook_call
    tool = entry.tool
    # 5.-7. lock, execute, finish
    if tool.streaming and (on_progress is not None or tool.invoke is None):
        result = await _run_locked(session, ctx, entry, args, on_progress, _running)
    elif tool.state_locks is not None or _parent is not None or _running is not None:
        result = await _run_locked(session, ctx, entry, args, None, _running)
    elif tool.is_coroutine and not (session._inline or session._detect_inline()):
        result = await _run_locked(session, ctx, entry, args, None, None)
    else:
        try:
            if tool.is_coroutine:
                coro = tool.invoke(ctx, args)  # type: ignore[misc]
                try:
                    pending = coro.send(None)
                except StopIteration as stop:
                    raw = stop.value
                else:
                    raw = await _wait(session, coro, pending, entry, call_id, None)
            else:
                raw = tool.invoke(ctx, args)  # type: ignore[misc]
            if ctx._record is None and (hook_call is None or not plan.ends):  # type: ignore[union-attr]
                output, text = tool.finish(raw)
                result = CallResult(output, text, None, call_id, tool.fqid, entry.name)
                if not session._reminders:
                    return result
            else:
                result = _result(ctx, raw)
        except TOOL_FAILURES as exc:
            result = from_exception(exc, entry, call_id)
        except BaseException as exc:  # a GeneratorExit, a foreign BaseException, ...
            if steers(exc):
                raise
            result = from_exception(exc, entry, call_id)
    # 8. post-process
    if _parent is None:
        record = ctx._record
        if record is not None and record.slots:
            result = await _save(session, ctx, result, record)
        reminders = session._reminders
        if reminders and (result.error is None or result.error.kind is not ErrorKind.CANCELLED):
            ctx._finished = True  # reminders may read any state now
            info = _new_call_info(CallInfo)  # CallInfo(...) without its __init__ frame
            info.name = entry.name
            info.tool = result.effective_tool or tool.fqid
            info.args = args
            info.result = result
            result.text = apply_reminders(reminders, ctx, info, result.text)
    elif result.error is None:
        _parent.effective = result.effective_tool
    # 9. after
    if hook_call is not None:
        assert plan is not None
        if not plan.ends:
            return result
        if plan.synchronous:
            return plan.finish_now(hook_call, result)
        return await plan.finish(hook_call, result)
    return result


async def _after(plan: HookPlan, call: HookCall, result: CallResult) -> CallResult:
    """Step 9 for a call that ended early (refused, or invalid arguments)."""
    if not plan.ends:
        return result
    if plan.synchronous:
        return plan.finish_now(call, result)
    return await plan.finish(call, result)


_NO_DEADLINE = 1e9
"""Seconds: a ``before`` step (a person deciding) is not under the call's deadline."""


async def _before_waits(
    session: Session,
    check: Coroutine[Any, Any, CallResult | None],
    pending: Any,
    entry: ToolEntry,
    call_id: str | None,
    running: Running,
) -> CallResult | None:
    """Step 4 for ``before`` steps that suspended after their inline first step (on
    asyncio): the call is tracked and cancellable by id; it stays tracked when it goes
    on to run."""
    session._track(call_id, running)
    try:
        refused: CallResult | None = await drive(check, pending, running, _NO_DEADLINE)
    except Stopped:
        refused = error_result(stop_error(running, entry, 0.0), entry, call_id)
    except BaseException:
        session._untrack(call_id, running)
        raise
    finally:
        check.close()
    if refused is not None:
        session._untrack(call_id, running)
    return refused


async def _before_scoped(
    session: Session, plan: HookPlan, call: HookCall, call_id: str | None, running: Running
) -> CallResult | None:
    """Step 4 for ``async`` steps on event loops other than asyncio: in a cancel scope,
    the call tracked and cancellable by id; it stays tracked when it goes on to run."""
    session._track(call_id, running)
    try:
        with anyio.CancelScope() as scope:
            running.scope = scope
            if running.cancelled:
                scope.cancel()
            refused = await plan.check(call, plan.before)
    except BaseException:
        session._untrack(call_id, running)
        raise
    finally:
        running.scope = None
    if scope.cancelled_caught:
        entry = call.entry
        assert entry is not None
        refused = error_result(stop_error(running, entry, 0.0), entry, call_id)
    if refused is not None:
        session._untrack(call_id, running)
    return refused


def _result(ctx: Context, raw: Any) -> CallResult:
    """The result of a tool that returned ``raw`` (may raise from the tool's finisher).

    A tool that returns the :class:`CallResult` of an inner call hands that result on;
    otherwise the effective tool is the last one the call delegated to, if any.
    """
    entry = ctx.entry
    assert entry is not None
    if type(raw) is CallResult:
        return CallResult(
            raw.output, raw.text, raw.error, ctx.call_id, raw.effective_tool, entry.name
        )
    output, text = entry.tool.finish(raw)
    record = ctx._record
    effective = entry.tool.fqid
    if record is not None and record.effective is not None:
        effective = record.effective
    return CallResult(output, text, None, ctx.call_id, effective, entry.name)


async def _save(
    session: Session,
    ctx: Context,
    result: CallResult,
    record: CallRecord,
    keys: set[str] | None = None,
) -> CallResult:
    """Save the state the call touched (``record`` is the outermost call's; ``keys``:
    only the models of those keys), and forget it (nothing is left to save for it); a
    conflict with another writer turns a success into ``execution_error`` (nothing is
    lost: the other write is kept)."""
    slots = record.slots
    seen = record.seen
    assert slots is not None
    if keys is None:
        record.slots = record.seen = None
        mine = list(slots.values())
    else:
        mine = [slot for slot in slots.values() if slot.key in keys]
        if not mine:
            return result
        for slot in mine:
            del slots[slot.model]
    conflict = await session._state.persist(mine, seen=seen)
    if conflict is None or result.error is not None:
        return result
    entry = ctx.entry
    assert entry is not None
    err = ToolError(
        ErrorKind.EXECUTION_ERROR,
        f"{entry.name} ran, but its state was changed by another process meanwhile: "
        "its changes were not saved (the other process's were kept); try again",
    )
    return error_result(err, entry, ctx.call_id)


async def _run_locked(
    session: Session,
    ctx: Context,
    entry: ToolEntry,
    args: Any,
    sink: Sink | None,
    running: Running | None,
) -> CallResult:
    """Steps 5 to 7 for a call that takes state locks, is a tool's inner call, streams,
    or is cancellable through a handle of its own."""
    call_id = ctx.call_id
    tool = entry.tool
    if running is None:
        running = Running()
    session._track(call_id, running)
    taken: list[tuple[str, anyio.Semaphore]] = []
    root: CallRecord | None = None
    timeout = session._timeout_for(entry)
    deadline = anyio.current_time() + timeout
    try:
        models = tool.state_locks
        if models is not None:
            root = ctx._call_record().root
            held = root.held
            if held is None:
                held = root.held = set()
            waiting = False
            for key, lock in session._state.locks(models):
                if key in held:
                    continue
                if not waiting:
                    try:
                        lock.acquire_nowait()
                    except anyio.WouldBlock:
                        waiting = True
                if waiting:
                    # Key order keeps waiting free of deadlocks; the wait counts against
                    # the deadline and can be cancelled (no tool code runs yet).
                    with anyio.CancelScope(deadline=deadline) as scope:
                        running.scope = scope
                        if running.cancelled:
                            scope.cancel()
                        await lock.acquire()
                    running.scope = None
                    if scope.cancelled_caught:
                        return error_result(stop_error(running, entry, timeout), entry, call_id)
                taken.append((key, lock))
                held.add(key)
        try:
            if running.cancelled:
                raise Stopped
            if (
                tool.streaming
                and tool.open_stream is not None
                and (sink is not None or tool.invoke is None)
            ):
                raw = await _stream(session, ctx, entry, args, sink, running, deadline)
            elif tool.is_coroutine:
                coro = tool.invoke(ctx, args)  # type: ignore[misc]
                raw = await _execute_coro(session, coro, entry, running)
            else:
                raw = tool.invoke(ctx, args)  # type: ignore[misc]
            result = _result(ctx, raw)
        except Abandoned:
            err = ToolError(ErrorKind.CANCELLED, f"{entry.name} was stopped: its stream was closed")
            result = error_result(err, entry, call_id)
        except Stopped:
            result = error_result(stop_error(running, entry, timeout), entry, call_id)
        except TOOL_FAILURES as exc:
            result = from_exception(exc, entry, call_id)
        except BaseException as exc:  # a GeneratorExit, a foreign BaseException, ...
            if steers(exc):
                raise
            result = from_exception(exc, entry, call_id)
        if taken and root is not None and root.slots:
            # Saved before the locks are given back: the next call holding them must not
            # change the state while this call's save runs (a conflict would reload it
            # under that call). A call from the host saves all it touched (step 8 then
            # finds nothing left); an inner call the models whose locks it took (the
            # outer call does not hold them when it saves).
            if ctx._record is root:
                result = await _save(session, ctx, result, root)
            else:
                result = await _save(session, ctx, result, root, {key for key, _ in taken})
        return result
    finally:
        if taken:
            assert root is not None
            assert root.held is not None
            for key, lock in reversed(taken):
                root.held.discard(key)
                lock.release()
        session._untrack(call_id, running)


async def _execute_coro(
    session: Session, coro: Coroutine[Any, Any, Any], entry: ToolEntry, running: Running
) -> Any:
    """Run a tool's coroutine: on asyncio the first step inline and the rest under the
    deadline; elsewhere all of it in a cancel scope. Raises ``Stopped`` when stopped."""
    if session._inline or (session._inline is None and session._detect_inline()):
        try:
            pending = coro.send(None)
        except StopIteration as stop:
            return stop.value
        return await _wait(session, coro, pending, entry, None, running)
    try:
        with anyio.CancelScope(
            deadline=anyio.current_time() + session._timeout_for(entry)
        ) as scope:
            running.scope = scope
            if running.cancelled:
                scope.cancel()
            return await coro
    finally:
        running.scope = None
        coro.close()
    raise Stopped


async def _wait(
    session: Session,
    coro: Coroutine[Any, Any, Any],
    pending: Any,
    entry: ToolEntry,
    call_id: str | None,
    running: Running | None,
) -> Any:
    """Finish a call that suspended after its inline first step, under its deadline.

    With ``running`` (a call of :func:`_run_locked`, tracked there) a stop raises
    ``Stopped``; without, the call is tracked by ``call_id`` here and a stop raises the
    ``timeout`` or ``cancelled`` error.
    """
    timeout = session._timeout_for(entry)
    if running is not None:
        try:
            return await drive(coro, pending, running, timeout)
        finally:
            coro.close()
    running = session._track(call_id, Running())
    try:
        return await drive(coro, pending, running, timeout)
    except Stopped:
        raise stop_error(running, entry, timeout) from None
    finally:
        coro.close()
        session._untrack(call_id, running)


async def _stream(
    session: Session,
    ctx: Context,
    entry: ToolEntry,
    args: Any,
    sink: Sink | None,
    running: Running,
    deadline: float,
) -> Any:
    """Run a streaming tool's generator to its output, step by step under the deadline,
    handing each progress item to ``sink``.

    No cancel scope of ours surrounds a step on asyncio, so the tool may hold its own
    scopes and task groups across its yields; closing the generator (at the end, when
    stopped, or when the consumer leaves) happens where it stands.
    """
    assert entry.tool.open_stream is not None
    agen: Any = entry.tool.open_stream(ctx, args)
    inline = session._inline or (session._inline is None and session._detect_inline())
    output: Any = NOTHING
    finished = False
    try:
        while True:
            if running.cancelled:
                raise Stopped
            if inline:
                step: Any = agen.__anext__()
                try:
                    try:
                        pending = step.send(None)
                    except StopIteration as got:
                        item = got.value
                    else:
                        remaining = max(deadline - anyio.current_time(), 0.0)
                        item = await drive(step, pending, running, remaining)
                except StopAsyncIteration:
                    finished = True
                    break
                finally:
                    step.close()
            else:
                with anyio.CancelScope(deadline=deadline) as scope:
                    running.scope = scope
                    try:
                        item = await agen.__anext__()
                    except StopAsyncIteration:
                        finished = True
                        break
                    finally:
                        running.scope = None
                if scope.cancelled_caught:
                    raise Stopped
            if output is not NOTHING:
                raise after_result(entry.name, item)
            if not isinstance(item, Progress):
                output = item
            elif sink is not None:
                try:
                    maybe = sink(item)
                    if maybe is not None:
                        await maybe
                except Exception:
                    logger.exception("the progress callback of %s raised", entry.name)
    except GeneratorExit:
        finished = True  # the stream was dropped unclosed: nothing may be awaited now
        raise
    finally:
        if not finished:
            # Close it here: inside whatever scopes the generator holds at its yield.
            try:
                await agen.aclose()
            except Exception:
                logger.exception("closing the stream of %s failed", entry.name)
    if output is NOTHING:
        raise no_result(entry.name)
    return output
