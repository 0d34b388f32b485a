"""W2 build: register 1,000 distinct tools and build the set; retained memory; first call."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Sequence

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Series, no_gc, rotated
from twbench._tools import fresh_many
from twbench.frameworks import Framework
from twbench.workloads._common import check_answer, error_row

__all__ = ["ID", "TITLE", "run"]

ID = "W2"
TITLE = "build a set of distinct tools from scratch"


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Time building N tools, the first call after the build, and retained bytes per tool."""
    outcome = Outcome(ID, TITLE)
    count = cfg.pick(1000, 20)
    rounds = cfg.rounds_for(4, 1)
    build = Table(f"{ID}-build", f"build {count:,} tools, ms", "ms", rounds=rounds, ref="floor")
    first = Table(
        f"{ID}-first-call", "first call after the build, ms", "ms", rounds=rounds, ref="floor"
    )
    memory = Table(
        f"{ID}-memory",
        f"retained bytes per tool after building {count:,} (tracemalloc)",
        "bytes/tool",
        rounds=1,
        ref="floor",
    )
    build_s: dict[str, Series] = {}
    first_s: dict[str, Series] = {}
    failed: set[str] = set()
    for r in range(rounds):
        for fw in rotated(list(frameworks), r):
            if fw.key in failed:
                continue
            fns = fresh_many("async", count, f"t{r}_")
            name = fns[count // 2].__name__
            try:
                with no_gc():
                    t0 = time.perf_counter_ns()
                    built = fw.build(fns)
                    t1 = time.perf_counter_ns()
                call = await fw.first_call(built, name)
                with no_gc():
                    t2 = time.perf_counter_ns()
                    text = await call()
                    t3 = time.perf_counter_ns()
                check_answer(text, f"{fw.key} first call")
            except NotImplementedError:
                failed.add(fw.key)
                continue
            except Exception as exc:
                failed.add(fw.key)
                build.rows.append(error_row(fw.key, fw.label, "build", exc, outcome))
                continue
            build_s.setdefault(fw.key, Series()).samples.append((t1 - t0) / 1e6)
            first_s.setdefault(fw.key, Series()).samples.append((t3 - t2) / 1e6)
            del built, call
    for fw in frameworks:
        if fw.key in build_s:
            build.rows.append(Row(fw.key, fw.label, "build", fw.build_path, build_s[fw.key]))
            first.rows.append(
                Row(
                    fw.key,
                    fw.label,
                    f"first call of tool #{count // 2}",
                    "W1's call path",
                    first_s[fw.key],
                )
            )
    for fw in frameworks:
        if fw.key not in build_s:
            continue
        fns = fresh_many("async", count, "m_")
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            built = fw.build(fns)
            gc.collect()
            retained = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        memory.rows.append(
            Row(fw.key, fw.label, "after build", fw.build_path, Series([retained / count]))
        )
        del built
    build.notes.append(
        "Functions are created before the clock starts; the build of each framework is what "
        "its path column says. Ratios are to the floor (an eager pydantic validator per tool)."
    )
    first.notes.append(
        "One call per round on a freshly built set, through the same path as W1 (for toolweave "
        "this includes building the tool's validator lazily)."
    )
    outcome.tables.extend([build, first, memory])
    tw, floor = build.median("toolweave"), build.median("floor")
    if tw is not None and floor is not None:
        outcome.targets.append(
            Target(
                "W2-build",
                f"W2: building {count:,} tools faster than the floor",
                f"{tw:.0f} ms vs floor {floor:.0f} ms ({tw / floor:.2f}×)",
                tw < floor,
            )
        )
    tw_first = first.median("toolweave")
    if tw_first is not None:
        worst = first.row("toolweave")
        assert worst is not None
        assert worst.series is not None
        outcome.targets.append(
            Target(
                "W2-first-call",
                "W2: first call after the build under 1 ms",
                f"median {tw_first:.3f} ms (worst round {worst.series.hi:.3f} ms)",
                tw_first < 1.0,
            )
        )
    return outcome
