"""The context a tool receives with each call."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, final

from pydantic import BaseModel

from toolweave.authoring._tool import Kind
from toolweave.errors import MissingResourceError, UsageError

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.resources import Resources
    from toolweave.results import CallResult
    from toolweave.runtime._session import Session
    from toolweave.state import StateSlot

__all__ = ["Context"]

T = TypeVar("T")
_TOOL_ID = re.compile(r"[\w.-]+(?::[\w.-]+)?")
M = TypeVar("M", bound=BaseModel)
_STOP_MADE = threading.Lock()
"""Taken to make a call's stop event, which a worker thread and the event loop may
both ask for first."""


@final
class CallRecord:
    """What a call did besides returning: state it touched, calls it made.

    Created only when needed (a call that neither reads state nor calls another tool
    has none). Calls a meta-tool makes through its context get their own record,
    sharing the outermost one's (``root``) state bookkeeping: the outer call persists
    everything once.

    Attributes:
        root: The record of the outermost call (itself for an outer call).
        depth: 0 for a call from the host, 1 for a call made by that call's tool, ...
        calls: How many calls the call's tool made through its context so far.
        effective: The tool that produced this call's result, when it delegated.
        slots: (root only) The state slots touched by the call and its inner calls (and
            not saved yet).
        seen: (root only) For each model in ``slots``, the slot's
            :attr:`~toolweave.state.StateSlot.resets` when the call first used it: a
            save finding it moved knows another save reloaded the model under the call.
        held: (root only) Keys of the state locks held for the call.
    """

    __slots__ = ("calls", "depth", "effective", "held", "root", "seen", "slots")

    def __init__(self, parent: CallRecord | None = None) -> None:
        self.root: CallRecord = self if parent is None else parent.root
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.calls = 0
        self.effective: str | None = None
        self.slots: dict[type[BaseModel], StateSlot] | None = None
        self.seen: dict[type[BaseModel], int] | None = None
        self.held: set[str] | None = None

    def touch(self, slot: StateSlot) -> None:
        """Remember that the call used ``slot`` (persisted after the outer call)."""
        root = self.root
        slots = root.slots
        seen = root.seen
        if slots is None or seen is None:
            slots = root.slots = {}
            seen = root.seen = {}
        model = slot.model
        if model not in slots:
            slots[model] = slot
            seen[model] = slot.resets


class Context:
    """What a running tool can see: its session's resources, its params, its call.

    One is created per call; tools should not keep it after the call returns. In a
    session with call hooks it is the call's :class:`~toolweave.HookCall`.

    A configuration may rename tools and their parameters, so a tool never writes a
    name the model sees from its own code: every message (an error, a note in the
    output) asks the context for it. :meth:`param_name` gives the client name of one of
    the tool's own parameters, :meth:`tool_name` that of a tool in the session's set
    (this one, the one of a kind, or the one with an id), or ``None`` when the set has
    none, so the message can say something else::

        raise ToolError(
            ErrorKind.NOT_FOUND,
            f"`{ctx.param_name('old_string')}` was not found; read the file again "
            f"with {ctx.tool_name(Kind.READ) or 'the file reader'}.",
        )

    Work on a worker thread cannot be interrupted: when the call times out or is
    cancelled, the call returns at once and its thread runs on, abandoned. A blocking
    tool (a synchronous ``run`` or ``@tool`` function, which runs on a worker thread)
    checks :attr:`stopped` between steps and ends early; an async tool hands blocking
    work to :meth:`in_thread`, which does the same for it::

        @tool(kind=Kind.SEARCH, read_only=True)
        def count_lines(ctx: Context, path: str) -> int:
            lines = 0
            with ctx.require(Workspace).open(path) as entry:
                for block in iter(partial(os.read, entry.fd, 1 << 20), b""):
                    if ctx.stopped:  # timed out or cancelled: nobody waits for it
                        raise ToolError(ErrorKind.CANCELLED, "count_lines was stopped")
                    lines += block.count(b"\n")
            return lines

    Attributes:
        session: The session the call belongs to.
        entry: The configured entry being called (client name, effective params).
        call_id: The host's id for the call, if any.
    """

    __slots__ = ("_finished", "_record", "_stop", "call_id", "entry", "session")
    _stop: threading.Event
    """Made on first use (:attr:`stop_event`); unset until then (reading it raises)."""
    _finished: bool
    """Set (by the pipeline) once the tool ended: reminders, which run then, may read any
    state. Unset until then (reading it raises)."""

    def __init__(self, session: Session, entry: ToolEntry | None, call_id: str | None) -> None:
        self.session = session
        self.entry = entry
        self.call_id = call_id
        self._record: CallRecord | None = None

    def _check_state(self, model: type[BaseModel]) -> None:
        entry = self.entry
        if entry is None or model in entry.tool.state_types:
            return
        try:
            if self._finished:  # set only after the tool ended (unset slots raise)
                return
        except AttributeError:
            pass
        name = getattr(model, "__qualname__", repr(model))
        raise UsageError(
            f"{entry.tool.fqid} uses the state model {name} without declaring it: "
            f'add it to the tool\'s `state` (with `state_access = "shared"` when its '
            "calls must not wait for one another)"
        )

    def _call_record(self) -> CallRecord:
        """The call's record (created on first use)."""
        record = self._record
        if record is None:
            record = self._record = CallRecord()
        return record

    @property
    def resources(self) -> Resources:
        """The session's resources."""
        return self.session.resources

    # -- stopping work on worker threads ------------------------------------------------

    @property
    def stopped(self) -> bool:
        """Whether the call stopped waiting for its work on a worker thread (it timed
        out or was cancelled; also once that work failed): the work ends at its next
        check. ``False`` while the call waits for it."""
        try:
            return self._stop.is_set()
        except AttributeError:  # made on first use (unset slots raise)
            return False

    @property
    def stop_event(self) -> threading.Event:
        """The event :attr:`stopped` reads, for code that waits on one or takes one
        (``stop_event.wait(1.0)`` sleeps a second unless the call is stopped)."""
        try:
            return self._stop
        except AttributeError:
            with _STOP_MADE:
                try:
                    return self._stop
                except AttributeError:
                    stop = self._stop = threading.Event()
                    return stop

    def _stopping(self) -> None:
        """Mark the call stopped (the pipeline, when a call on a worker thread is
        abandoned)."""
        self.stop_event.set()

    async def in_thread(self, fn: Callable[..., T], /, *args: Any) -> T:
        """``fn(*args)`` on a worker thread, with the caller's context variables: an
        async tool's blocking work (parsing, walking files) that must not stall the
        event loop.

        When the call times out or is cancelled, this returns at once (the call ends)
        and :attr:`stopped` turns true: ``fn`` checks it (or :attr:`stop_event`)
        between steps and ends early instead of running on for nobody.
        """
        from toolweave._threads import run_in_worker

        try:
            return await run_in_worker(fn, *args)
        except BaseException:
            self._stopping()
            raise

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.session.session_id

    @property
    def depth(self) -> int:
        """0 for a call from the host; 1 and more for calls made by meta-tools."""
        record = self._record
        return 0 if record is None else record.depth

    def get(self, key: type[T]) -> T | None:
        """The resource stored under ``key``, or ``None``."""
        return self.session.resources.get(key)

    def require(self, key: type[T]) -> T:
        """The resource stored under ``key``.

        Raises:
            MissingResourceError: None was provided (the call fails as ``unavailable``).
        """
        return self.session.resources.require(key)

    def params(self, key: type[T]) -> T:
        """The effective params of type ``key`` for this call.

        The configured entry's params come first, then a value in the resources, then
        the model's defaults when ``key`` is this tool's params model.
        """
        entry = self.entry
        if entry is not None:
            mine = entry.params
            if mine is not None and type(mine) is key:
                return mine
        found = self.session.resources.get(key)
        if found is not None:
            return found
        if entry is not None and entry.tool.params_type is key:
            return key()
        raise MissingResourceError(key)

    # -- names as the model sees them ---------------------------------------------------

    def param_name(self, name: str) -> str:
        """The client-visible name of this tool's parameter ``name`` (its canonical
        name, as the ``Args`` model spells it): what the configuration renamed it to
        (``rename = { offset = "start_line" }`` gives ``"start_line"``), else ``name``.
        """
        entry = self.entry
        to_client = entry.to_client if entry is not None else None
        return name if to_client is None else to_client.get(name, name)

    def tool_name(self, kind: Kind | str | None = None, *, id: str | None = None) -> str | None:
        """The client-visible name of a tool of the session's set.

        Without arguments, this tool's own name. With ``kind``, the first configured tool
        of that kind; with ``id`` (``"bash"`` or ``"shell:bash"``), the configured tool
        with that id: the same tools that ``{tool:<kind>}`` and ``{name:<id>}`` name in
        descriptions.

        Returns:
            The name, or ``None`` when the set has no such tool (say something else
            then, such as "the file reader").

        Raises:
            UsageError: Both ``kind`` and ``id`` are given, ``kind`` is not a
                :class:`~toolweave.Kind`, or ``id`` is not a tool id.
        """
        if kind is None and id is None:
            entry = self.entry
            return entry.name if entry is not None else None
        if kind is not None and id is not None:
            raise UsageError("tool_name takes a kind or an id, not both")
        if kind is not None:
            try:
                placeholder = f"{{tool:{Kind(kind).value}|}}"
            except ValueError:
                raise UsageError(f"tool_name: {kind!r} is not a tool kind") from None
        elif id is not None and _TOOL_ID.fullmatch(id):
            placeholder = f"{{name:{id}|}}"
        else:
            raise UsageError(f"tool_name: {id!r} is not a tool id")
        # The set's template renderer answers, so messages name what descriptions name.
        return self.session.render_prompt(placeholder) or None

    # -- runtime state ----------------------------------------------------------------

    def state(self, model: type[M]) -> M:
        """The session's live instance of the state model ``model``.

        Mutate it in place (or replace it with :meth:`set_state`); after the call the
        session saves it when its JSON changed. The first access in a session loads
        what the store holds (the model's defaults for a new session). A tool reads
        only the models it declares (``state = Model``); reminders read any.

        Raises:
            UsageError: The tool does not declare ``model``, or ``model`` is not a
                pydantic model with defaults for every field.
        """
        try:
            finished = self._finished
        except AttributeError:  # set only after the tool ended (unset slots raise)
            finished = False
        if finished:  # a reminder: the call's state is saved already, nothing to record
            return self.session.state.get(model)
        self._check_state(model)
        record = self._call_record()
        slot = self.session.state.slot(model, record.root.held)
        record.touch(slot)
        value: Any = slot.value
        return value  # type: ignore[no-any-return]

    def set_state(self, value: BaseModel) -> None:
        """Replace the session's instance of ``type(value)`` with ``value``.

        Raises:
            UsageError: The tool does not declare ``type(value)`` as its state.
        """
        self._check_state(type(value))
        record = self._call_record()
        record.touch(self.session.state.replace(value, record.root.held))

    # -- other tools and the host -----------------------------------------------------

    async def call(self, name: str, arguments: Any = None) -> CallResult:
        """Run another tool of the session (internal dispatch, for meta-tools).

        The inner call goes through guards and argument validation like any call, but
        skips reminders and state persistence: the outer call does both, once. When
        the tool returns the inner :class:`~toolweave.CallResult` itself, the outer
        result carries its output, text and error; in any case the outer result's
        ``effective_tool`` names the last tool that ran successfully inside.

        The inner call's id is the outer call's with ``/1``, ``/2``, ... appended, in
        the order the tool makes its calls (``call_7/1``; none when the outer call has
        none): hooks and the audit see it, and :meth:`Session.cancel
        <toolweave.Session.cancel>` with it stops that inner call alone.

        Args:
            name: The client-visible name of the tool.
            arguments: Its arguments (JSON text or a dict).

        Returns:
            The inner result; failures are results with an error, never exceptions.
        """
        return await self.session.call_from(self, name, arguments)

    def notify(self, name: str, data: Any = None) -> None:
        """Emit a notification the tool declared in ``emitted_notifications``.

        Safe to call from a worker thread (a blocking tool): delivery happens in the
        event loop.

        Raises:
            UsageError: In debug mode, when the tool did not declare ``name``.
        """
        self.session.notify(self, name, data)

    def __repr__(self) -> str:
        name = self.entry.name if self.entry is not None else None
        return f"<Context {name} call_id={self.call_id!r} session={self.session_id!r}>"
