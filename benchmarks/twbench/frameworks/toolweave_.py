"""toolweave: ``@tool`` functions, a built ``ToolSet``, calls through ``Session.call``.

Every toolweave call carries a call id, as a host's does (the model's id for the call).
:class:`Toolweave` is the framework of every table; :class:`ToolweaveHost` is the same
framework as a host uses it, with the built-in packs loaded into the builder, for the
build and listing workloads (W2, W3), where a set is built per round.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from twbench._tools import RAW_ARGS, Kind, fresh, fresh_many, raw_for
from twbench.frameworks import _toolweave_full as full
from twbench.frameworks._base import Dispatch, Framework, Variant, first_call_of

__all__ = ["CALL_ID", "Toolweave", "ToolweaveHost"]

CALL_ID = "call_1"
"""The call id toolweave's timed calls carry (the peers pass the same one)."""

_HOST_PATH = 'session.run_tool_calls(reply, provider="openai") -> tool messages'


def _text(result: Any) -> str:
    """The tool's text, without the reminders the packs append after it (they are part of
    what the model reads, but not of the tool's answer the workloads check)."""
    if result.error is not None:
        raise AssertionError(f"toolweave call failed: {result.error}")
    return str(result.text).split("\n\n<system-reminder>", 1)[0]


def _call(session: Any, name: str) -> Callable[[str], Awaitable[Any]]:
    """``session.call(name, raw, call_id=CALL_ID)`` as a one-argument call."""
    return functools.partial(session.call, name, call_id=CALL_ID)


class Toolweave(Framework):
    """toolweave's public path: ``ToolSetBuilder`` → ``ToolSet`` → ``Session.call``."""

    key: ClassVar[str] = "toolweave"
    label: ClassVar[str] = "toolweave"
    dists: ClassVar[tuple[str, ...]] = ("toolweave", "anyio", "pluggy")
    modules: ClassVar[tuple[str, ...]] = ("toolweave",)
    sync_note: ClassVar[str] = (
        "inline with @tool(blocking=False); worker thread (anyio.to_thread) by default"
    )
    build_path: ClassVar[str] = "@tool(fn) per function -> ToolSetBuilder.add -> builder.build()"
    definitions_path: ClassVar[str] = 'Session.definitions("openai") on a fresh ToolSet'

    def variants(self) -> Sequence[Variant]:
        return (
            Variant("async", "async", "async tool"),
            Variant("async-bare", "async", "async tool, bare path: reminders off, no store"),
            Variant("async-packs", "async", "async tool, with the built-in packs", packs=True),
            Variant("sync", "sync", "sync tool, @tool(blocking=False): runs inline"),
            Variant("sync-thread", "sync", "sync tool, @tool() default: worker thread"),
            Variant(
                "sync-packs",
                "sync",
                "sync tool, blocking=False, with the built-in packs",
                packs=True,
            ),
            Variant("rich", "rich", "realistic async tool (8 arguments)"),
            Variant(
                "rich-packs", "rich", "realistic async tool, with the built-in packs", packs=True
            ),
        )

    def _tool(self, fn: Callable[..., Any], *, inline: bool) -> Any:
        from toolweave import tool

        return tool(blocking=not inline)(fn)

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        from toolweave import ToolSetBuilder

        kind: Kind = "sync" if variant.kind == "sync" else variant.kind  # type: ignore[assignment]
        setup = full.prepare(None, packs=variant.packs)
        builder = setup.builder() if variant.packs else ToolSetBuilder()
        for fn in fresh_many("async", fillers, "filler"):
            builder.add(self._tool(fn, inline=False))
        inline = variant.key in {"sync", "sync-packs"}
        builder.add(self._tool(fresh(kind, "join"), inline=inline))
        if variant.key == "async-bare":
            bare = builder.build().session(reminders=False)
            return Dispatch(
                _call(bare, "join"),
                _text,
                "Session.call(name, raw JSON, call_id); reminders off, no state store opened",
                host=functools.partial(bare.run_tool_calls, provider="openai"),
                host_path=_HOST_PATH,
                session=bare,
            )
        toolset = setup.build(builder)
        session = setup.session(toolset)
        if variant.packs:
            path = f"Session.call(name, raw JSON, call_id) -> CallResult; {full.HOST_NOTE}"
        else:
            extras = [
                "reminders on (1 registered, silent)" if setup.on["reminders"] else "",
                "state persisted to SQLite" if setup.on["state"] else "",
            ]
            path = "Session.call(name, raw JSON, call_id) -> CallResult" + "".join(
                f"; {e}" for e in extras if e
            )
        dispatch = Dispatch(
            _call(session, "join"),
            _text,
            path,
            host=functools.partial(session.run_tool_calls, provider="openai"),
            host_path=_HOST_PATH + ("; with the built-in packs" if variant.packs else ""),
            session=session,
        )
        dispatch.closers.append(setup.close)
        return dispatch

    async def many(self, width: int, packs: bool = False) -> Dispatch | None:
        """W6's batch path: ``Session.call_many`` of ``width`` calls of the sleeping tool,
        which declares ``concurrency_safe=True`` (else a batch runs one call at a time).
        ``None`` when the installed toolweave has no ``call_many``."""
        from toolweave import Session, tool

        if not hasattr(Session, "call_many"):
            return None
        setup = full.prepare(None, packs=packs)
        builder = setup.builder()
        builder.add(tool(concurrency_safe=True)(fresh("sleep", "join")))
        session = setup.session(setup.build(builder))
        calls = [("join", RAW_ARGS, f"call_{i}") for i in range(width)]

        async def invoke(raw: str) -> Any:
            return await session.call_many(calls)

        def answer(results: Any) -> str:
            texts = {_text(r) for r in results}
            if len(results) != width or len(texts) != 1:
                raise AssertionError(f"call_many gave {len(results)} results: {sorted(texts)}")
            return texts.pop()

        dispatch = Dispatch(
            invoke,
            answer,
            f"Session.call_many([{width:,} × (name, raw JSON, call id)]) "
            "(tool declares concurrency_safe=True)" + (f"; {full.HOST_NOTE}" if packs else ""),
            session=session,
        )
        dispatch.closers.append(setup.close)
        return dispatch

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from toolweave import ToolSetBuilder, tool

        builder = ToolSetBuilder()
        for fn in fns:
            builder.add(tool(fn))
        return builder.build()

    def _new_session(self, built: Any) -> Any:
        """The session the workloads use for a built set."""
        return built.session()

    async def first_call(
        self, built: Any, name: str, kind: str = "async"
    ) -> Callable[[], Awaitable[str]]:
        return first_call_of(_call(self._new_session(built), name), _text, kind)

    async def use_all(self, built: Any, names: Sequence[str], kind: str) -> tuple[Any, list[str]]:
        return await _use_all(self._new_session(built), names, kind)

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        session = self._new_session(built)

        async def render() -> list[dict[str, Any]]:
            defs: list[dict[str, Any]] = session.definitions("openai")
            return defs

        return render


