"""The session: one agent conversation's view of a tool set, and the path of a call."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, final

import anyio
import anyio.from_thread
from pydantic import ValidationError

from toolweave.runtime._batch import CallLike, run_batch
from toolweave.runtime._deadline import Running, Stopped, drive
from toolweave.runtime._guards import Guard, check_guards
from toolweave.runtime._outcomes import drain, error_result, failure, from_exception, stop_error
from toolweave.runtime._sync import SyncSession
from toolweave.runtime._toolstream import ProgressCallback, ToolStream
from toolweave.authoring._context import CallRecord, Context
from toolweave.errors import ErrorKind, ToolError, UsageError
from toolweave.runtime._notifications import Notification, Notifier
from toolweave.authoring._reminders import CallInfo, apply_reminders
from toolweave.resources import Resources, Workspace
from toolweave.state import SessionState, SQLiteStateStore, StateStore, default_state_path
from toolweave.results import CallResult
from toolweave.authoring._tool import Tool
from toolweave.catalog._toolset import ToolEntry, set_session_factory

if TYPE_CHECKING:
    from toolweave.catalog._erasure import ErasedTool
    from toolweave.authoring._reminders import Reminder
    from toolweave.catalog._toolset import ToolSet

__all__ = ["Session", "SyncSession", "ToolStream"]

logger = logging.getLogger("toolweave")

T = TypeVar("T")

DEFAULT_TIMEOUT = 120.0
"""Seconds a call may run when neither the tool, its configuration nor the session
says otherwise (local and external tools alike)."""

MAX_DEPTH = 8
"""How deeply meta-tools may nest calls through ``ctx.call``."""


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
        "_hidden",
        "_inline",
        "_closed",
        "_closers",
        "_listing",
        "_notifier",
        "_reminders",
        "_running",
        "_state",
        "_unlisted",
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
        self._unlisted: set[str] = set()
        self._listing: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        self._hidden: frozenset[str] | None = None
        """Built-in tools whose ``should_list`` is false in this session (asked once)."""
        self.external_version = 0
        """Bumped on every change of the external tools; hosts can watch it."""
        self._closers: list[Callable[[], Any]] = []
        self._closed = False
        if toolset.packs is not None:
            toolset.packs.provide_resources(self.resources, self)

    def __repr__(self) -> str:
        return f"<Session {self.session_id} tools={len(self.toolset)}>"

    @property
    def workspace(self) -> Path:
        """The workspace root."""
        return self.resources.require(Workspace).root

    # -- lifetime -------------------------------------------------------------------

    def on_close(self, callback: Callable[[], Any]) -> None:
        """Call ``callback`` (a plain or an async function) when the session closes.

        Packs register what must not outlive the session here (background processes,
        monitors), typically from their ``provide_resources`` hook. Callbacks run in the
        reverse order of registration; one that raises is logged and the others still run.
        """
        self._closers.append(callback)

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` has run."""
        return self._closed

    async def aclose(self) -> None:
        """Close the session: cancel its running calls, run the close callbacks (the
        shell pack stops its background tasks there), then save its state.

        Idempotent; ``async with session:`` calls it on the way out. A closed session
        still answers calls, but nothing it starts afterwards is tracked for closing.
        """
        if self._closed:
            return
        self._closed = True
        for running in list(self._running.values()):
            running.cancel()
        closers, self._closers = self._closers, []
        for callback in reversed(closers):
            try:
                maybe = callback()
                if maybe is not None and hasattr(maybe, "__await__"):
                    await maybe
            except Exception:
                logger.exception("a close callback of session %s raised", self.session_id)
        try:
            await self._state.persist_all()
        except Exception:
            logger.exception("saving the state of session %s at close failed", self.session_id)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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

        A :class:`~toolweave.runtime._notifications.Notifier` from the resources when the host
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

        Built-in tools come first in configured order, then the listed external tools
        sorted by client name (see :meth:`set_listed`), so the listing is byte-stable for
        prompt caches. Built-in tools whose :meth:`Tool.should_list
        <toolweave.Tool.should_list>` says no for this session (asked once, on the first
        listing) are left out; they stay callable. The list is rendered once per format
        (and external-tool version) and shared: treat it as read-only.
        """
        hidden = self._hidden if self._hidden is not None else self._find_hidden()
        external = include_external and bool(self._external)
        if not hidden and not external:
            return self.toolset.definitions(format)
        cached = self._listing.get((format, external))
        if cached is None:
            from toolweave.formats import render

            if hidden:
                entries = [e.definition for e in self.toolset.entries if e.name not in hidden]
                cached = render(entries, format)
            else:
                cached = self.toolset.definitions(format)
            if external:
                unlisted = self._unlisted
                extra = [
                    self._external[n].definition
                    for n in sorted(self._external)
                    if n not in unlisted
                ]
                cached = cached + render(extra, format)
            self._listing[(format, external)] = cached
        return cached

    def _find_hidden(self) -> frozenset[str]:
        """Ask each built-in tool that decides for itself whether to list it here."""
        hidden: set[str] = set()
        for entry in self.toolset.entries:
            tool = entry.tool.tool
            if tool is None or type(tool).should_list is Tool.should_list:
                continue
            try:
                listed = tool.should_list(Context(self, entry, None))
            except Exception:
                logger.exception("should_list of %s raised; the tool is listed", entry.name)
                listed = True
            if not listed:
                hidden.add(entry.name)
        self._hidden = frozenset(hidden)
        return self._hidden

    def render_prompt(self, text: str) -> str:
        """Render a prompt template with the placeholders of tool descriptions
        (``{tool:edit}`` becomes the client name of the set's edit tool).

        Raises:
            ConfigError: A placeholder is unknown or names no configured tool.
        """
        return self.toolset.render_template(text)

    # -- external tools -------------------------------------------------------------

    def register_external(
        self, tool: ErasedTool, *, name: str | None = None, prefix: str | None = None
    ) -> ToolEntry:
        """Add a JSON-only tool (see :func:`toolweave.catalog._external.external_tool`) at run time.

        Every external tool's client-visible name is one prefix followed by its name,
        the prefix applied exactly once, here: ``prefix`` when given, else the set's
        ``external_prefix`` (nothing when the configuration sets none). ``prefix=""``
        takes ``name`` as given. The MCP pool names a remote tool ``<server>__<tool>``
        and passes its prefix (the server's ``prefix``, else the pool's, else the set's
        ``external_prefix``, else ``mcp__``); a name from a server's ``names`` map is
        passed with ``prefix=""``, so it is used exactly as configured.

        Args:
            tool: The erased handle.
            name: The name after the prefix (default: the tool's id); the returned
                entry's ``name`` is the client-visible one.
            prefix: The prefix to use instead of the set's ``external_prefix``.

        Raises:
            UsageError: The name is taken by a built-in tool (external tools never
                shadow them) or by another external tool, or the set is read-only and
                the tool is not.
        """
        entry = self.toolset.external_entry(tool, name, prefix=prefix)
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
        self._unlisted.discard(name)
        self._external_changed()
        return True

    def set_listed(self, name: str, listed: bool) -> bool:
        """Show or hide the external tool ``name`` in :meth:`definitions`.

        A hidden tool stays registered and callable: what a call returns is up to its
        handle (the MCP pool hides an offline server's tools, whose calls answer
        ``unavailable`` with a hint, and shows them again once it is back). A change
        bumps :attr:`external_version`; setting what already holds changes nothing.

        Returns:
            ``True`` when the listing changed; ``False`` when it already was so, or
            there is no external tool ``name``.
        """
        if name not in self._external or (name not in self._unlisted) == listed:
            return False
        if listed:
            self._unlisted.discard(name)
        else:
            self._unlisted.add(name)
        self._external_changed()
        return True

    def _external_changed(self) -> None:
        self._listing.clear()
        self.external_version += 1

    @property
    def external(self) -> dict[str, ToolEntry]:
        """The external tools by client name, listed or not (a copy)."""
        return dict(self._external)

    @property
    def unlisted(self) -> frozenset[str]:
        """Client names of the external tools left out of the listing (still callable)."""
        return frozenset(self._unlisted)

    # -- calling ------------------------------------------------------------------

    def _lookup(self, name: str) -> ToolEntry | None:
        try:
            return self.toolset._by_name.get(name) or self._external.get(name)
        except TypeError:  # an unhashable name
            return None

    def _unknown(self, name: object, call_id: str | None) -> CallResult:
        hidden = self._hidden if self._hidden is not None else self._find_hidden()
        names = [n for n in self.toolset.names if n not in hidden]
        names += sorted(set(self._external) - self._unlisted)
        shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
        if isinstance(name, str):
            what = f"There is no tool named {name[:100]!r}"
        else:
            what = f"Tool names are strings, not {type(name).__name__}"
            name = ""
        return failure(
            ErrorKind.NOT_FOUND, f"{what}. Available tools: {shown or 'none'}.", name, call_id
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
            on_progress: Called with each progress item of a streaming tool (a plain or
                an async function). One that raises is logged (``toolweave`` logger)
                and the call goes on: it is still called with the later items.

        Returns:
            The result; failures carry an error and never raise.
        """
        try:
            entry = self.toolset._by_name.get(name) or self._external.get(name)
        except TypeError:  # an unhashable name
            entry = None
        if entry is None:
            return self._unknown(name, call_id)
        if self._guards:
            refusal = check_guards(self._guards, self, entry)
            if refusal is not None:
                return error_result(refusal, entry, call_id)
        try:
            args = entry.parse(arguments)
        except (ValidationError, ToolError) as exc:
            return error_result(exc, entry, call_id)
        tool = entry.tool
        ctx = Context(self, entry, call_id)
        # A streaming tool with a plain ``invoke`` as well (a remote tool) takes the
        # plain path unless someone listens to its progress.
        if tool.streaming and (on_progress is not None or tool.invoke is None):
            return await ToolStream._collect(self, entry, ctx, args, on_progress)
        if tool.state_locks is not None:
            return await self._call_serialised(ctx, args)
        try:
            if tool.is_coroutine:
                if self._inline:
                    coro = tool.invoke(ctx, args)  # type: ignore[misc]
                    try:
                        pending = coro.send(None)
                    except StopIteration as stop:
                        raw = stop.value
                    else:
                        raw = await self._wait(coro, pending, entry, call_id)
                else:
                    raw = await self._invoke(ctx, args)
            else:
                raw = tool.invoke(ctx, args)  # type: ignore[misc]
            if ctx._record is None:
                if not self._reminders:
                    output, text = tool.finish(raw)
                    return CallResult(output, text, None, call_id, tool.fqid, name)
                return self._remind(ctx, args, self._result(ctx, raw))
            result = self._result(ctx, raw)
        except Exception as exc:
            result = from_exception(exc, entry, call_id)
            if ctx._record is None:
                return self._remind(ctx, args, result) if self._reminders else result
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
        deadline, cancellable by id (see :mod:`toolweave.runtime._deadline`)."""
        timeout = self._timeout_for(entry)
        running = self._track(call_id, Running())
        try:
            return await drive(coro, pending, running, timeout)
        except Stopped:
            raise stop_error(running, entry, timeout) from None
        finally:
            coro.close()
            self._untrack(call_id, running)

    async def _scoped(
        self, coro: Coroutine[Any, Any, Any], entry: ToolEntry, call_id: str | None
    ) -> Any:
        """Run a whole call inside a cancel scope (event loops other than asyncio)."""
        timeout = self._timeout_for(entry)
        running = self._track(call_id, Running())
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                running.scope = scope
                return await coro
        finally:
            coro.close()
            self._untrack(call_id, running)
        raise stop_error(running, entry, timeout)

    def _track(self, call_id: str | None, running: Running) -> Running:
        """Make the call ``call_id`` (if given) cancellable through ``running``."""
        if call_id is not None:
            try:
                self._running[call_id] = running
            except TypeError:  # an unhashable id: the call runs, but cannot be cancelled
                return running
        return running

    def _untrack(self, call_id: str | None, running: Running) -> None:
        """Forget ``call_id`` unless a later call with the same id has taken it over."""
        try:
            if call_id is not None and self._running.get(call_id) is running:
                del self._running[call_id]
        except TypeError:  # an unhashable id was never tracked
            pass

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
        return self._remind(ctx, args, result) if self._reminders else result

    def _remind(self, ctx: Context, args: Any, result: CallResult) -> CallResult:
        """Append the active reminders to ``result``'s text (not after a cancellation)."""
        if result.error is not None and result.error.kind == ErrorKind.CANCELLED:
            return result
        entry = ctx.entry
        assert entry is not None
        info = CallInfo(entry.name, result.effective_tool or entry.tool.fqid, args, result)
        ctx._finish()
        result.text = apply_reminders(self._reminders, ctx, info, result.text)
        return result

    async def _call_serialised(self, ctx: Context, args: Any) -> CallResult:
        """A call of a tool that declares state models for exclusive use: it runs while
        holding their locks (taken in key order), from before the tool starts until its
        state is saved."""
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        assert tool.state_locks is not None
        locks = self._state.locks(tool.state_locks)
        for i, (_, lock) in enumerate(locks):
            try:
                lock.acquire_nowait()
            except anyio.WouldBlock:
                for _, taken in locks[:i]:
                    taken.release()
                return await self._call_after_lock(ctx, args, locks)
        record = ctx._call_record()
        record.held = {key for key, _ in locks}
        try:
            try:
                raw = await self._invoke(ctx, args)
                result = self._result(ctx, raw)
            except Exception as exc:
                result = from_exception(exc, entry, ctx.call_id)
            return await self._post(ctx, args, result)
        finally:
            record.held = None
            for _, lock in reversed(locks):
                lock.release()

    async def _invoke(self, ctx: Context, args: Any) -> Any:
        """Run a non-streaming tool as :meth:`call` does: on asyncio the first step
        inline and the rest under the deadline, elsewhere all of it in a cancel scope."""
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        if not tool.is_coroutine:
            return tool.invoke(ctx, args)  # type: ignore[misc]
        coro = tool.invoke(ctx, args)  # type: ignore[misc]
        if not (self._inline or (self._inline is None and self._detect_inline())):
            return await self._scoped(coro, entry, ctx.call_id)
        try:
            pending = coro.send(None)
        except StopIteration as stop:
            return stop.value
        return await self._wait(coro, pending, entry, ctx.call_id)

    async def _call_after_lock(
        self, ctx: Context, args: Any, locks: tuple[tuple[str, anyio.Semaphore], ...]
    ) -> CallResult:
        """:meth:`_call_serialised` when another call holds a lock: the wait for them
        counts against the deadline and can be cancelled."""
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        call_id = ctx.call_id
        record = ctx._call_record()
        timeout = self._timeout_for(entry)
        running = self._track(call_id, Running())
        taken: list[anyio.Semaphore] = []
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                running.scope = scope
                for _, lock in locks:
                    await lock.acquire()
                    taken.append(lock)
                record.held = {key for key, _ in locks}
                try:
                    if tool.is_coroutine:
                        raw = await tool.invoke(ctx, args)  # type: ignore[misc]
                    else:
                        raw = tool.invoke(ctx, args)  # type: ignore[misc]
                    result = self._result(ctx, raw)
                except Exception as exc:
                    result = from_exception(exc, entry, call_id)
                try:
                    return await self._post(ctx, args, result)
                finally:
                    record.held = None
        finally:
            for lock in reversed(taken):
                lock.release()
            self._untrack(call_id, running)
        stopped = error_result(stop_error(running, entry, timeout), entry, call_id)
        return await self._post(ctx, args, stopped)

    async def _call_inner(self, parent: Context, name: str, arguments: Any) -> CallResult:
        """A call made by a tool through its context: guards, validation and deadline
        as usual; no reminders, no persistence (the outer call does both)."""
        parent_record = parent._call_record()
        if parent_record.depth >= MAX_DEPTH:
            return failure(
                ErrorKind.EXECUTION_ERROR,
                f"{name} was not called: tools may nest calls at most {MAX_DEPTH} deep",
                name,
                None,
            )
        entry = self._lookup(name)
        if entry is None:
            return self._unknown(name, None)
        if self._guards:
            refusal = check_guards(self._guards, self, entry)
            if refusal is not None:
                return error_result(refusal, entry, None)
        try:
            args = entry.parse(arguments)
        except (ValidationError, ToolError) as exc:
            return error_result(exc, entry, None)
        ctx = Context(self, entry, None)
        ctx._record = CallRecord(parent_record)
        try:
            raw = await self._run_inner(ctx, args, parent_record.root)
            result = self._result(ctx, raw)
        except Exception as exc:
            result = from_exception(exc, entry, None)
        if result.error is None:
            parent_record.effective = result.effective_tool
        return result

    async def _run_inner(self, ctx: Context, args: Any, root: CallRecord) -> Any:
        """Run an inner call under its deadline, holding the locks of its exclusive
        state models that the outermost call does not hold already. (A meta-tool whose
        inner calls use state declares those models too: then it holds every lock, in
        key order, and its inner calls take none.)"""
        entry = ctx.entry
        assert entry is not None
        tool = entry.tool
        timeout = self._timeout_for(entry)
        models = tool.state_locks
        held = root.held
        needed = [
            (key, lock)
            for key, lock in (self._state.locks(models) if models is not None else ())
            if held is None or key not in held
        ]
        taken: list[tuple[str, anyio.Semaphore]] = []
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout):
                if needed:
                    held = root.held = held if held is not None else set()
                    for key, lock in needed:
                        await lock.acquire()
                        taken.append((key, lock))
                        held.add(key)
                if tool.streaming:
                    assert tool.open_stream is not None
                    return await drain(tool.open_stream(ctx, args), entry.name)
                if tool.is_coroutine:
                    return await tool.invoke(ctx, args)  # type: ignore[misc]
                return tool.invoke(ctx, args)  # type: ignore[misc]
        finally:
            for key, lock in reversed(taken):
                assert held is not None
                held.discard(key)
                lock.release()
        raise stop_error(None, entry, timeout)

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

        Close the stream (iterate it inside ``async with``, or ``await aclose()``): a
        stream left early then stops its tool, saves its state and frees its state
        locks and call id at once (see :class:`ToolStream`).

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


set_session_factory(Session)
