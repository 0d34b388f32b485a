"""The session: one agent conversation's view of a tool set, and the path of a call."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, final

import anyio
import anyio.from_thread

from toolweave.authoring._context import Context
from toolweave.catalog._toolset import ToolEntry, set_session_factory
from toolweave.errors import ErrorKind, StateConflict, UsageError
from toolweave.resources import Resources, Workspace
from toolweave.results import CallResult
from toolweave.runtime._batch import CallLike, run_batch
from toolweave.runtime._deadline import Running
from toolweave.runtime._guards import Guard, GuardHook
from toolweave.runtime._hooks import CallHook, HookPlan, compile_hooks
from toolweave.runtime._notifications import Notification, Notifier
from toolweave.runtime._outcomes import failure
from toolweave.runtime._pipeline import run_call
from toolweave.runtime._sync import SyncSession
from toolweave.runtime._toolstream import ToolStream
from toolweave.state import SessionState, SQLiteStateStore, StateStore

if TYPE_CHECKING:
    from toolweave.authoring._reminders import Reminder
    from toolweave.catalog._erasure import ErasedTool
    from toolweave.catalog._toolset import ToolSet

__all__ = ["ListingOverlay", "Session", "SyncSession", "ToolStream"]

logger = logging.getLogger("toolweave")

T = TypeVar("T")

_UNSEEN = object()
"""The overlay stamp of a session that has not asked its overlay yet."""

DEFAULT_TIMEOUT = 120.0
"""Seconds a call may run when neither the tool, its configuration nor the session
says otherwise (local and external tools alike)."""


class ListingOverlay(Protocol):
    """What a session's listing consults besides its tool set: a registry center's
    view (disabled tools, roles, pinned versions). See :meth:`Session.set_overlay`."""

    def stamp(self) -> object:
        """A value that changes whenever :meth:`view` may answer differently (cheap:
        asked on every listing)."""
        ...

    def view(self, session: Session) -> tuple[frozenset[str], Mapping[str, ToolEntry]]:
        """The client names to leave out of ``session``'s listing, and the entries
        (other behaviour versions) to list instead of the set's, by client name. It may
        also add or remove the session's external tools (a center's pushed tools)."""
        ...


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
        hooks: Call hooks of the host, run around every call (see
            :class:`~toolweave.CallHook`); packs add theirs after these.
        debug: Strict checks meant for tests: a tool emitting a notification it did not
            declare fails instead of logging a warning.
    """

    __slots__ = (
        "_closed",
        "_closers",
        "_external",
        "_hidden",
        "_hooks",
        "_inline",
        "_listing",
        "_listing_json",
        "_live",
        "_notifier",
        "_overlay",
        "_overlay_stamp",
        "_plans",
        "_reminders",
        "_running",
        "_state",
        "_unlisted",
        "_view_hidden",
        "_view_routes",
        "_view_version",
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
        hooks: Iterable[CallHook] = (),
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
        self._hooks: tuple[CallHook, ...] = ()
        self._plans: dict[ToolEntry, HookPlan | None] = {}
        self._notifier: Notifier | None = None
        self._state = SessionState(self.session_id, self._store_opener(state_store))
        self._running: dict[str, Running] = {}
        self._live: set[Running] = set()
        """Every call running now, with an id or without (what :meth:`aclose` stops)."""
        self._inline: bool | None = None
        """Run a call's first step inline (asyncio); found out on the first call."""
        self._external: dict[str, ToolEntry] = {}
        self._unlisted: set[str] = set()
        self._listing: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        self._listing_json: dict[tuple[str, bool], bytes] = {}
        self._hidden: frozenset[str] | None = None
        """Built-in tools whose ``should_list`` is false in this session (asked once)."""
        self._overlay: ListingOverlay | None = None
        self._overlay_stamp: object = None
        self._view_hidden: frozenset[str] = frozenset()
        self._view_routes: Mapping[str, ToolEntry] = {}
        self._view_version = 0
        self.external_version = 0
        """Bumped on every change of the external tools; hosts can watch it."""
        self._closers: list[Callable[[], Any]] = []
        self._closed = False
        for hook in hooks:
            self.add_hook(hook)
        if toolset.session_setup is not None:
            toolset.session_setup(self)

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
        for running in list(self._live):
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
            return SQLiteStateStore.of_workspace(self.workspace)

        return open_store

    @property
    def state(self) -> SessionState:
        """The session's runtime state (``session.state.get(TodoState)`` reads a model;
        after changing one outside a call, ``await session.save_state()``)."""
        return self._state

    async def save_state(self) -> StateConflict | None:
        """Save every loaded state model that changed since it was last saved.

        Returns:
            ``None``, or the conflict when another process changed a key meanwhile
            (nothing of that save was stored; the other writer's state is loaded).
        """
        return await self._state.persist_all()

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

    def notify(self, ctx: Context, name: str, data: Any) -> None:
        """Emit the notification ``name`` of the call ``ctx`` (what
        :meth:`Context.notify <toolweave.Context.notify>` does); from any thread."""
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

    # -- hooks and guards -------------------------------------------------------------

    def add_hook(self, hook: CallHook, *, first: bool = False) -> Callable[[], None]:
        """Run ``hook`` around every later call of this session (see
        :class:`~toolweave.CallHook`); hooks run in the order they were added, except
        that a hook added with ``first=True`` runs before those already there (the
        registry center's does, so roles and status decide before anything else).

        Returns a function that removes the hook again.
        """
        if not isinstance(hook, CallHook):
            raise UsageError(f"a call hook is a CallHook, not {type(hook).__name__}")
        self._hooks = (hook, *self._hooks) if first else (*self._hooks, hook)
        self.refresh_hooks()

        def remove() -> None:
            self.remove_hook(hook)

        return remove

    def remove_hook(self, hook: CallHook) -> bool:
        """Stop running ``hook``; ``True`` when it was there."""
        kept = tuple(h for h in self._hooks if h is not hook)
        found = len(kept) != len(self._hooks)
        self._hooks = kept
        self.refresh_hooks()
        return found

    def refresh_hooks(self) -> None:
        """Compile the hooks again: each entry's plan is rebuilt on its next call.

        Hooks are compiled once per entry, so a hook's ``applies_to`` is asked once.
        Call this when what it answers from has changed (a mode turned on, a role or an
        entry's status changed); calls already running keep the plan they started with.
        """
        self._plans.clear()

    @property
    def hooks(self) -> tuple[CallHook, ...]:
        """The call hooks (guards included, as :class:`GuardHook`), in the order they run."""
        return self._hooks

    def _compile(self, entry: ToolEntry) -> HookPlan | None:
        plan = compile_hooks(self._hooks, entry)
        self._plans[entry] = plan
        return plan

    def add_guard(self, guard: Guard) -> Callable[[], None]:
        """Check every call with ``guard`` before its arguments are validated (a call
        hook's ``admit`` step; see :class:`~toolweave.runtime.GuardHook`).

        Returns a function that removes the guard again.

        Example:
            ``remove = session.add_guard(read_only_guard("Plan mode is on."))``
        """
        return self.add_hook(GuardHook(guard))

    def remove_guard(self, guard: Guard) -> bool:
        """Stop checking calls with ``guard``; ``True`` when it was there."""
        for hook in self._hooks:
            if isinstance(hook, GuardHook) and hook.guard is guard:
                return self.remove_hook(hook)
        return False

    @property
    def guards(self) -> tuple[Guard, ...]:
        """The guards, in the order they run."""
        return tuple(h.guard for h in self._hooks if isinstance(h, GuardHook))

    # -- listing ------------------------------------------------------------------

    def set_overlay(self, overlay: ListingOverlay | None) -> None:
        """Let ``overlay`` (a registry center's view of this session) hide tools from the
        listing and replace the definitions of others (see :class:`ListingOverlay`);
        ``None`` removes it. Refusing and routing the calls themselves is the job of
        the overlay's call hook."""
        self._overlay = overlay
        self._overlay_stamp = _UNSEEN
        self._sync_overlay()

    def _sync_overlay(self) -> bool:
        """Take the overlay's current view when its stamp has changed; ``True`` when
        the overlay was asked again."""
        overlay = self._overlay
        if overlay is None:
            self._overlay_stamp = None
            if self._view_hidden or self._view_routes:
                self._view_hidden = frozenset()
                self._view_routes = {}
                self._view_changed()
            return False
        stamp = overlay.stamp()
        if stamp == self._overlay_stamp:
            return False
        hidden, routes = overlay.view(self)
        self._overlay_stamp = stamp
        if hidden != self._view_hidden or routes != self._view_routes:
            self._view_hidden = hidden
            self._view_routes = routes
            self._view_changed()
        return True

    def _view_changed(self) -> None:
        self._listing.clear()
        self._listing_json.clear()
        self._view_version += 1

    @property
    def listing_version(self) -> int:
        """Grows whenever :meth:`definitions` may answer differently (external tools
        changed, or the overlay hid, showed or replaced a tool); the MCP server sends
        ``tools/list_changed`` when it moves."""
        if self._overlay is not None:
            self._sync_overlay()
        return self.external_version + self._view_version

    def definitions(
        self,
        format: str = "openai",
        *,
        include_external: bool = True,
    ) -> list[dict[str, Any]]:
        """Definitions of the tools to send to the model, in a provider's ``format``.

        Built-in tools come first in configured order, then the listed external tools
        in the order they were registered (see :meth:`set_listed`): a new one goes last,
        so the listing before it stays byte-stable for prompt caches. Built-in tools
        whose :meth:`Tool.should_list <toolweave.Tool.should_list>` says no for this
        session (asked once, on the first listing) are left out; they stay callable.
        The definitions are rendered once per format (and external-tool version),
        shared and read-only; each call returns a new list of them.
        """
        hidden = self._hidden_now()
        routes = self._view_routes
        external = include_external and bool(self._external)
        if not hidden and not external and not routes:
            return self.toolset.definitions(format)
        cached = self._listing.get((format, external))
        if cached is None:
            from toolweave.formats import render  # formats load on the first listing

            if hidden or routes:
                entries = [
                    routes.get(e.name, e) for e in self.toolset.entries if e.name not in hidden
                ]
                cached = render(self.toolset.listed(entries), format)
            else:
                cached = self.toolset.definitions(format)
            if external:
                unlisted = self._unlisted
                extra = [
                    self._external[n]
                    for n in self._external  # arrival order: a new tool goes last
                    if n not in unlisted and n not in hidden
                ]
                cached = cached + render(self.toolset.listed(extra), format)
            self._listing[(format, external)] = cached
        return list(cached)

    def definitions_json(self, format: str = "openai", *, include_external: bool = True) -> bytes:
        """:meth:`definitions` as the bytes of a request body's ``tools`` (compact JSON,
        UTF-8; see :func:`toolweave.formats.encode`), encoded once per format and
        listing: a host that sends its tools with every request pays for it once.

        Example:
            ``body = b'{"model": "gpt-5.5", "tools": ' + session.definitions_json() + b"}"``
        """
        hidden = self._hidden_now()
        external = include_external and bool(self._external)
        if not hidden and not external and not self._view_routes:
            return self.toolset.definitions_json(format)
        cached = self._listing_json.get((format, external))
        if cached is None:
            from toolweave.formats import encode

            cached = encode(self.definitions(format, include_external=include_external))
            self._listing_json[(format, external)] = cached
        return cached

    def _hidden_now(self) -> frozenset[str]:
        """The tools left out of the listing: those whose ``should_list`` says no, and
        those the overlay hides now (its view taken again if it changed)."""
        hidden = self._hidden if self._hidden is not None else self._find_hidden()
        if self._overlay is None:
            return hidden
        self._sync_overlay()
        return hidden | self._view_hidden if hidden else self._view_hidden

    def _find_hidden(self) -> frozenset[str]:
        """Ask each built-in tool that decides for itself whether to list it here."""
        hidden: set[str] = set()
        for entry in self.toolset._deciders:
            tool = entry.tool.tool
            assert tool is not None
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
        self,
        tool: ErasedTool,
        *,
        name: str | None = None,
        prefix: str | None = None,
        templates: bool = False,
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
            templates: Render the description's placeholders (``{tool:<kind>}``,
                ``{name:<id>}``, ``{param:<name>}``) against the set, as for built-in
                tools: for the host's own tools (plugin files), not a remote server's.

        Raises:
            UsageError: The name is taken by a built-in tool (external tools never
                shadow them) or by another external tool, the set is read-only and
                the tool is not, or (``templates``) a placeholder cannot be rendered.
        """
        entry = self.toolset.external_entry(tool, name, prefix=prefix, templates=templates)
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
        self._listing_json.clear()
        self.external_version += 1
        if self._overlay is not None:
            self._overlay_stamp = _UNSEEN  # the overlay judges the new tools too

    @property
    def external(self) -> dict[str, ToolEntry]:
        """The external tools by client name, listed or not (a copy)."""
        return dict(self._external)

    @property
    def unlisted(self) -> frozenset[str]:
        """Client names of the external tools left out of the listing (still callable)."""
        return frozenset(self._unlisted)

    # -- calling ------------------------------------------------------------------

    def resolve(self, name: str) -> ToolEntry | None:
        """The entry a model's tool name stands for (built-in first, then external), or
        ``None``."""
        try:
            return self.toolset._by_name.get(name) or self._external.get(name)
        except TypeError:  # an unhashable name
            return None

    def _late(self, name: str) -> ToolEntry | None:
        """A name unknown at first sight that the overlay may have added since (a tool
        pushed to a registry center): asked on the unknown-name path only."""
        if self._overlay is None or not self._sync_overlay():
            return None
        return self.resolve(name)

    def _unknown(self, name: object, call_id: str | None) -> CallResult:
        hidden = self._hidden_now()
        names = [n for n in self.toolset.names if n not in hidden]
        names += sorted(set(self._external) - self._unlisted - hidden)
        shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
        if isinstance(name, str):
            what = f"There is no tool named {name[:100]!r}"
        else:
            what = f"Tool names are strings, not {type(name).__name__}"
            name = ""
        return failure(
            ErrorKind.NOT_FOUND, f"{what}. Available tools: {shown or 'none'}.", name, call_id
        )

    call = run_call
    """Run one call through the pipeline (see :func:`toolweave.runtime._pipeline.run_call`):
    ``await session.call(name, arguments, call_id, on_progress=None)`` returns the
    :class:`~toolweave.CallResult`; failures carry an error and never raise."""

    async def resume(self, call_id: str, *, approved: bool, always: bool = False) -> CallResult:
        """Complete a call that a call hook held back for the host's answer (a
        permission rule that asks, with no answer at the time: see
        :mod:`toolweave.policy`).

        The held call runs again through the whole pipeline with the arguments it was
        held with, under its own ``call_id``; the hook that held it finds the answer and
        lets it run (``approved``) or refuses it. An answer is used once and only for
        those exact arguments.

        Args:
            call_id: The id of the held call (in its result's ``error.data``).
            approved: The person's answer.
            always: With ``approved``: allow calls like it from now on.

        Returns:
            The call's result; ``not_found`` when no call ``call_id`` waits in this
            session (never held, or answered already).
        """
        for hook in self._hooks:
            release = getattr(hook, "release_call", None)
            if release is None:
                continue
            held = release(self, call_id, approved=approved, always=always)
            if held is not None:
                name, arguments = held
                return await run_call(self, name, arguments, call_id)
        return failure(
            ErrorKind.NOT_FOUND,
            f"No call {call_id!r} is waiting for an answer in this session.",
            "",
            call_id,
        )

    async def call_from(self, ctx: Context, name: str, arguments: Any = None) -> CallResult:
        """A call made by a running tool (what :meth:`Context.call <toolweave.Context.call>`
        does): the same pipeline, hooks and deadline as any call; no reminders, and its
        state is saved with the outermost call's. Its id is the outer call's with
        ``/<n>`` appended (the tool's ``n``-th inner call)."""
        record = ctx._call_record()
        record.calls += 1
        call_id = None if ctx.call_id is None else f"{ctx.call_id}/{record.calls}"
        return await run_call(self, name, arguments, call_id, _parent=record)

    def _timeout_for(self, entry: ToolEntry) -> float:
        timeout = entry.timeout
        if timeout is not None:
            return timeout
        return self.default_timeout if entry.tool.source == "local" else self.external_timeout

    def _track(self, call_id: str | None, running: Running) -> Running:
        """Make the call ``call_id`` (if given) cancellable through ``running``; every
        call, with an id or not, is stopped by :meth:`aclose`."""
        self._live.add(running)
        if call_id is not None:
            try:
                self._running[call_id] = running
            except TypeError:  # an unhashable id: the call runs, but cannot be cancelled
                return running
        return running

    def _untrack(self, call_id: str | None, running: Running) -> None:
        """Forget ``call_id`` unless a later call with the same id has taken it over."""
        self._live.discard(running)
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

    async def run_tool_calls(
        self,
        message: Any,
        provider: str = "openai",
        *,
        limit: int | None = 16,  # toolweave.formats.MAX_CONCURRENT_CALLS
    ) -> list[dict[str, Any]]:
        """Run every tool call of a model reply, at most ``limit`` at a time (``None``:
        all of them); return the result messages to append.

        See :func:`toolweave.formats.run_tool_calls`.

        Example:
            ``messages += await session.run_tool_calls(reply, provider="anthropic")``
        """
        from toolweave.formats import run_tool_calls

        return await run_tool_calls(self, message, provider, limit=limit)


set_session_factory(Session)
