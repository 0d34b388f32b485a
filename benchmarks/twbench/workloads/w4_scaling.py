"""W4 scaling: W1's async call with 10, 1,000 and 10,000 tools registered."""

from __future__ import annotations

from collections.abc import Sequence

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Case, Series, interleave, loop_of
from twbench._tools import RAW_ARGS
from twbench.frameworks import Dispatch, Framework, Variant
from twbench.workloads._common import error_row, pending_note, prepare

__all__ = ["ID", "TITLE", "run"]

ID = "W4"
TITLE = "scaling: W1 async with many tools registered"

_ASYNC = Variant("async", "async", "async tool")


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Per-call cost of the same tool in sets of growing size, interleaved."""
    outcome = Outcome(ID, TITLE)
    sizes = (10, 1_000, 10_000) if not cfg.quick else (10, 100)
    rounds = cfg.rounds_for(9, 2)
    target_s = 0.04 if not cfg.quick else 0.002
    tables = {
        n: Table(
            f"{ID}-{n}",
            f"async tool in a set of {n:,} tools, µs per call",
            "µs/call",
            rounds=rounds,
        )
        for n in sizes
    }
    cases: list[Case] = []
    rows: dict[str, Row] = {}
    dispatches: list[Dispatch] = []
    for fw in frameworks:
        for n in sizes:
            try:
                dispatch = await prepare(fw, _ASYNC, fillers=n - 1)
            except NotImplementedError:
                continue
            except Exception as exc:
                tables[n].rows.append(error_row(fw.key, fw.label, f"{n:,} tools", exc, outcome))
                continue
            dispatches.append(dispatch)
            row = Row(fw.key, fw.label, f"{n:,} tools", dispatch.path, note=pending_note(fw))
            tables[n].rows.append(row)
            rows[f"{fw.key}@{n}"] = row
            cases.append(Case(f"{fw.key}@{n}", loop_of(dispatch.invoke, RAW_ARGS)))
    try:
        results = await interleave(cases, rounds, target_s)
    finally:
        for dispatch in dispatches:
            await dispatch.close()
    for key, series in results.items():
        rows[key].series = series
    small, large = sizes[0], sizes[-1]
    scaling = Table(
        f"{ID}-scaling",
        f"cost at {large:,} tools over cost at {small:,}, per round",
        f"× {small}-tool cost",
        ref=None,
        rounds=rounds,
    )
    for fw in frameworks:
        lo, hi = results.get(f"{fw.key}@{small}"), results.get(f"{fw.key}@{large}")
        if lo is None or hi is None:
            continue
        per_round = Series([b / a for a, b in zip(lo.samples, hi.samples, strict=True)])
        scaling.rows.append(
            Row(
                fw.key,
                fw.label,
                f"{large:,} vs {small:,} tools",
                rows[f"{fw.key}@{large}"].path,
                per_round,
            )
        )
    scaling.notes.append(
        "Filler tools are distinct async tools registered before the measured one; the "
        "measured tool is the last registered."
    )
    outcome.tables.extend([*tables.values(), scaling])
    tw_small, tw_large = tables[small].median("toolweave"), tables[large].median("toolweave")
    if tw_small is not None and tw_large is not None:
        ratio = tw_large / tw_small
        outcome.targets.append(
            Target(
                "W4-scaling",
                f"W4: per-call cost at {large:,} tools within 1.1× of {small:,}",
                f"{ratio:.2f}× ({tw_large:.2f} vs {tw_small:.2f} µs)",
                ratio <= 1.1,
            )
        )
    return outcome
