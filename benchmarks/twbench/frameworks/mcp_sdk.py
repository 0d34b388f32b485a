"""The ``mcp`` SDK: an ``MCPServer``'s own tool-call path, in process."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from twbench._tools import RAW_ARGS, fresh, fresh_many
from twbench.frameworks._base import Dispatch, Framework, Variant

__all__ = ["McpSdk"]

_PATH = "MCPServer.call_tool(name, json.loads(raw)) -> CallToolResult (server's run path)"


def _openai(tool: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.input_schema,
        },
    }


def _text(result: Any) -> str:
    if getattr(result, "is_error", False):
        raise AssertionError(f"mcp tool failed: {result.content}")
    return str(result.content[0].text)


def _invoker(server: Any, name: str) -> Callable[[str], Awaitable[Any]]:
    call_tool = server.call_tool

    async def invoke(raw: str) -> Any:
        return await call_tool(name, json.loads(raw))

    return invoke


class McpSdk(Framework):
    """``MCPServer.add_tool(fn)`` + ``MCPServer.call_tool``."""

    key: ClassVar[str] = "mcp"
    label: ClassVar[str] = "mcp SDK"
    dists: ClassVar[tuple[str, ...]] = ("mcp", "mcp-types")
    modules: ClassVar[tuple[str, ...]] = ("mcp",)
    sync_note: ClassVar[str] = "worker thread: anyio.to_thread"
    build_path: ClassVar[str] = "MCPServer(); server.add_tool(fn) per function"
    definitions_path: ClassVar[str] = (
        "await MCPServer.list_tools() -> OpenAI function dict per tool"
    )

    def _server(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("bench")
        for fn in fns:
            server.add_tool(fn)
        return server

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        kind = "sync" if variant.kind == "sync" else variant.kind
        fns = [*fresh_many("async", fillers, "filler"), fresh(kind, "join")]  # type: ignore[arg-type]
        return Dispatch(_invoker(self._server(fns), "join"), _text, _PATH)

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        return self._server(fns)

    async def first_call(self, built: Any, name: str) -> Callable[[], Awaitable[str]]:
        invoke = _invoker(built, name)

        async def call() -> str:
            return _text(await invoke(RAW_ARGS))

        return call

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        async def render() -> list[dict[str, Any]]:
            return [_openai(t) for t in await built.list_tools()]

        return render
