"""Trace context crosses MCP both ways: a call to a remote tool carries the W3C
traceparent in ``params._meta``, and toolweave's server makes its spans children of it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import CallResult, Progress, ToolSetBuilder, tool
from toolweave.observe import TelemetryHook

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("mcp")

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SERVER = Path(__file__).parent / "servers" / "otel_server.py"


@tool(blocking=False)
def local_echo(text: str) -> str:
    """Repeat the text. Not for anything else.

    Args:
        text: What to repeat.
    """
    return text


def _server_spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


async def _wait_for(check: Callable[[], bool]) -> None:
    import anyio

    with anyio.fail_after(10):
        while not check():  # noqa: ASYNC110 - a file another process writes
            await anyio.sleep(0.02)


async def test_remote_calls_carry_the_trace_and_the_server_spans_are_children(
    otel: Any, tmp_path: Path
) -> None:
    """The host's execute_tool span of mcp__demo__echo (blocking) and of a streamed
    mcp__demo__countdown is the ancestor of the server's execute_tool span, in one trace."""
    from toolweave.mcp import MCPPool, ServerConfig

    spans_file = tmp_path / "server-spans.jsonl"
    builder = ToolSetBuilder()
    builder.add(local_echo)
    session = builder.build().session()
    TelemetryHook(tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider).attach(
        session
    )
    config = ServerConfig(
        command=sys.executable, args=[str(SERVER)], env={"SPANS": str(spans_file)}
    )
    async with MCPPool(session, {"demo": config}):
        assert (await session.call("mcp__demo__echo", {"text": "hi"}, "c1")).text == "hi"
        items = [i async for i in session.stream("mcp__demo__countdown", {"steps": 2})]
        assert isinstance(items[-1], CallResult)
        assert items[-1].ok
        assert any(isinstance(i, Progress) for i in items)
        server_names = ("execute_tool echo", "execute_tool countdown")
        await _wait_for(lambda: {s["name"] for s in _server_spans(spans_file)} >= set(server_names))

    mine = {s.name: s for s in otel.spans()}
    theirs = _server_spans(spans_file)
    by_id = {s["span_id"]: s for s in theirs}
    for client_name, server_name in zip(
        ("execute_tool mcp__demo__echo", "execute_tool mcp__demo__countdown"),
        server_names,
        strict=True,
    ):
        client = mine[client_name]
        assert client.attributes["gen_ai.tool.type"] == "extension"
        (server,) = [s for s in theirs if s["name"] == server_name]
        assert server["attributes"]["gen_ai.operation.name"] == "execute_tool"
        assert server["trace_id"] == client.context.trace_id
        # Up the server's chain (its MCP SDK span in between) to the remote parent.
        ancestor = server
        while ancestor["parent_id"] in by_id:
            ancestor = by_id[ancestor["parent_id"]]
        assert ancestor["parent_id"] == client.context.span_id


async def test_without_a_span_no_traceparent_is_made_up(tmp_path: Path) -> None:
    """A host without telemetry still calls the server; the server's span starts a trace
    of its own."""
    from toolweave.mcp import MCPPool, ServerConfig

    spans_file = tmp_path / "server-spans.jsonl"
    builder = ToolSetBuilder()
    builder.add(local_echo)
    session = builder.build().session()
    config = ServerConfig(
        command=sys.executable, args=[str(SERVER)], env={"SPANS": str(spans_file)}
    )
    async with MCPPool(session, {"demo": config}):
        assert (await session.call("mcp__demo__echo", {"text": "hi"})).ok
        await _wait_for(
            lambda: any(s["name"] == "execute_tool echo" for s in _server_spans(spans_file))
        )
    (server,) = [s for s in _server_spans(spans_file) if s["name"] == "execute_tool echo"]
    by_id = {s["span_id"]: s for s in _server_spans(spans_file)}
    ancestor = server
    while ancestor["parent_id"] in by_id:
        ancestor = by_id[ancestor["parent_id"]]
    assert ancestor["parent_id"] is None
