"""The session: one agent conversation's view of a tool set, and the path of a call."""

from __future__ import annotations

import logging
import types
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

import anyio
from pydantic import ValidationError

from toolweave._erasure import format_validation_error
from toolweave.context import Context
from toolweave.errors import ErrorKind, MissingResourceError, ToolError, UsageError
from toolweave.resources import Resources, Workspace
from toolweave.stream import CallResult, Progress
from toolweave.toolset import ToolEntry

if TYPE_CHECKING:
    from toolweave._erasure import ErasedTool
    from toolweave.toolset import ToolSet

__all__ = ["Session", "SyncSession", "ToolStream"]

logger = logging.getLogger("toolweave")

DEFAULT_TIMEOUT = 120.0
"""Seconds a call may run when neither the tool nor the session says otherwise."""

ProgressCallback = Callable[[Progress], Awaitable[None] | None]


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], pending: Any) -> Generator[Any, Any, Any]:
    """Continue a coroutine that already ran its first step and yielded ``pending``.

    The coroutine is driven from the awaiting task, exactly as ``await`` would: what it
    yields goes to the event loop, what the loop sends (or throws: cancellation) goes
    back in. This lets the dispatcher run a call's first step without a cancel scope
    and pay for one only when the call really waits.
    """
    while True:
        try:
            sent = yield pending
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                pending = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                pending = coro.send(sent)
            except StopIteration as stop:
                return stop.value


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


class _Running:
    """A call that is waiting and may be cancelled by id."""

    __slots__ = ("cancelled", "scope")

    def __init__(self) -> None:
        self.cancelled = False
        self.scope: anyio.CancelScope | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()


def _stopped(running: _Running, entry: ToolEntry, timeout: float) -> ToolError:
    if running.cancelled:
        return ToolError(ErrorKind.CANCELLED, f"{entry.name} was cancelled")
    return ToolError(
        ErrorKind.TIMEOUT,
        f"{entry.name} did not finish within {timeout:g} s and was stopped; "
        "try a smaller request or a longer timeout",
    )


