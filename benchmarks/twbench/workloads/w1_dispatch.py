"""W1 dispatch: µs per call of the one tool, async and sync, every framework interleaved."""

from __future__ import annotations

from collections.abc import Sequence

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Case, interleave, loop_of
from twbench._tools import RAW_ARGS
from twbench.frameworks import Dispatch, Framework
from twbench.workloads._common import error_row, pending_note, prepare, profile

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W1"
TITLE = "dispatch: µs per call, raw JSON arguments in, model text out"

_PEERS_EXCLUDED = {"floor", "toolweave"}


def _row_key(fw: Framework, variant_key: str) -> str:
    if fw.key == "toolweave" and variant_key != variant_key.split("-")[0]:
        return f"toolweave-{variant_key.split('-', 1)[1]}"
    return fw.key


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Measure every framework's async and sync call path in interleaved rounds."""
    outcome = Outcome(ID, TITLE)
    rounds = cfg.rounds_for(15, 2)
    target_s = 0.05 if not cfg.quick else 0.002
    tables = {
        "async": Table("W1-async", "async tool, µs per call", "µs/call", rounds=rounds),
        "sync": Table("W1-sync", "sync tool, µs per call", "µs/call", rounds=rounds),
    }
    cases: list[Case] = []
    rows: dict[str, Row] = {}
    dispatches: list[Dispatch] = []
    for fw in frameworks:
        for variant in fw.variants():
            table = tables["async" if variant.kind == "async" else "sync"]
            key = _row_key(fw, variant.key)
            try:
                dispatch = await prepare(fw, variant)
            except Exception as exc:
                table.rows.append(error_row(key, fw.label, variant.label, exc, outcome))
                continue
            dispatches.append(dispatch)
            row = Row(key, fw.label, variant.label, dispatch.path, note=pending_note(fw))
            table.rows.append(row)
            case_key = f"{table.id}/{key}"
            rows[case_key] = row
            cases.append(Case(case_key, loop_of(dispatch.invoke, RAW_ARGS)))
            if fw.key == "toolweave" and variant.key == "async" and ID in cfg.profile:
                await profile("W1-toolweave-async", cases[-1].batch, 2000)
    try:
        results = await interleave(cases, rounds, target_s)
    finally:
        for dispatch in dispatches:
            await dispatch.close()
    for case_key, series in results.items():
        rows[case_key].series = series
    tables["async"].notes.append(
        "Each round runs every row once, in rotated order; a batch is calibrated to "
        f"≈{target_s * 1000:g} ms; the cyclic GC is paused inside a batch (as timeit does)."
    )
    outcome.tables.extend(tables.values())
    outcome.targets.extend(judge(tables["async"], tables["sync"]))
    return outcome


def _fastest_peer(table: Table) -> tuple[str, float] | None:
    best: tuple[str, float] | None = None
    for row in table.rows:
        if row.key in _PEERS_EXCLUDED or row.key.startswith("toolweave"):
            continue
        if row.status != "ok" or row.series is None:
            continue
        if best is None or row.series.median < best[1]:
            best = (row.framework, row.series.median)
    return best


def _median(table: Table, key: str) -> float | None:
    return table.median(key)


def judge(async_table: Table, sync_table: Table) -> list[Target]:
    """The W1 targets, judged on this run's medians."""
    targets: list[Target] = []
    tw = _median(async_table, "toolweave")
    floor = _median(async_table, "floor")
    if tw is not None and floor is not None:
        ratio = tw / floor
        targets.append(
            Target(
                "W1-async-floor",
                "W1 async: toolweave within 2.5× of the floor",
                f"{ratio:.2f}× the floor ({tw:.2f} vs {floor:.2f} µs)",
                ratio <= 2.5,
            )
        )
    peer = _fastest_peer(async_table)
    if tw is not None and peer is not None:
        speedup = peer[1] / tw
        targets.append(
            Target(
                "W1-async-peers",
                "W1 async: toolweave ≥ 3× faster than the fastest peer",
                f"{speedup:.1f}× faster than {peer[0]} ({peer[1]:.1f} vs {tw:.2f} µs)",
                speedup >= 3,
            )
        )
    sync_peer = _fastest_peer(sync_table)
    for key, what in (
        ("toolweave", "blocking=False (inline)"),
        ("toolweave-thread", "blocking=True (worker thread)"),
    ):
        mine = _median(sync_table, key)
        if mine is None or sync_peer is None:
            continue
        targets.append(
            Target(
                f"W1-sync-{'inline' if key == 'toolweave' else 'thread'}",
                f"W1 sync, {what}: not slower than the fastest peer's sync path",
                f"{mine:.1f} µs vs {sync_peer[0]} {sync_peer[1]:.1f} µs "
                f"({sync_peer[1] / mine:.2f}× faster)",
                mine <= sync_peer[1],
            )
        )
    return targets
