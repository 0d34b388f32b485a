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

__all__ = ["ID", "TITLE", "run"]

ID = "W6"
TITLE = "concurrency: concurrent calls of a tool that awaits 10 ms"

_SLEEP = Variant("sleep", "sleep", "async tool awaiting 10 ms")


def _gather(
    invoke: Callable[[str], Awaitable[Any]], width: int
) -> Callable[[int], Awaitable[None]]:
    async def batch(n: int) -> None:
        for _ in range(n):
            await asyncio.gather(*[invoke(RAW_ARGS) for _ in range(width)])

    return batch


async def _check_all(dispatch: Dispatch, width: int, who: str) -> None:
    results = await asyncio.gather(*[dispatch.invoke(RAW_ARGS) for _ in range(width)])
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
        dispatch = await tw.many(width)
        if dispatch is None:
            return None
        check_answer(dispatch.answer(await dispatch.invoke(RAW_ARGS)), "toolweave call_many")
    except Exception as exc:
        table.rows.append(error_row("toolweave-many", tw.label, "call_many", exc, outcome))
        return None
    row = Row(
        "toolweave-many",
        tw.label,
        "same tool, one call_many batch",
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
    for fw in frameworks:
        try:
            dispatch = await prepare(fw, _SLEEP)
            await _check_all(dispatch, width, fw.key)
        except NotImplementedError:
            continue
        except Exception as exc:
            table.rows.append(error_row(fw.key, fw.label, _SLEEP.label, exc, outcome))
            continue
        dispatches.append(dispatch)
        row = Row(
            fw.key,
            fw.label,
            _SLEEP.label,
            f"asyncio.gather of {width:,} × [{dispatch.path}]",
            note=pending_note(fw),
        )
        table.rows.append(row)
        rows[fw.key] = row
        cases.append(Case(fw.key, _gather(dispatch.invoke, width), n=1, scale=1e3))
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
    tw, floor = table.median("toolweave"), table.median("floor")
    if tw is not None and floor is not None:
        outcome.targets.append(
            Target(
                "W6-concurrency",
                "W6: within 1.5× of the floor",
                f"{tw / floor:.2f}× ({tw:.1f} vs {floor:.1f} ms)",
                tw / floor <= 1.5,
            )
        )
    return outcome
