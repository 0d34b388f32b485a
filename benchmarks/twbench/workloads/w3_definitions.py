"""W3 definitions: OpenAI tool definitions of a built set, first render and repeated."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Series, no_gc, rotated
from twbench._tools import fresh_many
from twbench.frameworks import Framework
from twbench.workloads._common import error_row

__all__ = ["ID", "TITLE", "run"]

ID = "W3"
TITLE = "render OpenAI definitions"


def _name(definition: dict[str, Any]) -> str:
    fn = definition.get("function")
    if isinstance(fn, dict):
        return str(fn.get("name"))
    return str(definition.get("name"))


def _check(defs: list[dict[str, Any]], count: int, prefix: str, who: str) -> None:
    if len(defs) != count:
        raise AssertionError(f"{who} rendered {len(defs)} definitions, expected {count}")
    names = {_name(d) for d in defs}
    if f"{prefix}0" not in names or f"{prefix}{count - 1}" not in names:
        raise AssertionError(f"{who} definitions miss tool names: {sorted(names)[:3]}…")


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Time the first render after a build, then repeated renders, per framework."""
    outcome = Outcome(ID, TITLE)
    count = cfg.pick(1000, 20)
    rounds = cfg.rounds_for(3, 1)
    min_s = cfg.pick(0.05, 0.005)
    first = Table(f"{ID}-first", f"first render of {count:,} tools, ms", "ms", rounds=rounds)
    again = Table(f"{ID}-repeated", f"repeated render of {count:,} tools, ms", "ms", rounds=rounds)
    first_s: dict[str, Series] = {}
    again_s: dict[str, Series] = {}
    failed: set[str] = set()
    for r in range(rounds):
        for fw in rotated(list(frameworks), r):
            if fw.key in failed:
                continue
            prefix = f"d{r}_"
            try:
                built = fw.build(fresh_many("async", count, prefix))
                render = await fw.definitions(built)
                with no_gc():
                    t0 = time.perf_counter_ns()
                    defs = await render()
                    t1 = time.perf_counter_ns()
                _check(defs, count, prefix, fw.key)
                repeats = 0
                with no_gc():
                    t2 = t3 = time.perf_counter_ns()
                    while repeats < 3 or t3 - t2 < min_s * 1e9:
                        defs = await render()
                        repeats += 1
                        t3 = time.perf_counter_ns()
                _check(defs, count, prefix, fw.key)
            except NotImplementedError:
                failed.add(fw.key)
                continue
            except Exception as exc:
                failed.add(fw.key)
                first.rows.append(error_row(fw.key, fw.label, "render", exc, outcome))
                continue
            first_s.setdefault(fw.key, Series()).samples.append((t1 - t0) / 1e6)
            again_s.setdefault(fw.key, Series()).samples.append((t3 - t2) / 1e6 / repeats)
    for fw in frameworks:
        if fw.key in first_s:
            first.rows.append(Row(fw.key, fw.label, "first", fw.definitions_path, first_s[fw.key]))
            again.rows.append(
                Row(fw.key, fw.label, "repeated", fw.definitions_path, again_s[fw.key])
            )
    again.notes.append(
        f"Repeated: the mean of back-to-back renders of the same set, at least 3 and at least "
        f"{min_s * 1000:g} ms' worth, per round."
    )
    again.notes.append(
        "Peers that are MCP servers (mcp SDK, fastmcp) list their tools in MCP form; the "
        "benchmark maps each to the OpenAI function shape (one small dict per tool)."
    )
    outcome.tables.extend([first, again])
    tw = again.median("toolweave")
    best: tuple[str, float] | None = None
    for row in again.rows:
        if row.key in {"floor", "toolweave"} or row.series is None:
            continue
        if best is None or row.series.median < best[1]:
            best = (row.framework, row.series.median)
    if tw is not None and best is not None:
        speedup = best[1] / tw if tw > 0 else float("inf")
        outcome.targets.append(
            Target(
                "W3-repeated",
                "W3: repeated render ≥ 10× faster than the fastest peer",
                f"{speedup:,.0f}× faster than {best[0]} ({tw * 1000:.2f} µs vs {best[1]:.2f} ms)",
                speedup >= 10,
            )
        )
    return outcome
