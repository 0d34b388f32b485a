"""What a tool raises never escapes ``session.call``: exceptions whose message cannot be
read, ``BaseException`` classes of the tool's own, its own ``GeneratorExit`` and
``CancelledError``; only ``KeyboardInterrupt`` and the call's real cancellation pass.
A blocking session keeps working after any of them, and says so clearly once closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import Context, ErrorKind, Progress, Session, Tool, ToolSetBuilder, UsageError, tool
from toolweave.errors import describe_exception, exception_text

pytestmark = pytest.mark.anyio


class BadMessage(Exception):
    """An exception whose ``__str__`` fails (it forgot its ``__init__``'s text)."""

    def __init__(self, code: int) -> None:
        self.code = code

    def __str__(self) -> str:
        return "failed with " + self.code  # type: ignore[operator, no-any-return]


class NoMessageAtAll(Exception):
    """An exception whose ``__str__`` and ``__repr__`` both fail."""

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class NotText(Exception):
    """An exception whose ``__str__`` returns something that is not text."""

    def __str__(self) -> str:
        return 42  # type: ignore[return-value]


class BadNotImplemented(NotImplementedError):
    """A NotImplementedError whose message cannot be read."""

    def __str__(self) -> str:
        raise TypeError("no message")


class VendorAbort(BaseException):
    """A BaseException class of a tool's own."""


def _raise(what: str) -> None:
    raised: BaseException = {
        "bad-message": BadMessage(42),
        "no-message": NoMessageAtAll(),
        "not-text": NotText(),
        "not-implemented": BadNotImplemented(),
        "vendor-abort": VendorAbort("vendor bug"),
        "generator-exit": GeneratorExit("its own"),
        "cancelled": asyncio.CancelledError("its own"),
    }[what]
    raise raised


class What(BaseModel):
    """What to raise."""

    what: str
    """What to raise."""


class Streams(Tool[What, str]):
    """Raises between progress items. Not for real work."""

    id = "streams"

    async def stream(self, ctx: Context, args: What) -> AsyncIterator[Progress | str]:
        """Report progress, then raise."""
        yield Progress(message="working")
        _raise(args.what)
        yield "ok"


def _tools() -> list[Any]:
    @tool(id="inline", blocking=False)
    def inline(what: str) -> str:
        """Raise inline. Not for real work.

        Args:
            what: What to raise.
        """
        _raise(what)
        return "ok"

    @tool(id="in_thread")
    def in_thread(what: str) -> str:
        """Raise in a worker thread. Not for real work.

        Args:
            what: What to raise.
        """
        _raise(what)
        return "ok"

    @tool(id="after_wait", blocking=False)
    async def after_wait(what: str) -> str:
        """Raise after a suspension. Not for real work.

        Args:
            what: What to raise.
        """
        await anyio.sleep(0.01)
        _raise(what)
        return "ok"

    @tool(id="ok", blocking=False)
    def ok() -> str:
        """Say ok. Not for real work."""
        return "ok"

    return [inline, in_thread, after_wait, Streams, ok]


WAYS = ["inline", "in_thread", "after_wait", "streams"]


@pytest.fixture
def session(tmp_path: Path) -> Session:
    builder = ToolSetBuilder()
    builder.add_all(_tools())
    return builder.build().session(workspace=tmp_path)


async def _call(session: Session, way: str, what: str) -> Any:
    if way == "streams":
        return await session.call(way, {"what": what}, on_progress=lambda _: None)
    return await session.call(way, {"what": what})


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    ("what", "kind", "text"),
    [
        ("bad-message", ErrorKind.EXECUTION_ERROR, "failed: BadMessage (its message could not"),
        ("no-message", ErrorKind.EXECUTION_ERROR, "failed: NoMessageAtAll (its message could"),
        ("not-text", ErrorKind.EXECUTION_ERROR, "failed: NotText (its message could not be"),
        ("not-implemented", ErrorKind.UNIMPLEMENTED, "is not implemented: (its message could"),
    ],
)
async def test_an_exception_whose_message_cannot_be_read_is_the_calls_failure(
    session: Session, way: str, what: str, kind: ErrorKind, text: str
) -> None:
    """A tool exception whose ``__str__`` raises (or returns no text) made session.call
    raise; it is the call's failure, described by the exception's type."""
    result = await _call(session, way, what)
    assert result.error is not None
    assert result.error.kind is kind
    assert text in result.text
    assert (await session.call("ok", {})).text == "ok"


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    ("what", "named"),
    [
        ("vendor-abort", "VendorAbort: vendor bug"),
        ("generator-exit", "GeneratorExit: its own"),
        ("cancelled", "CancelledError: its own"),
    ],
)
async def test_base_exceptions_of_the_tools_own_are_the_calls_failure(
    session: Session, way: str, what: str, named: str
) -> None:
    """A BaseException class of the tool's own, or a GeneratorExit or CancelledError the
    tool raises while nothing cancels its call, escaped session.call; each is now
    execution_error naming it, and the session goes on."""
    result = await _call(session, way, what)
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert f"{way} failed: {named}" in result.text
    assert (await session.call("ok", {})).text == "ok"


