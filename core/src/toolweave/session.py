"""The session: one agent conversation's view of a tool set, and the path of a call."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, final

import anyio
import anyio.from_thread
from pydantic import ValidationError

from toolweave._batch import CallLike, run_batch
from toolweave._deadline import Running, Stopped, drive
from toolweave._erasure import format_validation_error
from toolweave._guards import Guard, check_guards
from toolweave.context import CallRecord, Context
from toolweave.errors import ErrorKind, MissingResourceError, ToolError, UsageError
from toolweave.notifications import Notification, Notifier
from toolweave.reminders import CallInfo, apply_reminders
from toolweave.resources import Resources, Workspace
from toolweave.state import SessionState, SQLiteStateStore, StateStore, default_state_path
from toolweave.stream import CallResult, Progress
from toolweave.toolset import ToolEntry

if TYPE_CHECKING:
    from types import TracebackType

    from toolweave._erasure import ErasedTool
    from toolweave.reminders import Reminder
    from toolweave.toolset import ToolSet

__all__ = ["Session", "SyncSession", "ToolStream"]

logger = logging.getLogger("toolweave")

T = TypeVar("T")

DEFAULT_TIMEOUT = 120.0
"""Seconds a call may run when neither the tool, its configuration nor the session
says otherwise (local and external tools alike)."""

MAX_DEPTH = 8
"""How deeply meta-tools may nest calls through ``ctx.call``."""

ProgressCallback = Callable[[Progress], Awaitable[None] | None]


def _failure(
    kind: ErrorKind, message: str, name: str, call_id: str | None, fqid: str | None = None
) -> CallResult:
    return CallResult(None, message, ToolError(kind, message), call_id, fqid, name)


def _from_exception(exc: BaseException, entry: ToolEntry, call_id: str | None) -> CallResult:
    if isinstance(exc, ToolError):
        err = exc
    elif isinstance(exc, MissingResourceError):
        err = ToolError(ErrorKind.UNAVAILABLE, f"{entry.name} cannot run here: {exc}")
    elif isinstance(exc, NotImplementedError):
        err = ToolError(ErrorKind.UNIMPLEMENTED, f"{entry.name} is not implemented: {exc}")
    else:
        logger.error("tool %s raised", entry.tool.fqid, exc_info=exc)
        text = str(exc) or "no details"
        err = ToolError(
            ErrorKind.EXECUTION_ERROR, f"{entry.name} failed: {type(exc).__name__}: {text}"
        )
    return CallResult(None, err.message, err, call_id, entry.tool.fqid, entry.name)


def _stopped(running: Running | None, entry: ToolEntry, timeout: float) -> ToolError:
    if running is not None and running.cancelled:
        return ToolError(ErrorKind.CANCELLED, f"{entry.name} was cancelled")
    return ToolError(
        ErrorKind.TIMEOUT,
        f"{entry.name} did not finish within {timeout:g} s and was stopped; "
        "try a smaller request or a longer timeout",
    )


_NOTHING: Any = object()


async def _drain(agen: Any, name: str) -> Any:
    """Run a tool's stream to its end without a consumer: the output, progress dropped."""
    output = _NOTHING
    async for item in agen:
        if output is not _NOTHING:
            # Close it here, inside whatever scopes the generator holds at its yield.
            await agen.aclose()
            what = "progress" if isinstance(item, Progress) else "a second result"
            raise ToolError(ErrorKind.EXECUTION_ERROR, f"{name} yielded {what} after its result")
        if not isinstance(item, Progress):
            output = item
    if output is _NOTHING:
        raise ToolError(ErrorKind.EXECUTION_ERROR, f"{name} ended without a result")
    return output


