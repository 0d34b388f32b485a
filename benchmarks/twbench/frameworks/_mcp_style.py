"""The shape both MCP server frameworks share: tools added to a server object, called
through the server's own ``call_tool(name, arguments)``, listed by ``list_tools()``."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from twbench._tools import fresh, fresh_many
from twbench.frameworks._base import Dispatch, Framework, HostLoop, Variant, first_call_of

__all__ = ["MCPStyleServer"]


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


def _host(server: Any) -> HostLoop:
    call_tool = server.call_tool

    async def run(reply: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call in reply["tool_calls"]:
            fn = call["function"]
            result = await call_tool(fn["name"], json.loads(fn["arguments"]))
            out.append({"role": "tool", "tool_call_id": call["id"], "content": _text(result)})
        return out

    return run


_HOST_PATH = (
    "per tool call of the reply: server.call_tool(name, json.loads(arguments)) -> "
    "content text -> {role: tool, tool_call_id, content}"
)


class MCPStyleServer(Framework):
    """An in-process MCP server framework: subclasses say how to make the server."""

    call_path: ClassVar[str]
    """What a W1 call runs, for the tables."""

    def _server(self, fns: Sequence[Callable[..., Any]]) -> Any:
        """A server with ``fns`` added as tools."""
        raise NotImplementedError

    def _mcp_tool(self, listed: Any) -> Any:
        """The MCP ``Tool`` of one item of ``list_tools()``."""
        return listed

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        fns = [*fresh_many("async", fillers, "filler"), fresh(variant.kind, "join")]  # type: ignore[arg-type]
        server = self._server(fns)
        return Dispatch(
            _invoker(server, "join"),
            _text,
            self.call_path,
            host=_host(server),
            host_path=_HOST_PATH,
        )

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        return self._server(fns)

    async def first_call(
        self, built: Any, name: str, kind: str = "async"
    ) -> Callable[[], Awaitable[str]]:
        return first_call_of(_invoker(built, name), _text, kind)

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        async def render() -> list[dict[str, Any]]:
            return [_openai(self._mcp_tool(t)) for t in await built.list_tools()]

        return render
