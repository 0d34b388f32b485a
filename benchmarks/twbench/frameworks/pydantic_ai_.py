"""pydantic-ai: a ``FunctionToolset`` called through the agent's ``ToolManager``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from twbench._tools import fresh, fresh_many, raw_for
from twbench.frameworks._base import Dispatch, Framework, HostLoop, Variant, first_call_of

__all__ = ["PydanticAI"]

_PATH = (
    "ToolManager.handle_call(ToolCallPart(name, raw JSON)) on the run step's ToolManager "
    "(FunctionToolset; validation + call, as an agent run step does)"
)


def _context() -> Any:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    return RunContext(deps=None, model=TestModel(), usage=RunUsage())


async def _manager(toolset: Any) -> Any:
    from pydantic_ai.tool_manager import ToolManager

    return await ToolManager(toolset).for_run_step(_context())


def _invoker(manager: Any, name: str) -> Callable[[str], Awaitable[Any]]:
    from pydantic_ai.messages import ToolCallPart

    handle = manager.handle_call

    async def invoke(raw: str) -> Any:
        return await handle(ToolCallPart(name, raw))

    return invoke


def _host(manager: Any) -> HostLoop:
    from pydantic_ai.messages import ToolCallPart

    handle = manager.handle_call

    async def run(reply: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call in reply["tool_calls"]:
            fn = call["function"]
            part = ToolCallPart(fn["name"], fn["arguments"], tool_call_id=call["id"])
            result = await handle(part)
            out.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
        return out

    return run


_HOST_PATH = (
    "per tool call of the reply: ToolManager.handle_call(ToolCallPart(name, arguments, "
    "tool_call_id)) -> {role: tool, tool_call_id, content} (what the OpenAI model maps)"
)


class PydanticAI(Framework):
    """``FunctionToolset`` + ``ToolManager.handle_call``."""

    key: ClassVar[str] = "pydantic-ai"
    label: ClassVar[str] = "pydantic-ai"
    dists: ClassVar[tuple[str, ...]] = ("pydantic-ai-slim",)
    modules: ClassVar[tuple[str, ...]] = ("pydantic_ai",)
    sync_note: ClassVar[str] = "worker thread: anyio.to_thread via run_in_executor"
    build_path: ClassVar[str] = "FunctionToolset(functions) (schema + validator built per function)"
    definitions_path: ClassVar[str] = (
        "await toolset.get_tools(ctx) + OpenAIChatModel._map_tool_definition per tool "
        "(what a model request does each step)"
    )

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        from pydantic_ai.toolsets import FunctionToolset

        kind = "sync" if variant.kind == "sync" else variant.kind
        fns = [*fresh_many("async", fillers, "filler"), fresh(kind, "join")]  # type: ignore[arg-type]
        manager = await _manager(FunctionToolset(fns))
        return Dispatch(
            _invoker(manager, "join"), str, _PATH, host=_host(manager), host_path=_HOST_PATH
        )

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from pydantic_ai.toolsets import FunctionToolset

        return FunctionToolset(list(fns))

    async def first_call(
        self, built: Any, name: str, kind: str = "async"
    ) -> Callable[[], Awaitable[str]]:
        return first_call_of(_invoker(await _manager(built), name), str, kind)

    async def use_all(self, built: Any, names: Sequence[str], kind: str) -> tuple[Any, list[str]]:
        """The listing, then every tool called once through one run step's manager (as an
        agent run step does; a manager per call would prepare every tool per call)."""
        render = await self.definitions(built)
        listing = await render()
        manager = await _manager(built)
        raw = raw_for(kind)
        texts = [str(await _invoker(manager, name)(raw)) for name in names]
        return (listing, manager), texts

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel("gpt-4o", provider=OpenAIProvider(api_key="benchmark"))
        ctx = _context()

        async def render() -> list[dict[str, Any]]:
            tools = await built.get_tools(ctx)
            return [dict(model._map_tool_definition(t.tool_def, {})) for t in tools.values()]

        return render
