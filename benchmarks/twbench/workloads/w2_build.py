"""W2 build: register 1,000 distinct tools and build the set; the first call; retained
memory after the build and after a host's use (the listing and one call of every tool).
The simple and the realistic tool; toolweave also with the built-in packs loaded."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Series, collected, frozen_heap, rotated
from twbench._tools import Kind, answer_for, fresh_many
from twbench.frameworks import Framework
from twbench.workloads._common import check_answer, close_host, error_row, with_host

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W2"
TITLE = "build a set of distinct tools from scratch"

_KINDS: tuple[tuple[Kind, str, str], ...] = (
    ("async", "", "simple tool"),
    ("rich", "-rich", "realistic tool (8 arguments)"),
)


async def _timings(
    kind: Kind,
    count: int,
    rounds: int,
    frameworks: Sequence[Framework],
    build: Table,
    outcome: Outcome,
) -> tuple[dict[str, Series], dict[str, Series]]:
    """Build ``count`` tools of ``kind`` and make the first call, per round and framework."""
    build_s: dict[str, Series] = {}
    first_s: dict[str, Series] = {}
    failed: set[str] = set()
    for fw in frameworks:  # warm-up (untimed): imports and one-time caches, for every framework
        try:
            fns = fresh_many(kind, 2, "warm_")
            await (await fw.first_call(fw.build(fns), fns[0].__name__, kind))()
        except Exception:
            pass  # reported by the timed rounds
    gc.collect()
    gc.freeze()  # what the warm-up imported stays out of the collections that follow
    for r in range(rounds):
        for fw in rotated(list(frameworks), r):
            if fw.key in failed:
                continue
            fns = fresh_many(kind, count, f"t{r}_")
            name = fns[count // 2].__name__
            try:
                with collected():
                    t0 = time.perf_counter_ns()
                    built = fw.build(fns)
                    t1 = time.perf_counter_ns()
                call = await fw.first_call(built, name, kind)
                with collected():
                    t2 = time.perf_counter_ns()
                    text = await call()
                    t3 = time.perf_counter_ns()
                check_answer(text, f"{fw.key} first call", kind)
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
    return build_s, first_s


async def _retained(fw: Framework, kind: Kind, count: int, use: bool) -> float:
    """Bytes per tool retained after the build (and, with ``use``, after the listing and
    one call of every tool), by tracemalloc after ``gc.collect()``."""
    fns = fresh_many(kind, count, "m_")
    names = [fn.__name__ for fn in fns]
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        built = fw.build(fns)
        kept: Any = None
        if use:
            kept, texts = await fw.use_all(built, names, kind)
            expected = answer_for(kind)
            wrong = [t for t in texts if not t.startswith(expected)]
            if len(texts) != count or wrong:
                raise AssertionError(f"{fw.key} answered {wrong[:1]!r}, expected {expected!r}")
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    del built, kept
    return retained / count


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Time building N tools, the first call after the build, and retained bytes per tool."""
    outcome = Outcome(ID, TITLE)
    count = cfg.pick(1000, 20)
    rounds = cfg.rounds_for(4, 1)
    fws = with_host(frameworks)
    try:
        with frozen_heap():
            await _measure(cfg, count, rounds, fws, outcome)
    finally:
        await close_host(fws)
    return outcome


async def _measure(
    cfg: Config, count: int, rounds: int, fws: Sequence[Framework], outcome: Outcome
) -> None:
    """W2's tables, with the heap alive before them frozen (collections stay cheap)."""
    for kind, suffix, what in _KINDS:
        build = Table(
            f"{ID}-build{suffix}",
            f"build {count:,} tools, {what}, ms",
            "ms",
            rounds=rounds,
            ref="floor",
        )
        first = Table(
            f"{ID}-first-call{suffix}",
            f"first call after the build, {what}, ms",
            "ms",
            rounds=rounds,
            ref="floor",
        )
        build_s, first_s = await _timings(kind, count, rounds, fws, build, outcome)
        for fw in fws:
            if fw.key not in build_s:
                continue
            build.rows.append(Row(fw.key, fw.label, "build", fw.build_path, build_s[fw.key]))
            first.rows.append(
                Row(
                    fw.key,
                    fw.label,
                    f"first call of tool #{count // 2}",
                    "W1's call path" + (" (a new host session)" if "packs" in fw.key else ""),
                    first_s[fw.key],
                )
            )
        build.notes.append(
            "Functions are created before the clock starts; the build of each framework "
            "is what its path column says (with the built-in packs: discovering and "
            "loading them is part of the build, as in a host). Ratios are to the floor "
            "(an eager pydantic validator per tool)."
        )
        first.notes.append(
            "One call per round on a freshly built set, through the same path as W1 (for "
            "toolweave this includes building the tool's validator lazily, and with the "
            "packs the session's first state access)."
        )
        outcome.tables.extend([build, first])
        outcome.targets.extend(judge(build, first, count, what))
    memory = Table(
        f"{ID}-memory",
        f"retained bytes per tool, {count:,} simple tools (tracemalloc)",
        "bytes/tool",
        rounds=1,
        ref="floor",
    )
    for fw in fws:
        for use in (False, True):
            try:
                per_tool = await _retained(fw, "async", count, use)
            except NotImplementedError:
                break
            except Exception as exc:
                memory.rows.append(error_row(fw.key, fw.label, "memory", exc, outcome))
                break
            memory.rows.append(
                Row(
                    f"{fw.key}-used" if use else fw.key,
                    fw.label,
                    "after the listing and one call of every tool" if use else "after build",
                    (f"{fw.build_path}; then the OpenAI listing and one call of each tool")
                    if use
                    else fw.build_path,
                    Series([per_tool]),
                )
            )
    memory.notes.append(
        "After the build: what the built set retains. After use: the set plus what a host "
        "keeps after listing the OpenAI definitions once and calling every tool once "
        "(the session, the listing; lazily built validators and schemas). Ratios are to "
        "the floor after build."
    )
    outcome.tables.append(memory)


def judge(build: Table, first: Table, count: int, what: str) -> list[Target]:
    """The W2 targets for one kind of tool: toolweave alone and with the built-in packs."""
    targets: list[Target] = []
    floor = build.median("floor")
    suffix = "" if "simple" in what else "-rich"
    for key, label in (("toolweave", ""), ("toolweave-packs", " with the built-in packs")):
        tw = build.median(key)
        if tw is not None and floor is not None:
            targets.append(
                Target(
                    f"W2-build{suffix}{'-packs' if label else ''}",
                    f"W2{label}: building {count:,} tools ({what}) faster than the floor",
                    f"{tw:.0f} ms vs floor {floor:.0f} ms ({tw / floor:.2f}×)",
                    tw < floor,
                )
            )
        tw_first = first.median(key)
        row = first.row(key)
        if tw_first is not None and row is not None and row.series is not None:
            targets.append(
                Target(
                    f"W2-first-call{suffix}{'-packs' if label else ''}",
                    f"W2{label}: first call after the build ({what}) under 1 ms",
                    f"median {tw_first:.3f} ms (worst round {row.series.hi:.3f} ms)",
                    tw_first < 1.0,
                )
            )
    return targets
