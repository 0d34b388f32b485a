"""Whatever a caller sends, calls end in a typed result and never raise."""

from __future__ import annotations

import json
from collections import UserDict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from toolweave import (
    CallResult,
    Context,
    ErrorKind,
    Kind,
    Progress,
    Session,
    Tool,
    ToolSetBuilder,
)
from toolweave.catalog import external_tool

pytestmark = pytest.mark.anyio

DEPTH = 100_000


class Args(BaseModel):
    """Arguments with a scalar, so deep data is invalid wherever it goes."""

    n: int = 0
    """A number."""


class Plain(Tool[Args, str]):
    """Returns its number after one suspension."""

    id = "plain"
    kind = Kind.READ

    async def run(self, ctx: Context, args: Args) -> str:
        """Echo ``n``."""
        await anyio.lowlevel.checkpoint()
        return f"n={args.n}"


class Streamed(Tool[Args, str]):
    """The same as a streaming tool."""

    id = "streamed"
    kind = Kind.READ

    async def stream(self, ctx: Context, args: Args) -> AsyncIterator[Progress | str]:
        """One progress item, then ``n``."""
        yield Progress("working")
        yield f"n={args.n}"


async def _echo(ctx: Any, arguments: dict[str, Any]) -> str:
    return json.dumps(arguments)


def _nested_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def _nested_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        child: dict[str, Any] = {}
        node["a"] = child
        node = child
    return root


DEEP_TEXT = '{"n": ' + "[" * DEPTH + "]" * DEPTH + "}"
DEEP_ARGUMENTS: dict[str, Any] = {
    "str": DEEP_TEXT,
    "bytes": DEEP_TEXT.encode(),
    "dict": {"n": _nested_list(DEPTH)},
    "dict of dicts": {"n": _nested_dict(DEPTH)},
}


class RaisingMapping(UserDict[str, Any]):
    """A mapping whose keys and iteration raise."""

    def keys(self) -> Any:
        """Raise."""
        raise RuntimeError("keys exploded")

    def __iter__(self) -> Any:
        """Raise."""
        raise RuntimeError("iteration exploded")


def _sessions(tmp_path: Path) -> dict[str, Session]:
    """The same tools plain, with a renamed parameter, and as a JSON-only tool."""
    builder = ToolSetBuilder()
    builder.add_all([Plain, Streamed])
    builder.add(
        external_tool(
            id="json_only",
            namespace="ext",
            description="Echo.",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
            call=_echo,
        )
    )
    plain = builder.build().session(workspace=tmp_path)
    renamed = builder.build(
        {
            "tools": [
                {"id": "plain", "rename": {"n": "num"}},
                {"id": "streamed", "rename": {"n": "num"}},
                "json_only",
            ]
        }
    ).session(workspace=tmp_path)
    return {"plain": plain, "renamed": renamed}


def _rekey(arguments: Any, flavour: str) -> Any:
    """``arguments`` with ``n`` spelled as the renamed entries want it."""
    if flavour != "renamed":
        return arguments
    if isinstance(arguments, dict):
        return {"num": arguments["n"]}
    if isinstance(arguments, bytes):
        return arguments.replace(b'"n"', b'"num"', 1)
    assert isinstance(arguments, str)
    return arguments.replace('"n"', '"num"', 1)


def _assert_refused(result: CallResult, kind: ErrorKind = ErrorKind.INVALID_PARAMS) -> None:
    assert result.error is not None, result.text
    assert result.error.kind == kind, result.text
    assert 0 < len(result.text) < 1_000


async def _stream_result(session: Session, name: Any, arguments: Any) -> CallResult:
    async with session.stream(name, arguments, "s1") as items:
        got = [item async for item in items]
    last = got[-1]
    assert isinstance(last, CallResult)
    return last


