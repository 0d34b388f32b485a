"""Batches: concurrent when every call is concurrency-safe, in order otherwise."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolSetBuilder
from toolweave.formats import ToolCall

pytestmark = pytest.mark.anyio

EVENTS: list[tuple[str, str]] = []


class Wait(BaseModel):
    """How long to take."""

    seconds: float = 0.0
    """Seconds."""
    tag: str = ""
    """A label for the event log."""


class Look(Tool[Wait, str]):
    """A read-only tool."""

    id = "look"
    kind = Kind.READ

    async def run(self, ctx: Context, args: Wait) -> str:
        """Log start and end around a sleep."""
        EVENTS.append(("start", args.tag))
        await anyio.sleep(args.seconds)
        EVENTS.append(("end", args.tag))
        return f"looked {args.tag}"


class Write(Tool[Wait, str]):
    """A tool that changes things (not concurrency-safe)."""

    id = "write"
    kind = Kind.WRITE

    async def run(self, ctx: Context, args: Wait) -> str:
        """Log start and end around a sleep."""
        EVENTS.append(("start", args.tag))
        await anyio.sleep(args.seconds)
        EVENTS.append(("end", args.tag))
        return f"wrote {args.tag}"


class Crash(Tool[Wait, str]):
    """A read-only tool that fails quickly."""

    id = "crash"
    kind = Kind.READ

    async def run(self, ctx: Context, args: Wait) -> str:
        """Fail after a short wait."""
        await anyio.sleep(args.seconds)
        raise RuntimeError("crashed on purpose")


class Exclusive(Tool[Wait, str]):
    """Read-only, but says it must not run alongside others."""

    id = "exclusive"
    kind = Kind.READ
    capabilities = Capabilities(concurrency_safe=False)

    async def run(self, ctx: Context, args: Wait) -> str:
        """Log start and end around a sleep."""
        EVENTS.append(("start", args.tag))
        await anyio.sleep(args.seconds)
        EVENTS.append(("end", args.tag))
        return "alone"


def session() -> Any:
    builder = ToolSetBuilder()
    builder.add_all([Look, Write, Crash, Exclusive])
    return builder.build().session()


def sequential(events: list[tuple[str, str]], tags: list[str]) -> bool:
    expected: list[tuple[str, str]] = []
    for tag in tags:
        expected += [("start", tag), ("end", tag)]
    return events == expected


async def test_ten_read_only_calls_run_concurrently() -> None:
    """Ten read-only calls take about as long as the slowest, not the sum; results keep
    call order."""
    EVENTS.clear()
    s = session()
    calls = [("look", {"seconds": 0.1 + 0.02 * i, "tag": str(i)}, f"c{i}") for i in range(10)]
    started = time.monotonic()
    results = await s.call_many(calls)
    wall = time.monotonic() - started
    slowest, total = 0.28, sum(0.1 + 0.02 * i for i in range(10))
    assert wall < slowest + 0.2 < total
    assert [r.text for r in results] == [f"looked {i}" for i in range(10)]
    assert [r.call_id for r in results] == [f"c{i}" for i in range(10)]
    assert not sequential(EVENTS, [str(i) for i in range(10)])


async def test_a_batch_with_a_write_runs_in_order() -> None:
    """One call that is not concurrency-safe makes the whole batch sequential, in order."""
    EVENTS.clear()
    s = session()
    calls = [
        ("look", {"seconds": 0.05, "tag": "a"}),
        ("write", {"seconds": 0.01, "tag": "b"}),
        ("look", {"seconds": 0.0, "tag": "c"}),
    ]
    results = await s.call_many(calls)
    assert [r.text for r in results] == ["looked a", "wrote b", "looked c"]
    assert sequential(EVENTS, ["a", "b", "c"])


async def test_a_tool_can_opt_out_of_concurrency() -> None:
    """A read-only tool declaring concurrency_safe=False makes its batch sequential."""
    EVENTS.clear()
    s = session()
    await s.call_many([("look", {"seconds": 0.03, "tag": "a"}), ("exclusive", {"tag": "b"})])
    assert sequential(EVENTS, ["a", "b"])


async def test_a_failing_call_never_cancels_its_siblings() -> None:
    """A call that fails early leaves the others running to completion."""
    s = session()
    results = await s.call_many(
        [
            ("look", {"seconds": 0.1, "tag": "slow"}),
            ("crash", {"seconds": 0.01}),
            ("nope", {}),
            ("look", {"seconds": "not a number"}),
            ("look", {"seconds": 0.05, "tag": "other"}),
        ]
    )
    assert [r.ok for r in results] == [True, False, False, False, True]
    kinds = [r.error.kind for r in results if r.error is not None]
    assert kinds == [ErrorKind.EXECUTION_ERROR, ErrorKind.NOT_FOUND, ErrorKind.INVALID_PARAMS]
    assert results[0].text == "looked slow"


async def test_call_shapes_and_limit() -> None:
    """Calls may be tuples, mappings or ToolCall objects; `limit` caps concurrency."""
    EVENTS.clear()
    s = session()
    started = time.monotonic()
    results = await s.call_many(
        [
            ToolCall("look", {"seconds": 0.05, "tag": "1"}, "x1"),
            {"name": "look", "arguments": '{"seconds": 0.05, "tag": "2"}', "id": "x2"},
            ("look", {"seconds": 0.05, "tag": "3"}),
        ],
        limit=1,
    )
    assert time.monotonic() - started >= 0.15
    assert [r.call_id for r in results] == ["x1", "x2", None]
    assert sequential(EVENTS, ["1", "2", "3"])
    assert await s.call_many([]) == []
    (bad,) = await s.call_many([42])
    assert bad.error is not None
    assert bad.error.kind == ErrorKind.INVALID_PARAMS
    assert bad.text.startswith("not a tool call")


async def test_cancelling_the_batch_cancels_and_awaits_its_calls() -> None:
    """A caller cancelled during a concurrent batch gets control back only after every
    call in flight was cancelled and unwound; calls that finished at once are done."""
    EVENTS.clear()
    s = session()
    calls: list[Any] = [("look", {"seconds": 0, "tag": "quick"})]
    calls += [("look", {"seconds": 30, "tag": f"slow{i}"}, f"s{i}") for i in range(3)]
    started = time.monotonic()
    with anyio.move_on_after(0.2) as scope:
        await s.call_many(calls)
    assert scope.cancelled_caught
    assert time.monotonic() - started < 2
    assert ("end", "quick") in EVENTS
    assert sorted(t for e, t in EVENTS if e == "start") == ["quick", "slow0", "slow1", "slow2"]
    assert not any(t.startswith("slow") for e, t in EVENTS if e == "end")
    assert s.running == []
