"""fastmcp: a ``FastMCP`` server's own tool-call path, in process."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from twbench._tools import fresh, fresh_many
from twbench.frameworks._base import Dispatch, Framework, Variant

__all__ = ["FastMCPServer"]

_PATH = (
    "FastMCP.call_tool(name, json.loads(raw)) -> ToolResult (server's run path, with middleware)"
)


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
    return str(result.content[0].text)


def _invoker(server: Any, name: str) -> Callable[[str], Awaitable[Any]]:
    call_tool = server.call_tool

    async def invoke(raw: str) -> Any:
        return await call_tool(name, json.loads(raw))

    return invoke


class FastMCPServer(Framework):
    """``FastMCP().tool(fn)`` + ``FastMCP.call_tool``."""

    key: ClassVar[str] = "fastmcp"
    label: ClassVar[str] = "fastmcp"
    dists: ClassVar[tuple[str, ...]] = ("fastmcp", "fastmcp-slim")
    modules: ClassVar[tuple[str, ...]] = ("fastmcp",)
    sync_note: ClassVar[str] = "worker thread"
    build_path: ClassVar[str] = "FastMCP(); server.tool(fn) per function"
    definitions_path: ClassVar[str] = (
        "await FastMCP.list_tools() -> tool.to_mcp_tool() -> OpenAI function dict per tool"
    )

    def _server(self, fns: Sequence[Callable[..., Any]]) -> Any:
        from fastmcp import FastMCP

        server = FastMCP("bench")
        for fn in fns:
            server.tool(fn)
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
            from twbench._tools import RAW_ARGS

            return _text(await invoke(RAW_ARGS))

        return call

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        async def render() -> list[dict[str, Any]]:
            return [_openai(t.to_mcp_tool()) for t in await built.list_tools()]

        return render