async def _use_all(session: Any, names: Sequence[str], kind: str) -> tuple[Any, list[str]]:
    """One session lists the definitions and calls every tool once."""
    raw = raw_for(kind)
    listing = session.definitions("openai")
    texts = [_text(await session.call(name, raw, call_id=CALL_ID)) for name in names]
    return (session, listing), texts


class ToolweaveHost(Toolweave):
    """toolweave as a host builds it: the built-in packs loaded into the builder, the
    host's tools added, a host's session in the host's workspace (W2, W3). Not a row
    of W1/W4/W6, where :class:`Toolweave`'s ``packs`` variants stand for it.
    :meth:`close` removes the workspace."""

    key: ClassVar[str] = "toolweave-packs"
    label: ClassVar[str] = "toolweave, with the built-in packs"
    build_path: ClassVar[str] = (
        "load_packs(include=[4 built-in packs]).builder() + @tool(fn) per function -> add "
        "-> build()"
    )
    definitions_path: ClassVar[str] = (
        'Session.definitions("openai") on a fresh host session of a set with the built-in '
        "packs + the host tools"
    )

    def __init__(self) -> None:
        self._tmp: Path | None = None

    def _new_session(self, built: Any) -> Any:
        """A host's session of a built set, in the host's workspace, whose state store
        holds what an earlier session saved (a host's workspace is not new for every
        conversation). Sessions are not kept: each ends when the workload drops it."""
        if self._tmp is None:
            from toolweave.state import SQLiteStateStore, default_state_path

            self._tmp = Path(tempfile.mkdtemp(prefix="twbench-host-"))
            store = SQLiteStateStore(default_state_path(self._tmp))
            store.save("an-earlier-session", {"todo": '{"todos": []}'})
            store.close()
        return built.session(workspace=self._tmp)

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from toolweave import tool

        builder = full.host_builder()
        for fn in fns:
            builder.add(tool(fn))
        return builder.build()

    async def close(self) -> None:
        """Remove the host's workspace."""
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
