"""W4 scaling: W1's async call with 10, 1,000 and 10,000 tools registered."""

from __future__ import annotations

from collections.abc import Sequence

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Case, Series, interleave, loop_of
from twbench._tools import RAW_ARGS
from twbench.frameworks import Dispatch, Framework, Variant
from twbench.workloads._common import error_row, pending_note, prepare

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W4"
TITLE = "scaling: W1 async with many tools registered"

_ASYNC = Variant("async", "async", "async tool")
_PACKS = Variant("async-packs", "async", "async tool, with the built-in packs", packs=True)


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
    runs: list[tuple[Framework, str, Variant]] = []
    for fw in frameworks:
        runs.append((fw, fw.key, _ASYNC))
        if fw.key == "toolweave":
            runs.append((fw, "toolweave-packs", _PACKS))
    for fw, key, variant in runs:
        what = " tools" + (", with the built-in packs" if variant.packs else "")
        for n in sizes:
            try:
                dispatch = await prepare(fw, variant, fillers=n - 1)
            except NotImplementedError:
                continue
            except Exception as exc:
                tables[n].rows.append(error_row(key, fw.label, f"{n:,}{what}", exc, outcome))
                continue
            dispatches.append(dispatch)
            row = Row(key, fw.label, f"{n:,}{what}", dispatch.path, note=pending_note(fw))
            tables[n].rows.append(row)
            rows[f"{key}@{n}"] = row
            cases.append(Case(f"{key}@{n}", loop_of(dispatch.invoke, RAW_ARGS)))
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
    for fw, key, variant in runs:
        lo, hi = results.get(f"{key}@{small}"), results.get(f"{key}@{large}")
        if lo is None or hi is None:
            continue
        per_round = Series([b / a for a, b in zip(lo.samples, hi.samples, strict=True)])
        scaling.rows.append(
            Row(
                key,
                fw.label,
                f"{large:,} vs {small:,} tools" + (", with the packs" if variant.packs else ""),
                rows[f"{key}@{large}"].path,
                per_round,
            )
        )
    scaling.notes.append(
        "Filler tools are distinct async tools registered before the measured one; the "
        "measured tool is the last registered. With the built-in packs, the packs' 17 tools "
        "come on top of the fillers."
    )
    outcome.tables.extend([*tables.values(), scaling])
    outcome.targets.extend(judge(tables[small], tables[large], small, large))
    return outcome


def judge(small_table: Table, large_table: Table, small: int, large: int) -> list[Target]:
    """The W4 target: per-call cost at the largest size within 1.1× of the smallest
    (toolweave alone and with the built-in packs)."""
    targets: list[Target] = []
    for key, label in (("toolweave", ""), ("toolweave-packs", " with the built-in packs")):
        lo, hi = small_table.median(key), large_table.median(key)
        if lo is None or hi is None:
            continue
        ratio = hi / lo
        targets.append(
            Target(
                f"W4-scaling{'-packs' if label else ''}",
                f"W4{label}: per-call cost at {large:,} tools within 1.1× of {small:,}",
                f"{ratio:.2f}× ({hi:.2f} vs {lo:.2f} µs)",
                ratio <= 1.1,
            )
        )
    return targets