@final
class Session:
    """One conversation's use of a :class:`~toolweave.ToolSet`.

    Holds the session's resources (layered over the host's), runs calls, and tracks
    running calls so that they can be cancelled by id. ``call`` never raises for
    anything a model sends: every failure is a :class:`~toolweave.CallResult` with an
    error.

    Args:
        toolset: The immutable set to serve.
        session_id: A stable id (state and logs are keyed by it); random by default.
        resources: Host resources shared by sessions; the session layers its own on top.
        workspace: The workspace root (default: a ``Workspace`` in ``resources``, else
            the current directory).
        default_timeout: Seconds a call may run when its tool sets no timeout.
    """

    __slots__ = (
        "_external",
        "_listing",
        "_running",
        "default_timeout",
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
        default_timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.toolset = toolset
        self.session_id = session_id or uuid.uuid4().hex
        self.resources = resources.child() if resources is not None else Resources()
        if workspace is not None:
            self.resources.insert(Workspace(Path(workspace)))
        elif Workspace not in self.resources:
            self.resources.insert(Workspace(Path.cwd()))
        self.default_timeout = default_timeout
        self._running: dict[str, _Running] = {}
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

    # -- external tools -------------------------------------------------------------

    def register_external(self, tool: ErasedTool, *, name: str | None = None) -> ToolEntry:
        """Add a JSON-only tool (see :func:`toolweave.external.external_tool`) at run time.

        Args:
            tool: The erased handle.
            name: The client-visible name (default: the tool's id).

        Raises:
            UsageError: The name is taken by a built-in tool (external tools never
                shadow them) or by another external tool.
        """
        client = name or tool.id
        if client in self.toolset._by_name:
            raise UsageError(f"external tool name {client!r} is taken by a built-in tool")
        if client in self._external:
            raise UsageError(f"external tool name {client!r} is already registered")
        entry = ToolEntry(client, tool)
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
        try:
            if tool.is_coroutine:
                coro = tool.invoke(ctx, args)  # type: ignore[misc]
                try:
                    pending = coro.send(None)
                except StopIteration as stop:
                    raw = stop.value
                else:
                    raw = await self._wait(coro, pending, entry, call_id)
            else:
                raw = tool.invoke(ctx, args)  # type: ignore[misc]
            output, text = tool.finish(raw)
        except Exception as exc:
            return _from_exception(exc, entry, call_id)
        return self._complete(ctx, output, text)

    def _timeout_for(self, entry: ToolEntry) -> float:
        return entry.timeout if entry.timeout is not None else self.default_timeout

    async def _wait(
        self, coro: Coroutine[Any, Any, Any], pending: Any, entry: ToolEntry, call_id: str | None
    ) -> Any:
        """Finish a call that suspended: under its deadline, cancellable by id."""
        timeout = self._timeout_for(entry)
        running = _Running()
        if call_id is not None:
            self._running[call_id] = running
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
                running.scope = scope
                return await _resume(coro, pending)
        finally:
            coro.close()
            if call_id is not None and self._running.get(call_id) is running:
                del self._running[call_id]
        raise _stopped(running, entry, timeout)

    def _complete(self, ctx: Context, output: Any, text: str) -> CallResult:
        """Post-processing of a successful call; returns its result."""
        entry = ctx.entry
        assert entry is not None
        return CallResult(output, text, None, ctx.call_id, entry.tool.fqid, entry.name)

    def stream(self, name: str, arguments: Any = None, call_id: str | None = None) -> ToolStream:
        """Run a call in streaming mode: progress items, then exactly one CallResult.

        Example:
            ``async for item in session.stream("bash", {"command": "make"}, "c1"): ...``
        """
        return ToolStream(self, name, arguments, call_id)

    def cancel(self, call_id: str) -> bool:
        """Cancel the running call ``call_id`` at once; it ends with ``cancelled``.

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


_NOTHING: Any = object()


@final
class ToolStream:
    """The items of one call in streaming mode: progress items, then one CallResult.

    Iterate it with ``async for``. Every step runs under the call's deadline; the
    stream can be cancelled by call id through :meth:`Session.cancel`. A tool that ends
    without a result, or yields after its result, ends the stream with
    ``execution_error``; it never hangs past its deadline.
    """

    __slots__ = (
        "_agen",
        "_arguments",
        "_call_id",
        "_ctx",
        "_deadline",
        "_done",
        "_entry",
        "_name",
        "_output",
        "_running",
        "_session",
    )

    def __init__(self, session: Session, name: str, arguments: Any, call_id: str | None) -> None:
        self._session = session
        self._name = name
        self._arguments = arguments
        self._call_id = call_id
        self._agen: Any = None
        self._entry: ToolEntry | None = None
        self._ctx: Context | None = None
        self._deadline = 0.0
        self._done = False
        self._output: Any = _NOTHING
        self._running = _Running()

    def __aiter__(self) -> ToolStream:
        return self

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
        stream = cls(session, entry.name, None, ctx.call_id)
        stream._open(entry, ctx, args)
        async for item in stream:
            if isinstance(item, CallResult):
                return item
            if on_progress is not None:
                maybe = on_progress(item)
                if maybe is not None:
                    await maybe
        raise AssertionError("a tool stream ended without a result")  # pragma: no cover

    def _open(self, entry: ToolEntry, ctx: Context, args: Any) -> None:
        self._entry = entry
        self._ctx = ctx
        assert entry.tool.open_stream is not None
        self._agen = entry.tool.open_stream(ctx, args)
        self._deadline = anyio.current_time() + self._session._timeout_for(entry)
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
            try:
                args = entry.parse(self._arguments)
            except ValidationError as exc:
                msg = format_validation_error(exc, self._name, entry.to_client)
                return await self._end(
                    _failure(
                        ErrorKind.INVALID_PARAMS, msg, self._name, self._call_id, entry.tool.fqid
                    )
                )
            except ToolError as err:
                return await self._end(
                    CallResult(None, err.message, err, self._call_id, entry.tool.fqid, self._name)
                )
            self._open(entry, Context(session, entry, self._call_id), args)
        entry = self._entry
        assert entry is not None
        while True:
            item = await self._pull()
            if isinstance(item, CallResult):
                return await self._end(item)
            if item is _NOTHING:  # the generator ended
                if self._output is _NOTHING:
                    return await self._end(
                        self._error(
                            ToolError(
                                ErrorKind.EXECUTION_ERROR, f"{entry.name} ended without a result"
                            )
                        )
                    )
                try:
                    output, text = entry.tool.finish(self._output)
                except Exception as exc:
                    return await self._end(_from_exception(exc, entry, self._call_id))
                assert self._ctx is not None
                return await self._end(self._session._complete(self._ctx, output, text))
            if self._output is not _NOTHING:
                what = "progress" if isinstance(item, Progress) else "a second result"
                return await self._end(
                    self._error(
                        ToolError(
                            ErrorKind.EXECUTION_ERROR,
                            f"{entry.name} yielded {what} after its result",
                        )
                    )
                )
            if isinstance(item, Progress):
                return item
            self._output = item

    def _error(self, err: ToolError) -> CallResult:
        assert self._entry is not None
        return CallResult(None, err.message, err, self._call_id, self._entry.tool.fqid, self._name)

    async def _pull(self) -> Any:
        """One step of the tool's generator under the deadline: an item, _NOTHING at the
        end, or a CallResult when the step failed, timed out or was cancelled."""
        entry = self._entry
        assert entry is not None
        running = self._running
        if running.cancelled:
            return self._error(_stopped(running, entry, 0))
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
        self._done = True
        await self.aclose()
        return result

    async def aclose(self) -> None:
        """Stop the tool's generator (if still running) and forget the call id."""
        self._done = True
        session = self._session
        if self._call_id is not None and session._running.get(self._call_id) is self._running:
            del session._running[self._call_id]
        agen, self._agen = self._agen, None
        if agen is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                try:
                    await agen.aclose()
                except Exception:
                    logger.exception("closing the stream of %s failed", self._name)


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

    def stream(
        self, name: str, arguments: Any = None, call_id: str | None = None
    ) -> list[Progress | CallResult]:
        """Run one call in streaming mode and return every item, the result last."""

        async def collect() -> list[Progress | CallResult]:
            return [item async for item in self.session.stream(name, arguments, call_id)]

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