def test_a_sync_session_outlives_what_its_tools_raise(tmp_path: Path) -> None:
    """A tool raising its own BaseException (or GeneratorExit) escaped SyncSession.call and
    stopped its event loop: every later call failed 'This portal is not running'. Now
    each is a result, and the session answers and closes normally."""
    builder = ToolSetBuilder()
    builder.add_all(_tools())
    with builder.build().session(workspace=tmp_path).sync() as sync:
        for way in ("inline", "in_thread"):
            for what in ("vendor-abort", "generator-exit", "bad-message"):
                result = sync.call(way, {"what": what})
                assert result.error is not None
                assert result.error.kind is ErrorKind.EXECUTION_ERROR
                assert sync.call("ok", {}).text == "ok"


def test_a_closed_sync_session_says_so_with_a_usage_error(tmp_path: Path) -> None:
    """A call on a closed SyncSession raised RuntimeError('This portal is not running');
    it is a UsageError saying the session is closed. Closing again stays harmless."""
    builder = ToolSetBuilder()
    builder.add_all(_tools())
    sync = builder.build().session(workspace=tmp_path).sync()
    assert sync.call("ok", {}).text == "ok"
    sync.close()
    with pytest.raises(UsageError, match="closed"):
        sync.call("ok", {})
    with pytest.raises(UsageError, match="closed"):
        sync.call_many([{"name": "ok", "arguments": {}}])
    with pytest.raises(UsageError, match="closed"):
        sync.save_state()
    sync.close()


def test_exception_text_never_raises() -> None:
    """The one describer every report of a foreign exception goes through."""
    assert exception_text(ValueError("bad")) == "bad"
    assert exception_text(BadMessage(1)) is None
    assert exception_text(NotText()) is None
    assert describe_exception(ValueError("bad")) == "ValueError: bad"
    assert describe_exception(KeyError()) == "KeyError"
    assert describe_exception(KeyError(), empty="no details") == "KeyError: no details"
    assert describe_exception(NoMessageAtAll()) == (
        "NoMessageAtAll (its message could not be read)"
    )

    class Interrupting(Exception):
        def __str__(self) -> str:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        exception_text(Interrupting())


class _Suspend:
    """An awaitable that suspends once (as an event loop's future does)."""

    def __await__(self) -> Any:
        yield


def test_closing_a_suspended_coroutine_is_told_from_a_tools_own_generator_exit() -> None:
    """Closing a coroutine suspended in an ``await`` raises ``GeneratorExit`` in each of
    its frames: the pipeline catching it there must let it through. A tool that raises
    ``GeneratorExit`` itself fails its call."""
    from toolweave.runtime._outcomes import steers

    seen: list[bool] = []

    async def catcher(inner: Any) -> None:
        try:
            await inner
        except BaseException as exc:
            seen.append(steers(exc))
            raise

    async def waits() -> None:
        await _Suspend()

    coro = catcher(waits())
    coro.send(None)
    coro.close()
    assert seen == [True]

    async def raises() -> None:
        raise GeneratorExit

    with pytest.raises(GeneratorExit):
        catcher(raises()).send(None)
    assert seen == [True, False]
