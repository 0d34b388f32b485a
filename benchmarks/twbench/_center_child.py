"""W9's tools, and the other process of its flag-propagation measurement.

The parent (``twbench.workloads.w9_center``) and the child build the same tool set from
this module, so both register identical records with the shared center. The child is
started as ``python -c "...; from twbench._center_child import main; main()" DB ROUNDS``:
it opens the center stored at ``DB``, attaches a session, prints ``ready``, then polls the
session's listing in a tight loop and prints ``gone <time.time()> <error kind>`` when
:data:`TOOL` leaves it (the error kind is what a call to it answers then) and
``back <time.time()>`` when it returns; it exits after ``2 * ROUNDS`` such lines (or
after a minute).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from twbench._tools import fresh

__all__ = ["NOOP_RAW", "TOOL", "main", "noop", "toolset"]

TOOL = "noop"
"""The tool the parent disables and enables."""

NOOP_RAW = "{}"
"""The no-op tool's arguments as a model sends them."""

POLL_S = 0.0005
"""How long the child sleeps between two looks at its session's listing."""

DEADLINE_S = 60.0
"""The child gives up after this long."""


async def noop() -> str:
    """Do nothing."""
    return "ok"


def toolset() -> Any:
    """A set of the no-op tool and the suite's simple tool (``join``)."""
    from toolweave import ToolSetBuilder, tool

    builder = ToolSetBuilder()
    builder.add(tool(noop))
    builder.add(tool(fresh("async", "join")))
    return builder.build()


def _listed(session: Any) -> bool:
    return any(d["function"]["name"] == TOOL for d in session.definitions("openai"))


async def _follow(path: str, transitions: int) -> None:
    from toolweave.center import Center

    center = Center.open(path)
    session = toolset().session(reminders=False)
    center.attach(session, role=None)
    try:
        listed = _listed(session)
        print("ready", "listed" if listed else "hidden", flush=True)
        seen = session.listing_version
        deadline = time.monotonic() + DEADLINE_S
        while transitions > 0 and time.monotonic() < deadline:
            version = session.listing_version
            if version != seen:
                seen = version
                now_listed = _listed(session)
                if now_listed != listed:
                    at = time.time()
                    listed = now_listed
                    transitions -= 1
                    if listed:
                        print("back", repr(at), flush=True)
                    else:
                        result = await session.call(TOOL, NOOP_RAW, "call_1")
                        kind = "none" if result.error is None else result.error.kind.value
                        print("gone", repr(at), kind, flush=True)
            await asyncio.sleep(POLL_S)
    finally:
        await session.aclose()
        center.close()


def main() -> None:
    """The child's entry point: ``DB ROUNDS`` in ``sys.argv``."""
    path, rounds = sys.argv[1], int(sys.argv[2])
    asyncio.run(_follow(path, 2 * rounds))
