"""openai-agents: ``function_tool`` called through ``FunctionTool.on_invoke_tool``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from twbench._tools import fresh, fresh_many
from twbench.frameworks._base import Dispatch, Framework, HostLoop, Variant, first_call_of

__all__ = ["OpenAIAgents"]

_PATH = "FunctionTool.on_invoke_tool(ToolContext(...), raw JSON) (what the runner calls)"


def _invoker(by_name: dict[str, Any], name: str) -> Callable[[str], Awaitable[Any]]:
    from agents.tool_context import ToolContext

    async def invoke(raw: str) -> Any:
        tool = by_name[name]
        ctx = ToolContext(context=None, tool_name=name, tool_call_id="call_1", tool_arguments=raw)
        return await tool.on_invoke_tool(ctx, raw)

    return invoke


def _host(by_name: dict[str, Any]) -> HostLoop:
    from agents.tool_context import ToolContext

    async def run(reply: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call in reply["tool_calls"]:
            fn = call["function"]
            name, raw = fn["name"], fn["arguments"]
            ctx = ToolContext(
                context=None, tool_name=name, tool_call_id=call["id"], tool_arguments=raw
            )
            result = await by_name[name].on_invoke_tool(ctx, raw)
            out.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
        return out

    return run


_HOST_PATH = (
    "per tool call of the reply: tools[name].on_invoke_tool(ToolContext(..., tool_call_id), "
    "arguments) -> {role: tool, tool_call_id, content: str(output)} (the runner's step, by hand)"
)


class OpenAIAgents(Framework):
    """``agents.function_tool`` + ``on_invoke_tool``."""

    key: ClassVar[str] = "openai-agents"
    label: ClassVar[str] = "openai-agents"
    dists: ClassVar[tuple[str, ...]] = ("openai-agents", "openai")
    modules: ClassVar[tuple[str, ...]] = ("agents",)
    sync_note: ClassVar[str] = "worker thread: asyncio.to_thread"
    build_path: ClassVar[str] = "agents.function_tool(fn) per function + dict by name"
    definitions_path: ClassVar[str] = (
        "agents.models.chatcmpl_converter.Converter.tool_to_openai(t) per tool "
        "(what the Chat Completions model does each request)"
    )

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        from agents import function_tool

        kind = "sync" if variant.kind == "sync" else variant.kind
        fns = [*fresh_many("async", fillers, "filler"), fresh(kind, "join")]  # type: ignore[arg-type]
        by_name = {t.name: t for t in (function_tool(fn) for fn in fns)}
        return Dispatch(
            _invoker(by_name, "join"), str, _PATH, host=_host(by_name), host_path=_HOST_PATH
        )

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from agents import function_tool

        return {t.name: t for t in (function_tool(fn) for fn in fns)}

    async def first_call(
        self, built: Any, name: str, kind: str = "async"
    ) -> Callable[[], Awaitable[str]]:
        return first_call_of(_invoker(built, name), str, kind)

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        from agents.models.chatcmpl_converter import Converter

        tools = list(built.values())

        async def render() -> list[dict[str, Any]]:
            return [dict(Converter.tool_to_openai(t)) for t in tools]

        return render