@final
class Session:
    """One conversation's use of a :class:`~toolweave.ToolSet`.

    Holds the session's resources (layered over the host's), its runtime state and
    guards, runs calls, and tracks running calls so that they can be cancelled by id.
    ``call`` never raises for anything a model sends: every failure is a
    :class:`~toolweave.CallResult` with an error.

    Args:
        toolset: The immutable set to serve.
        session_id: A stable id (state and logs are keyed by it); random by default.
            A new session with the id (and workspace) of an earlier one sees its state.
        resources: Host resources shared by sessions; the session layers its own on top.
        workspace: The workspace root (default: a ``Workspace`` in ``resources``, else
            the current directory).
        default_timeout: Seconds a local tool may run when neither it nor its
            configuration sets a deadline (default 120).
        external_timeout: The same for external (MCP) tools (default 120).
        reminders: ``False`` turns reminders off for this session (default: the set's
            ``reminders`` option).
        state_store: Where runtime state is kept (default: a
            :class:`~toolweave.state.StateStore` in ``resources``, else the workspace's
            ``.toolweave/state.db``).
        debug: Strict checks meant for tests: a tool emitting a notification it did not
            declare fails instead of logging a warning.
    """

    __slots__ = (
        "_external",
        "_guards",
        "_inline",
        "_listing",
        "_notifier",
        "_reminders",
        "_running",
        "_state",
        "debug",
        "default_timeout",
        "external_timeout",
        "external_version",
        "resources",
        "session_id",
        "toolset",
    )

    def __init__(
        self,
        toolset: ToolSet,
        *,
        session_id: str | None = None,
        resources: Resources | None = None,
        workspace: str | Path | None = None,
        default_timeout: float | None = None,
        external_timeout: float | None = None,
        reminders: bool | None = None,
        state_store: StateStore | None = None,
        debug: bool = False,
    ) -> None:
        self.toolset = toolset
        self.session_id = session_id or uuid.uuid4().hex
        self.resources = resources.child() if resources is not None else Resources()
        if workspace is not None:
            self.resources.insert(Workspace(Path(workspace)))
        elif Workspace not in self.resources:
            self.resources.insert(Workspace(Path.cwd()))
        self.default_timeout = DEFAULT_TIMEOUT if default_timeout is None else default_timeout
        self.external_timeout = DEFAULT_TIMEOUT if external_timeout is None else external_timeout
        self.debug = debug
        on = toolset.options.get("reminders", True) if reminders is None else reminders
        self._reminders: tuple[Reminder, ...] = tuple(toolset.reminders) if on else ()
        self._guards: tuple[Guard, ...] = ()
        self._notifier: Notifier | None = None
        self._state = SessionState(self.session_id, self._store_opener(state_store))
        self._running: dict[str, Running] = {}
        self._inline: bool | None = None
        """Run a call's first step inline (asyncio); found out on the first call."""
        self._external: dict[str, ToolEntry] = {}
        self._listing: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        self.external_version = 0
        """Bumped on every change of the external tools; hosts can watch it."""
        if toolset.packs is not None:
            toolset.packs.provide_resources(self.resources, self)

    def __repr__(self) -> str:
        return f"<Session {self.session_id} tools={len(self.toolset)}>"

    @property
    def workspace(self) -> Path:
        """The workspace root."""
        return self.resources.require(Workspace).root

    # -- resources, state, notifications -----------------------------------------------

    def get_resource(self, key: type[T]) -> T | None:
        """The resource stored under ``key`` (the session's, else the host's), or ``None``."""
        return self.resources.get(key)

    def set_resource(self, value: Any, key: type[Any] | None = None) -> None:
        """Store ``value`` under ``key`` (default: its type) for this session only."""
        if key is None:
            self.resources.insert(value)
        else:
            self.resources.insert(value, key)

    def _store_opener(self, explicit: StateStore | None) -> Callable[[], StateStore]:
        def open_store() -> StateStore:
            if explicit is not None:
                return explicit
            shared = self.resources.get(StateStore)  # type: ignore[type-abstract]
            if shared is not None:
                return shared
            return SQLiteStateStore.shared(default_state_path(self.workspace))

        return open_store

    @property
    def state(self) -> SessionState:
        """The session's runtime state (``session.state.get(TodoState)`` reads a model;
        after changing one outside a call, ``await session.save_state()``)."""
        return self._state

    async def save_state(self) -> None:
        """Save every loaded state model that changed since it was last saved."""
        await self._state.persist_all()

    @property
    def notifier(self) -> Notifier:
        """Where the session's notifications go: subscribe here.

        A :class:`~toolweave.notifications.Notifier` from the resources when the host
        provided one (shared by its sessions), else the session's own.
        """
        notifier = self._notifier
        if notifier is None:
            notifier = self.resources.get(Notifier)
            if notifier is None:
                notifier = Notifier(debug=self.debug)
                self.resources.insert(notifier)
            self._notifier = notifier
        return notifier

    def _notify(self, ctx: Context, name: str, data: Any) -> None:
        entry = ctx.entry
        tool = entry.tool if entry is not None else None
        notification = Notification(
            name, data, tool.fqid if tool is not None else "", self.session_id, ctx.call_id
        )
        declared = tool.emitted_notifications if tool is not None else None
        notifier = self.notifier
        try:
            anyio.from_thread.run_sync(notifier.emit, notification, declared)
        except anyio.NoEventLoopError:  # in the event loop already
            notifier.emit(notification, declared)

    # -- guards ---------------------------------------------------------------------

    def add_guard(self, guard: Guard) -> Callable[[], None]:
        """Check every call with ``guard`` before its arguments are validated.

        Guards run in the order they were added; the first refusal is the call's result.
        Returns a function that removes the guard again.

        Example:
            ``remove = session.add_guard(read_only_guard("Plan mode is on."))``
        """
        self._guards = (*self._guards, guard)

        def remove() -> None:
            self.remove_guard(guard)

        return remove

    def remove_guard(self, guard: Guard) -> bool:
        """Stop checking calls with ``guard``; ``True`` when it was there."""
        kept = tuple(g for g in self._guards if g is not guard)
        found = len(kept) != len(self._guards)
        self._guards = kept
        return found

    @property
    def guards(self) -> tuple[Guard, ...]:
        """The guards, in the order they run."""
        return self._guards

    # -- listing ------------------------------------------------------------------

    def definitions(
        self,
        format: str = "openai",
        *,
        include_external: bool = True,
    ) -> list[dict[str, Any]]:
        """Definitions of the tools to send to the model, in a provider's ``format``.

        Built-in tools come first in configured order, then external tools sorted by
        client name, so the listing is byte-stable for prompt caches. The list is
        rendered once per format (and external-tool version) and shared: treat it as
        read-only.
        """
        base = self.toolset.definitions(format)
        if not include_external or not self._external:
            return base
        key = (format, True)
        cached = self._listing.get(key)
        if cached is None:
            from toolweave.formats import render

            extra = [self._external[n].definition for n in sorted(self._external)]
            cached = base + render(extra, format)
            self._listing[key] = cached
        return cached

    def render_prompt(self, text: str) -> str:
        """Render a prompt template with the placeholders of tool descriptions
        (``{tool:edit}`` becomes the client name of the set's edit tool).

        Raises:
            ConfigError: A placeholder is unknown or names no configured tool.
        """
        return self.toolset.render_template(text)

    # -- external tools -------------------------------------------------------------

    def register_external(self, tool: ErasedTool, *, name: str | None = None) -> ToolEntry:
        """Add a JSON-only tool (see :func:`toolweave.external.external_tool`) at run time.

        Args:
            tool: The erased handle.
            name: The name before the set's ``external_prefix`` (default: the tool's id);
                the returned entry's ``name`` is the client-visible one.

        Raises:
            UsageError: The name is taken by a built-in tool (external tools never
                shadow them) or by another external tool, or the set is read-only and
                the tool is not.
        """
        entry = self.toolset.external_entry(tool, name)
        client = entry.name
        if client in self.toolset._by_name:
            raise UsageError(f"external tool name {client!r} is taken by a built-in tool")
        if client in self._external:
            raise UsageError(f"external tool name {client!r} is already registered")
        self._external[client] = entry
        self._external_changed()
        return entry

    def unregister_external(self, name: str) -> bool:
        """Remove an external tool by client name; ``True`` when it was there."""
        if self._external.pop(name, None) is None:
            return False
        self._external_changed()
        return True

    def _external_changed(self) -> None:
        self._listing.clear()
        self.external_version += 1

    @property
    def external(self) -> dict[str, ToolEntry]:
        """The external tools by client name (a copy)."""
        return dict(self._external)

    # -- calling ------------------------------------------------------------------

    def _lookup(self, name: str) -> ToolEntry | None:
        return self.toolset._by_name.get(name) or self._external.get(name)

    def _unknown(self, name: str, call_id: str | None) -> CallResult:
        names = self.toolset.names + sorted(self._external)
        shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
        return _failure(
            ErrorKind.NOT_FOUND,
            f"There is no tool named {name!r}. Available tools: {shown or 'none'}.",
            name,
            call_id,
        )

    async def call(
        self,
        name: str,
        arguments: Any = None,
        call_id: str | None = None,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> CallResult:
        """Run the tool the model called ``name`` with ``arguments`` (JSON text, bytes or dict).

        The call passes the session's guards, then argument validation, runs under its
        deadline (cancellable by ``call_id``), and is post-processed: state it changed
        is saved and reminders are appended to its text.

        Args:
            name: The client-visible tool name.
            arguments: The arguments as the model sent them.
            call_id: The model's id for the call; needed to :meth:`cancel` it.
            on_progress: Called with each progress item of a streaming tool.

        Returns:
            The result; failures carry an error and never raise.
        """
        entry = self.toolset._by_name.get(name) or self._external.get(name)
        if entry is None:
            return self._unknown(name, call_id)
        if self._guards:
            refused = check_guards(self._guards, self, entry)
            if refused is not None:
                return CallResult(None, refused.message, refused, call_id, entry.tool.fqid, name)
        try:
            args = entry.parse(arguments)
        except ValidationError as exc:
            msg = format_validation_error(exc, name, entry.to_client)
            return _failure(ErrorKind.INVALID_PARAMS, msg, name, call_id, entry.tool.fqid)
        except ToolError as err:
            return CallResult(None, err.message, err, call_id, entry.tool.fqid, name)
        tool = entry.tool
        ctx = Context(self, entry, call_id)
        if tool.streaming:
            return await ToolStream._collect(self, entry, ctx, args, on_progress)
        if tool.state_type is not None:
            return await self._call_serialised(ctx, args)
        try:
            if tool.is_coroutine:
                coro = tool.invoke(ctx, args)  # type: ignore[misc]
                if self._inline:
                    try:
                        pending = coro.send(None)
                    except StopIteration as stop:
                        raw = stop.value
                    else:
                        raw = await self._wait(coro, pending, entry, call_id)
                else:
                    raw = await self._scoped(coro, entry, call_id)
            else:
                raw = tool.invoke(ctx, args)  # type: ignore[misc]
            if ctx._record is None and not self._reminders:
                output, text = tool.finish(raw)
                return CallResult(output, text, None, call_id, tool.fqid, name)
            result = self._result(ctx, raw)
        except Exception as exc:
            result = _from_exception(exc, entry, call_id)
            if ctx._record is None and not self._reminders:
                return result
        return await self._post(ctx, args, result)

    def _timeout_for(self, entry: ToolEntry) -> float:
        timeout = entry.timeout
        if timeout is not None:
            return timeout
        return self.default_timeout if entry.tool.source == "local" else self.external_timeout

    async def _wait(
        self, coro: Coroutine[Any, Any, Any], pending: Any, entry: ToolEntry, call_id: str | None
    ) -> Any:
        """Finish a call that suspended after its inline first step: under its
        deadline, cancellable by id (see :mod:`toolweave._deadline`)."""
        timeout = self._timeout_for(entry)
        running = Running()
        if call_id is not None:
            self._running[call_id] = running
        try:
            return await drive(coro, pending, running, timeout)
        except Stopped:
            raise _stopped(running, entry, timeout) from None
        finally:
            coro.close()
            if call_id is not None and self._running.get(call_id) is running:
                del self._running[call_id]

    async def _scoped(
        self, coro: Coroutine[Any, Any, Any], entry: ToolEntry, call_id: str | None
    ) -> Any:
        """Run a whole call inside a cancel scope (event loops other than asyncio)."""
        if self._inline is None and self._detect_inline():
            try:
                pending = coro.send(None)
            except StopIteration as stop:
                return stop.value
            return await self._wait(coro, pending, entry, call_id)
        timeout = self._timeout_for(entry)
        running = Running()
        if call_id is not None:
            self._running[call_id] = running
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                running.scope = scope
                return await coro
        finally:
            coro.close()
            if call_id is not None and self._running.get(call_id) is running:
                del self._running[call_id]
        raise _stopped(running, entry, timeout)

    def _detect_inline(self) -> bool:
        """Whether calls may run their first step inline (asyncio); remembered."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._inline = False
        else:
            self._inline = True
        return self._inline

    def _result(self, ctx: Context, raw: Any) -> CallResult:
        """The result of a tool that returned ``raw`` (may raise from the tool's finisher).

        A tool that returns the :class:`CallResult` of an inner call hands that result
        on; otherwise the effective tool is the last one the call delegated to, if any.
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

    async def _post(self, ctx: Context, args: Any, result: CallResult) -> CallResult:
        """Post-processing of an outer call: save the state it touched, then append
        reminders (not after a cancellation). Never raises."""
        record = ctx._record
        if record is not None and record.slots:
            await self._state.persist(list(record.slots.values()))
        if self._reminders and (result.error is None or result.error.kind != ErrorKind.CANCELLED):
            entry = ctx.entry
            assert entry is not None
            info = CallInfo(entry.name, result.effective_tool or entry.tool.fqid, args, result)
            result.text = apply_reminders(self._reminders, ctx, info, result.text)
        return result

    async def _call_serialised(self, ctx: Context, args: Any) -> CallResult:
        """A call of a tool that declares a state model: it runs while holding that
        model's lock, from before the tool starts until its state is saved."""
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        assert tool.state_type is not None
        key, lock = self._state.lock(tool.state_type)
        try:
            lock.acquire_nowait()
        except anyio.WouldBlock:
            return await self._call_after_lock(ctx, args, key, lock)
        record = ctx._call_record()
        record.held = {key}
        try:
            try:
                raw = await self._invoke(ctx, args)
                result = self._result(ctx, raw)
            except Exception as exc:
                result = _from_exception(exc, entry, ctx.call_id)
            return await self._post(ctx, args, result)
        finally:
            record.held = None
            lock.release()

    async def _invoke(self, ctx: Context, args: Any) -> Any:
        """Run a non-streaming tool as :meth:`call` does: first step inline, the rest
        under the deadline."""
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        if not tool.is_coroutine:
            return tool.invoke(ctx, args)  # type: ignore[misc]
        coro = tool.invoke(ctx, args)  # type: ignore[misc]
        if not self._inline:
            return await self._scoped(coro, entry, ctx.call_id)
        try:
            pending = coro.send(None)
        except StopIteration as stop:
            return stop.value
        return await self._wait(coro, pending, entry, ctx.call_id)

    async def _call_after_lock(
        self, ctx: Context, args: Any, key: str, lock: anyio.Semaphore
    ) -> CallResult:
        """:meth:`_call_serialised` when another call holds the lock: the wait for it
        counts against the deadline and can be cancelled."""
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        call_id = ctx.call_id
        record = ctx._call_record()
        timeout = self._timeout_for(entry)
        running = Running()
        if call_id is not None:
            self._running[call_id] = running
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                running.scope = scope
                async with lock:
                    record.held = {key}
                    try:
                        if tool.is_coroutine:
                            raw = await tool.invoke(ctx, args)  # type: ignore[misc]
                        else:
                            raw = tool.invoke(ctx, args)  # type: ignore[misc]
                        result = self._result(ctx, raw)
                    except Exception as exc:
                        result = _from_exception(exc, entry, call_id)
                    try:
                        return await self._post(ctx, args, result)
                    finally:
                        record.held = None
        finally:
            if call_id is not None and self._running.get(call_id) is running:
                del self._running[call_id]
        stopped = _stopped(running, entry, timeout)
        return await self._post(
            ctx, args, CallResult(None, stopped.message, stopped, call_id, tool.fqid, entry.name)
        )

    async def _call_inner(self, parent: Context, name: str, arguments: Any) -> CallResult:
        """A call made by a tool through its context: guards, validation and deadline
        as usual; no reminders, no persistence (the outer call does both)."""
        parent_record = parent._call_record()
        if parent_record.depth >= MAX_DEPTH:
            return _failure(
                ErrorKind.EXECUTION_ERROR,
                f"{name} was not called: tools may nest calls at most {MAX_DEPTH} deep",
                name,
                None,
            )
        entry = self._lookup(name)
        if entry is None:
            return self._unknown(name, None)
        if self._guards:
            refused = check_guards(self._guards, self, entry)
            if refused is not None:
                return CallResult(None, refused.message, refused, None, entry.tool.fqid, name)
        try:
            args = entry.parse(arguments)
        except ValidationError as exc:
            msg = format_validation_error(exc, name, entry.to_client)
            return _failure(ErrorKind.INVALID_PARAMS, msg, name, None, entry.tool.fqid)
        except ToolError as err:
            return CallResult(None, err.message, err, None, entry.tool.fqid, name)
        tool = entry.tool
        ctx = Context(self, entry, None)
        ctx._record = CallRecord(parent_record)
        root = parent_record.root
        try:
            state_type = tool.state_type
            key, lock = self._state.lock(state_type) if state_type is not None else ("", None)
            if lock is None or (root.held is not None and key in root.held):
                raw = await self._run_inner(ctx, args)
            else:
                async with lock:
                    held = root.held = root.held or set()
                    held.add(key)
                    try:
                        raw = await self._run_inner(ctx, args)
                    finally:
                        held.discard(key)
            result = self._result(ctx, raw)
        except Exception as exc:
            result = _from_exception(exc, entry, None)
        if result.error is None:
            parent_record.effective = result.effective_tool
        return result

    async def _run_inner(self, ctx: Context, args: Any) -> Any:
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        timeout = self._timeout_for(entry)
        with anyio.CancelScope(deadline=anyio.current_time() + timeout):
            if tool.streaming:
                assert tool.open_stream is not None
                return await _drain(tool.open_stream(ctx, args), entry.name)
            if tool.is_coroutine:
                return await tool.invoke(ctx, args)  # type: ignore[misc]
            return tool.invoke(ctx, args)  # type: ignore[misc]
        raise _stopped(None, entry, timeout)

    async def call_many(
        self, calls: Iterable[CallLike], *, limit: int | None = None
    ) -> list[CallResult]:
        """Run the several tool calls of one model turn; results in call order.

        When every call is concurrency-safe (read-only tools are, unless they say
        otherwise; unknown names fail at once and count as safe), they run concurrently;
        otherwise one after the other, in the given order. A failing call never cancels
        the others: its failure is its result.

        Args:
            calls: ``(name, arguments[, call_id])`` tuples, mappings with those keys, or
                objects with those attributes (``toolweave.formats.ToolCall``).
            limit: At most this many calls at a time (default: all of them).
        """
        return await run_batch(self, calls, limit)

    def stream(self, name: str, arguments: Any = None, call_id: str | None = None) -> ToolStream:
        """Run a call in streaming mode: progress items, then exactly one CallResult.

        Example:
            ``async with session.stream("bash", {"command": "make"}, "c1") as items:``
            ``    async for item in items: ...``
        """
        return ToolStream(self, name, arguments, call_id)

    def cancel(self, call_id: str) -> bool:
        """Cancel the running call ``call_id`` at once; it ends with ``cancelled``.

        The call's cancel scope is cancelled: the tool receives the event loop's
        cancellation exception at its current ``await`` and must let it propagate
        (processes it started are killed with their group; see
        :func:`toolweave.process_group`). Nothing else the session does delays it.

        Returns:
            ``True`` when such a call was running.
        """
        running = self._running.get(call_id)
        if running is None:
            return False
        running.cancel()
        return True

    @property
    def running(self) -> list[str]:
        """Ids of the calls that are waiting right now."""
        return list(self._running)

    def sync(self, backend: str = "asyncio") -> SyncSession:
        """A blocking facade over this session for code that is not async."""
        return SyncSession(self, backend=backend)

    async def run_tool_calls(self, message: Any, provider: str = "openai") -> list[dict[str, Any]]:
        """Run every tool call of a model reply; return the result messages to append.

        See :func:`toolweave.formats.run_tool_calls`.

        Example:
            ``messages += await session.run_tool_calls(reply, provider="anthropic")``
        """
        from toolweave.formats import run_tool_calls

        return await run_tool_calls(self, message, provider)


@final
class ToolStream:
    """The items of one call in streaming mode: progress items, then one CallResult.

    Iterate it with ``async for``, ideally inside ``async with`` so that a stream left
    early is closed at once. Every step runs under the call's deadline; the stream can
    be cancelled by call id through :meth:`Session.cancel`. A tool that ends without a
    result, or yields after its result, ends the stream with ``execution_error``; it
    never hangs past its deadline.

    The tool's generator may yield from inside its own cancel scopes and task groups.
    As with any async generator that does, the consumer should pull items from one
    task and not open a cancel scope between two items that it closes before the next
    one (``async with session.stream(...) as items: async for item in items: ...`` is
    always fine).
    """

    __slots__ = (
        "_agen",
        "_args",
        "_arguments",
        "_call_id",
        "_ctx",
        "_deadline",
        "_done",
        "_entry",
        "_held",
        "_name",
        "_output",
        "_running",
        "_session",
        "_want_lock",
    )

    def __init__(self, session: Session, name: str, arguments: Any, call_id: str | None) -> None:
        self._session = session
        self._name = name
        self._arguments = arguments
        self._call_id = call_id
        self._agen: Any = None
        self._args: Any = None
        self._entry: ToolEntry | None = None
        self._ctx: Context | None = None
        self._deadline = 0.0
        self._done = False
        self._output: Any = _NOTHING
        self._running = Running()
        self._want_lock = False
        self._held: anyio.Semaphore | None = None

    def __aiter__(self) -> ToolStream:
        return self

    async def __aenter__(self) -> ToolStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def cancel(self) -> None:
        """Cancel the call; the next item is its ``cancelled`` result."""
        self._running.cancel()

    @classmethod
    async def _collect(
        cls,
        session: Session,
        entry: ToolEntry,
        ctx: Context,
        args: Any,
        on_progress: ProgressCallback | None,
    ) -> CallResult:
        """A streaming tool called in blocking mode: the whole run in one cancel scope,
        so the tool may hold scopes and task groups across its yields."""
        stream = cls(session, entry.name, None, ctx.call_id)
        stream._open(entry, ctx, args)
        running = stream._running
        result: CallResult | None = None
        try:
            with anyio.CancelScope(deadline=stream._deadline) as scope:
                running.scope = scope
                if stream._want_lock:
                    stream._want_lock = False
                    await stream._lock()
                agen = stream._agen
                while result is None:
                    try:
                        item = await agen.__anext__()
                    except StopAsyncIteration:
                        item = _NOTHING
                    except Exception as exc:
                        item = _from_exception(exc, entry, ctx.call_id)
                    got = stream._take(item)
                    if isinstance(got, CallResult):
                        result = got
                    elif got is not None and on_progress is not None:
                        try:
                            maybe = on_progress(got)
                            if maybe is not None:
                                await maybe
                        except Exception:
                            logger.exception("the progress callback of %s raised", entry.name)
                if stream._agen is not None and item is not _NOTHING:
                    # Stopped early: close the generator here, inside the scopes it holds.
                    stream._agen = None
                    try:
                        await agen.aclose()
                    except Exception:
                        logger.exception("closing the stream of %s failed", entry.name)
            running.scope = None
            if result is None:
                stopped = _stopped(running, entry, session._timeout_for(entry))
                result = stream._error(stopped)
            return await stream._end(result)
        finally:
            await stream.aclose()

    def _open(self, entry: ToolEntry, ctx: Context, args: Any) -> None:
        self._entry = entry
        self._ctx = ctx
        self._args = args
        assert entry.tool.open_stream is not None
        self._agen = entry.tool.open_stream(ctx, args)
        self._deadline = anyio.current_time() + self._session._timeout_for(entry)
        self._want_lock = entry.tool.state_type is not None
        if self._call_id is not None:
            self._session._running[self._call_id] = self._running

    async def __anext__(self) -> Progress | CallResult:
        if self._done:
            raise StopAsyncIteration
        if self._agen is None:
            session = self._session
            entry = session._lookup(self._name)
            if entry is None or not entry.tool.streaming:
                # Not a streaming tool (or unknown): one final item from the blocking path.
                return await self._end(
                    await session.call(self._name, self._arguments, self._call_id)
                )
            if session._guards:
                refused = check_guards(session._guards, session, entry)
                if refused is not None:
                    return await self._end(self._failed(entry, refused))
            try:
                args = entry.parse(self._arguments)
            except ValidationError as exc:
                msg = format_validation_error(exc, self._name, entry.to_client)
                return await self._end(
                    self._failed(entry, ToolError(ErrorKind.INVALID_PARAMS, msg))
                )
            except ToolError as err:
                return await self._end(self._failed(entry, err))
            self._open(entry, Context(session, entry, self._call_id), args)
        entry = self._entry
        assert entry is not None
        if self._want_lock:
            self._want_lock = False
            failed = await self._acquire()
            if failed is not None:
                return await self._end(failed)
        while True:
            got = self._take(await self._pull())
            if isinstance(got, CallResult):
                return await self._end(got)
            if got is not None:
                return got

    def _take(self, item: Any) -> Progress | CallResult | None:
        """What one item from the generator means: progress to hand on, the call's
        result (the stream ends), or ``None`` (the output was kept; pull again)."""
        entry = self._entry
        assert entry is not None
        if isinstance(item, CallResult):  # the step failed, timed out or was cancelled
            return item
        if item is _NOTHING:  # the generator ended
            if self._output is _NOTHING:
                return self._error(
                    ToolError(ErrorKind.EXECUTION_ERROR, f"{entry.name} ended without a result")
                )
            assert self._ctx is not None
            try:
                return self._session._result(self._ctx, self._output)
            except Exception as exc:
                return _from_exception(exc, entry, self._call_id)
        if self._output is not _NOTHING:
            what = "progress" if isinstance(item, Progress) else "a second result"
            return self._error(
                ToolError(
                    ErrorKind.EXECUTION_ERROR, f"{entry.name} yielded {what} after its result"
                )
            )
        if isinstance(item, Progress):
            return item
        self._output = item
        return None

    def _failed(self, entry: ToolEntry, err: ToolError) -> CallResult:
        """A failure before the tool started (no post-processing)."""
        return CallResult(None, err.message, err, self._call_id, entry.tool.fqid, self._name)

    def _error(self, err: ToolError) -> CallResult:
        assert self._entry is not None
        return CallResult(None, err.message, err, self._call_id, self._entry.tool.fqid, self._name)

    async def _lock(self) -> None:
        """Take the lock of the tool's state model (see :meth:`Session._call_serialised`)."""
        entry = self._entry
        ctx = self._ctx
        assert entry is not None
        assert ctx is not None
        state_type = entry.tool.state_type
        assert state_type is not None
        key, lock = self._session._state.lock(state_type)
        await lock.acquire()
        self._held = lock
        ctx._call_record().held = {key}

    async def _acquire(self) -> CallResult | None:
        """:meth:`_lock` under the deadline; a CallResult when the wait was cancelled or
        timed out."""
        entry = self._entry
        assert entry is not None
        running = self._running
        if running.cancelled:
            return self._error(_stopped(running, entry, 0))
        with anyio.CancelScope(deadline=self._deadline) as scope:
            running.scope = scope
            try:
                await self._lock()
            finally:
                running.scope = None
            return None
        return self._error(_stopped(running, entry, self._session._timeout_for(entry)))

    async def _pull(self) -> Any:
        """One step of the tool's generator under the deadline: an item, _NOTHING at the
        end, or a CallResult when the step failed, timed out or was cancelled."""
        entry = self._entry
        assert entry is not None
        running = self._running
        if running.cancelled:
            return self._error(_stopped(running, entry, 0))
        session = self._session
        if session._inline or (session._inline is None and session._detect_inline()):
            # Like Session.call: no cancel scope of ours around the step, so the tool may
            # hold its own scopes and task groups across its yields.
            step = self._agen.__anext__()
            try:
                try:
                    pending = step.send(None)
                except StopIteration as got:
                    return got.value
                remaining = max(self._deadline - anyio.current_time(), 0.0)
                return await drive(step, pending, running, remaining)
            except StopAsyncIteration:
                return _NOTHING
            except Stopped:
                return self._error(_stopped(running, entry, session._timeout_for(entry)))
            except Exception as exc:
                return _from_exception(exc, entry, self._call_id)
            finally:
                step.close()
        with anyio.CancelScope(deadline=self._deadline) as scope:
            running.scope = scope
            try:
                return await self._agen.__anext__()
            except StopAsyncIteration:
                return _NOTHING
            except Exception as exc:
                return _from_exception(exc, entry, self._call_id)
            finally:
                running.scope = None
        return self._error(_stopped(running, entry, self._session._timeout_for(entry)))

    async def _end(self, result: CallResult) -> CallResult:
        """Close the generator, post-process the result, release the call."""
        self._done = True
        try:
            await self._close_generator()
            ctx = self._ctx
            session = self._session
            if ctx is not None and (ctx._record is not None or session._reminders):
                result = await session._post(ctx, self._args, result)
                self._ctx = None
        finally:
            self._release()
        return result

    async def _close_generator(self) -> None:
        """Close the tool's generator where it stands. No scope of ours is entered
        around it: a generator suspended inside its own cancel scopes must leave them
        in order."""
        agen, self._agen = self._agen, None
        if agen is not None:
            try:
                await agen.aclose()
            except Exception:
                logger.exception("closing the stream of %s failed", self._name)

    def _release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            ctx = self._ctx
            if ctx is not None and ctx._record is not None:
                ctx._record.held = None
            held.release()
        session = self._session
        if self._call_id is not None and session._running.get(self._call_id) is self._running:
            del session._running[self._call_id]

    async def aclose(self) -> None:
        """Stop the tool's generator (if still running), save the state it changed and
        forget the call id."""
        self._done = True
        try:
            await self._close_generator()
            ctx, self._ctx = self._ctx, None
            if ctx is not None and ctx._record is not None and ctx._record.slots:
                await self._session._state.persist(list(ctx._record.slots.values()))
        finally:
            self._release()


@final
class SyncSession:
    """A blocking facade over a :class:`Session`, for callers that are not async.

    It runs an event loop in a background thread; close it (or use ``with``) when done.

    Example:
        ``with toolset.session().sync() as s: print(s.call("echo", {"text": "hi"}).text)``
    """

    def __init__(self, session: Session, *, backend: str = "asyncio") -> None:
        from anyio.from_thread import start_blocking_portal

        self.session = session
        self._cm = start_blocking_portal(backend)
        self._portal = self._cm.__enter__()

    def call(self, name: str, arguments: Any = None, call_id: str | None = None) -> CallResult:
        """Run one call and wait for its result."""
        result: CallResult = self._portal.call(self.session.call, name, arguments, call_id)
        return result

    def call_many(self, calls: Iterable[CallLike], *, limit: int | None = None) -> list[CallResult]:
        """Run a batch of calls (see :meth:`Session.call_many`) and wait for the results."""

        async def run() -> list[CallResult]:
            return await self.session.call_many(calls, limit=limit)

        return self._portal.call(run)

    def stream(
        self, name: str, arguments: Any = None, call_id: str | None = None
    ) -> list[Progress | CallResult]:
        """Run one call in streaming mode and return every item, the result last."""

        async def collect() -> list[Progress | CallResult]:
            async with self.session.stream(name, arguments, call_id) as items:
                return [item async for item in items]

        return self._portal.call(collect)

    def cancel(self, call_id: str) -> bool:
        """Cancel a running call by id (from any thread)."""
        return self._portal.call(self.session.cancel, call_id)

    def definitions(self, format: str = "openai") -> list[dict[str, Any]]:
        """See :meth:`Session.definitions`."""
        return self.session.definitions(format)

    def close(self) -> None:
        """Stop the background event loop."""
        self._cm.__exit__(None, None, None)

    def __enter__(self) -> SyncSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
