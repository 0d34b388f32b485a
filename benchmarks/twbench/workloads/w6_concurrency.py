"""W6 concurrency: many concurrent calls of a tool that awaits 10 ms; wall time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Case, interleave
from twbench._tools import RAW_ARGS, SLEEP_S
from twbench.frameworks import Dispatch, Framework, Variant
from twbench.frameworks.toolweave_ import Toolweave
from twbench.workloads._common import check_answer, error_row, pending_note, prepare

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W6"
TITLE = "concurrency: concurrent calls of a tool that awaits 10 ms"

_SLEEP = Variant("sleep", "sleep", "async tool awaiting 10 ms")
_SLEEP_PACKS = Variant(
    "sleep-packs", "sleep", "async tool awaiting 10 ms, with the built-in packs", packs=True
)


def _starts(dispatch: Dispatch, width: int) -> Callable[[], list[Awaitable[Any]]]:
    """``width`` calls of the dispatch, each with its own call id when it is toolweave's
    (a host's concurrent calls carry distinct ids; the peers take none here)."""
    session = dispatch.session
    if session is None:
        invoke = dispatch.invoke
        return lambda: [invoke(RAW_ARGS) for _ in range(width)]
    call = session.call
    ids = [f"call_{i}" for i in range(width)]
    return lambda: [call("join", RAW_ARGS, call_id=i) for i in ids]


def _gather(starts: Callable[[], list[Awaitable[Any]]]) -> Callable[[int], Awaitable[None]]:
    async def batch(n: int) -> None:
        for _ in range(n):
            await asyncio.gather(*starts())

    return batch


async def _check_all(dispatch: Dispatch, width: int, who: str) -> None:
    results = await asyncio.gather(*_starts(dispatch, width)())
    for result in results:
        check_answer(dispatch.answer(result), who)


async def _many(
    frameworks: Sequence[Framework], width: int, table: Table, outcome: Outcome
) -> tuple[Dispatch, Row, Callable[[int], Awaitable[None]]] | None:
    """toolweave's batch API as an extra row, when the installed toolweave has it."""
    tw = next((fw for fw in frameworks if isinstance(fw, Toolweave)), None)
    if tw is None:
        return None
    try:
        dispatch = await tw.many(width, packs=True)
        if dispatch is None:
            return None
        check_answer(dispatch.answer(await dispatch.invoke(RAW_ARGS)), "toolweave call_many")
    except Exception as exc:
        table.rows.append(error_row("toolweave-many", tw.label, "call_many", exc, outcome))
        return None
    row = Row(
        "toolweave-many",
        tw.label,
        "same tool, one call_many batch, with the built-in packs",
        dispatch.path,
        note=pending_note(tw),
    )
    table.rows.append(row)

    async def batch(n: int) -> None:
        for _ in range(n):
            await dispatch.invoke(RAW_ARGS)

    return dispatch, row, batch


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Wall time of ``width`` concurrent calls started with ``asyncio.gather``."""
    outcome = Outcome(ID, TITLE)
    width = cfg.pick(1000, 100)
    rounds = cfg.rounds_for(9, 2)
    table = Table(
        ID,
        f"{width:,} concurrent calls of a tool that awaits {SLEEP_S * 1000:g} ms, wall ms "
        f"(ideal ≈ {SLEEP_S * 1000:g})",
        "ms",
        rounds=rounds,
    )
    cases: list[Case] = []
    rows: dict[str, Row] = {}
    dispatches: list[Dispatch] = []
    runs: list[tuple[Framework, str, Variant]] = []
    for fw in frameworks:
        runs.append((fw, fw.key, _SLEEP))
        if fw.key == "toolweave":
            runs.append((fw, "toolweave-packs", _SLEEP_PACKS))
    for fw, key, variant in runs:
        try:
            dispatch = await prepare(fw, variant)
            await _check_all(dispatch, width, key)
        except NotImplementedError:
            continue
        except Exception as exc:
            table.rows.append(error_row(key, fw.label, variant.label, exc, outcome))
            continue
        dispatches.append(dispatch)
        row = Row(
            key,
            fw.label,
            variant.label,
            f"asyncio.gather of {width:,} × [{dispatch.path}]"
            + (" (distinct call ids)" if dispatch.session is not None else ""),
            note=pending_note(fw),
        )
        table.rows.append(row)
        rows[key] = row
        cases.append(Case(key, _gather(_starts(dispatch, width)), n=1, scale=1e3))
    many = await _many(frameworks, width, table, outcome)
    if many is not None:
        dispatches.append(many[0])
        rows["toolweave-many"] = many[1]
        cases.append(Case("toolweave-many", many[2], n=1, scale=1e3))
    try:
        results = await interleave(cases, rounds, 0.0)
    finally:
        for dispatch in dispatches:
            await dispatch.close()
    for key, series in results.items():
        rows[key].series = series
    outcome.tables.append(table)
    outcome.targets.extend(judge(table, width))
    return outcome


def judge(table: Table, width: int) -> list[Target]:
    """The W6 targets: toolweave, and toolweave with the built-in packs, within 1.5× of
    the floor."""
    targets: list[Target] = []
    floor = table.median("floor")
    for key, label in (("toolweave", ""), ("toolweave-packs", " with the built-in packs")):
        tw = table.median(key)
        if tw is None or floor is None:
            continue
        targets.append(
            Target(
                f"W6-concurrency{'-packs' if label else ''}",
                f"W6{label}: {width:,} concurrent calls within 1.5× of the floor",
                f"{tw / floor:.2f}× ({tw:.1f} vs {floor:.1f} ms)",
                tw / floor <= 1.5,
            )
        )
    return targets