@pytest.mark.parametrize("flavour", ["plain", "renamed"])
@pytest.mark.parametrize("shape", list(DEEP_ARGUMENTS))
async def test_deeply_nested_arguments_are_invalid_params_everywhere(
    tmp_path: Path, flavour: str, shape: str
) -> None:
    """10^5 levels of nesting (JSON text, bytes, dicts; plain and renamed entries) give
    invalid_params through call, stream and call_many, and the session works on."""
    session = _sessions(tmp_path)[flavour]
    arguments = _rekey(DEEP_ARGUMENTS[shape], flavour)
    calls = {"plain": arguments, "streamed": arguments, "json_only": DEEP_ARGUMENTS[shape]}
    for name, given in calls.items():
        _assert_refused(await session.call(name, given, "c1"))
        _assert_refused(await _stream_result(session, name, given))
    batch = await session.call_many(
        [("plain", arguments, "b1"), ("json_only", calls["json_only"], "b2")]
    )
    for result in batch:
        _assert_refused(result)
    ok = await session.call("plain", {"num" if flavour == "renamed" else "n": 3}, "c2")
    assert ok.text == "n=3"


@pytest.mark.parametrize("flavour", ["plain", "renamed"])
async def test_a_mapping_that_raises_is_invalid_params(tmp_path: Path, flavour: str) -> None:
    """A mapping whose keys or iteration raise is refused with what went wrong."""
    session = _sessions(tmp_path)[flavour]
    for name in ("plain", "streamed", "json_only"):
        result = await session.call(name, RaisingMapping(), "c1")
        _assert_refused(result)
        assert "exploded" in result.text
        _assert_refused(await _stream_result(session, name, RaisingMapping()))


@pytest.mark.parametrize("name", [["plain"], {"plain": 1}, {"plain"}, b"plain", None, 7])
async def test_names_that_are_not_strings_are_not_found(tmp_path: Path, name: Any) -> None:
    """Unhashable and other non-string names are not_found, through every entry point."""
    session = _sessions(tmp_path)["plain"]
    _assert_refused(await session.call(name, {}, "c1"), ErrorKind.NOT_FOUND)
    _assert_refused(await _stream_result(session, name, {}), ErrorKind.NOT_FOUND)
    results = await session.call_many([(name, {}, "b1"), ("plain", {"n": 1}, "b2")])
    _assert_refused(results[0], ErrorKind.NOT_FOUND)
    assert results[1].text == "n=1"


async def test_unhashable_call_ids_still_run_the_call(tmp_path: Path) -> None:
    """A call id that cannot key a dict leaves the call uncancellable, not failed."""
    session = _sessions(tmp_path)["plain"]
    result = await session.call("plain", {"n": 2}, ["odd"])  # type: ignore[arg-type]
    assert result.text == "n=2"
    assert session.running == []


async def test_run_tool_calls_survives_hostile_replies(tmp_path: Path) -> None:
    """Deep arguments and unhashable names in a model reply become error results."""
    session = _sessions(tmp_path)["plain"]
    openai = {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "plain", "arguments": DEEP_TEXT}},
            {"id": "c2", "type": "function", "function": {"name": ["plain"], "arguments": "{}"}},
            {"id": "c3", "type": "function", "function": {"name": "plain", "arguments": "{}"}},
        ],
    }
    messages = await session.run_tool_calls(openai, provider="openai")
    assert [m["tool_call_id"] for m in messages] == ["c1", "c2", "c3"]
    assert messages[0]["content"].startswith("invalid_params: Invalid arguments for plain")
    assert messages[1]["content"].startswith("not_found: Tool names are strings")
    assert messages[2]["content"] == "n=0"
    anthropic = {
        "content": [
            {"type": "tool_use", "id": "t1", "name": "plain", "input": DEEP_ARGUMENTS["dict"]},
            {"type": "tool_use", "id": "t2", "name": {"x": 1}, "input": {}},
        ]
    }
    (reply,) = await session.run_tool_calls(anthropic, provider="anthropic")
    blocks = reply["content"]
    assert [b["is_error"] for b in blocks] == [True, True]
    assert "`n`" in blocks[0]["content"]


async def test_malformed_batch_entries_become_invalid_params_results(tmp_path: Path) -> None:
    """Entries that are no tool call at all fail alone; the others run, in order."""
    session = _sessions(tmp_path)["plain"]
    results = await session.call_many(
        [
            ("plain",),  # type: ignore[list-item]
            {"arguments": {}},
            object(),  # type: ignore[list-item]
            ("plain", {"n": 4}, "ok"),
        ]
    )
    assert [r.error.kind if r.error else None for r in results] == [
        ErrorKind.INVALID_PARAMS,
        ErrorKind.INVALID_PARAMS,
        ErrorKind.INVALID_PARAMS,
        None,
    ]
    assert results[3].text == "n=4"
    assert "not a tool call" in results[0].text
