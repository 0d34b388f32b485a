"""langchain-core: ``StructuredTool`` called the way an agent's tool node calls it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from twbench._tools import fresh, fresh_many
from twbench.frameworks._base import Dispatch, Framework, HostLoop, Variant, first_call_of

__all__ = ["LangchainCore"]

_PATH = (
    'tools_by_name[name].ainvoke({"type": "tool_call", "args": json.loads(raw), ...}) '
    "-> ToolMessage"
)


def _make(fn: Callable[..., Any], sync: bool) -> Any:
    from langchain_core.tools import StructuredTool

    if sync:
        return StructuredTool.from_function(func=fn)
    return StructuredTool.from_function(coroutine=fn)


def _content(message: Any) -> str:
    return str(message.content)


def _invoker(by_name: dict[str, Any], name: str) -> Callable[[str], Awaitable[Any]]:
    async def invoke(raw: str) -> Any:
        call = {"name": name, "args": json.loads(raw), "id": "call_1", "type": "tool_call"}
        return await by_name[name].ainvoke(call)

    return invoke


def _host(by_name: dict[str, Any]) -> HostLoop:
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages

    async def run(reply: dict[str, Any]) -> list[dict[str, Any]]:
        (message,) = convert_to_messages([reply])
        results = [await by_name[c["name"]].ainvoke(c) for c in message.tool_calls]
        out: list[dict[str, Any]] = convert_to_openai_messages(results)
        return out

    return run


_HOST_PATH = (
    "convert_to_messages([reply]) -> per AIMessage.tool_calls: tools_by_name[name].ainvoke(call) "
    "-> convert_to_openai_messages(ToolMessages) (what a tool node does)"
)


class LangchainCore(Framework):
    """``StructuredTool.from_function`` + ``ainvoke`` with a ``ToolCall``."""

    key: ClassVar[str] = "langchain-core"
    label: ClassVar[str] = "langchain-core"
    dists: ClassVar[tuple[str, ...]] = ("langchain-core",)
    modules: ClassVar[tuple[str, ...]] = ("langchain_core",)
    sync_note: ClassVar[str] = "worker thread: run_in_executor"
    build_path: ClassVar[str] = (
        "StructuredTool.from_function(coroutine=fn) per function + dict by name"
    )
    definitions_path: ClassVar[str] = (
        "langchain_core.utils.function_calling.convert_to_openai_tool(t) per tool (what bind_tools does)"
    )

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        tools = [_make(fn, False) for fn in fresh_many("async", fillers, "filler")]
        kind = "sync" if variant.kind == "sync" else variant.kind
        tools.append(_make(fresh(kind, "join"), kind == "sync"))  # type: ignore[arg-type]
        by_name = {t.name: t for t in tools}
        return Dispatch(
            _invoker(by_name, "join"), _content, _PATH, host=_host(by_name), host_path=_HOST_PATH
        )

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        return {t.name: t for t in (_make(fn, False) for fn in fns)}

    async def first_call(
        self, built: Any, name: str, kind: str = "async"
    ) -> Callable[[], Awaitable[str]]:
        return first_call_of(_invoker(built, name), _content, kind)

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        tools = list(built.values())

        async def render() -> list[dict[str, Any]]:
            return [convert_to_openai_tool(t) for t in tools]

        return render
