"""toolweave: ``@tool`` functions, a built ``ToolSet``, calls through ``Session.call``."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from twbench._tools import RAW_ARGS, Kind, fresh, fresh_many
from twbench.frameworks import _toolweave_full as full
from twbench.frameworks._base import Dispatch, Framework, Variant, first_call_of

__all__ = ["Toolweave"]


def _text(result: Any) -> str:
    if result.error is not None:
        raise AssertionError(f"toolweave call failed: {result.error}")
    return str(result.text)


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
            Variant("sync", "sync", "sync tool, @tool(blocking=False): runs inline"),
            Variant("sync-thread", "sync", "sync tool, @tool() default: worker thread"),
        )

    def _tool(self, fn: Callable[..., Any], *, inline: bool) -> Any:
        from toolweave import tool

        return tool(blocking=not inline)(fn)

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        from toolweave import ToolSetBuilder

        kind: Kind = "sync" if variant.kind == "sync" else variant.kind  # type: ignore[assignment]
        builder = ToolSetBuilder()
        for fn in fresh_many("async", fillers, "filler"):
            builder.add(self._tool(fn, inline=False))
        builder.add(self._tool(fresh(kind, "join"), inline=variant.key == "sync"))
        if variant.key == "async-bare":
            bare = builder.build().session(reminders=False)
            return Dispatch(
                functools.partial(bare.call, "join"),
                _text,
                "Session.call(name, raw JSON); reminders off, no state store opened",
            )
        setup = full.prepare(builder)
        toolset = setup.build(builder)
        session = setup.session(toolset)
        invoke = functools.partial(session.call, "join")
        extras = [
            "reminders on (1 registered, silent)" if setup.on["reminders"] else "",
            "state persisted to SQLite" if setup.on["state"] else "",
        ]
        path = "Session.call(name, raw JSON) -> CallResult" + "".join(f"; {e}" for e in extras if e)
        dispatch = Dispatch(invoke, _text, path)
        dispatch.closers.append(setup.close)
        return dispatch

    async def many(self, width: int) -> Dispatch | None:
        """W6's batch path: ``Session.call_many`` of ``width`` calls of the sleeping tool,
        which declares ``concurrency_safe=True`` (else a batch runs one call at a time).
        ``None`` when the installed toolweave has no ``call_many``."""
        from toolweave import Session, ToolSetBuilder, tool

        if not hasattr(Session, "call_many"):
            return None
        builder = ToolSetBuilder()
        builder.add(tool(concurrency_safe=True)(fresh("sleep", "join")))
        setup = full.prepare(builder)
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
            "(tool declares concurrency_safe=True)",
        )
        dispatch.closers.append(setup.close)
        return dispatch

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from toolweave import ToolSetBuilder, tool

        builder = ToolSetBuilder()
        for fn in fns:
            builder.add(tool(fn))
        return builder.build()

    async def first_call(self, built: Any, name: str) -> Callable[[], Awaitable[str]]:
        return first_call_of(functools.partial(built.session().call, name), _text)

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        session = built.session()

        async def render() -> list[dict[str, Any]]:
            defs: list[dict[str, Any]] = session.definitions("openai")
            return defs

        return render
