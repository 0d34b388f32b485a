"""W1 dispatch: µs per call of the simple and the realistic tool, async and sync; a host's
turn on a provider reply; state-writing calls. Every framework interleaved."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Case, interleave, loop_of
from twbench._tools import RAW_ARGS, TODO_RAW, TODO_RAW_NEXT, answer_for, raw_for, reply_for
from twbench.frameworks import Dispatch, Framework, Variant
from twbench.frameworks._base import host_loop_of
from twbench.frameworks._toolweave_full import HOST_NOTE
from twbench.frameworks.toolweave_ import CALL_ID
from twbench.workloads._common import check_answer, error_row, pending_note, prepare, profile

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W1"
TITLE = "dispatch: µs per call, raw JSON arguments in, model text out"

_PEERS_EXCLUDED = {"floor", "toolweave"}
_PACKS = Variant("async-packs", "async", "async tool, with the built-in packs", packs=True)


def _row_key(fw: Framework, variant_key: str) -> str:
    if fw.key == "toolweave" and variant_key != variant_key.split("-")[0]:
        return f"toolweave-{variant_key.split('-', 1)[1]}"
    return fw.key


def _host_batch(
    host: Callable[[dict[str, Any]], Awaitable[Any]],
) -> Callable[[int], Awaitable[None]]:
    reply = reply_for("join", "async", CALL_ID)

    async def batch(n: int) -> None:
        for _ in range(n):
            await host(reply)

    return batch


async def _check_host(dispatch: Dispatch, who: str) -> None:
    """The host loop answers one tool message with the call's id and the tool's text."""
    host = dispatch.host or host_loop_of(dispatch)
    out = await host(reply_for("join", "async", CALL_ID))
    if len(out) != 1 or out[0].get("tool_call_id") != CALL_ID or out[0].get("role") != "tool":
        raise AssertionError(f"{who} host loop answered {out!r}")
    check_answer(str(out[0].get("content")), f"{who} host loop")


class _FloorState:
    """The state-writing floor: what a todo list with a call counter must cost at least.

    ``todo_write``: pydantic validation, the list and its counter as JSON, one SQLite
    upsert + commit (WAL and ``synchronous=NORMAL``, as toolweave's store). The other
    call: W1's floor call and the counter bumped in memory (toolweave's todo reminder
    also counts in memory: the count is saved with the list's next save).
    """

    def __init__(self, invoke: Callable[[str], Awaitable[Any]]) -> None:
        from pydantic import TypeAdapter
        from toolweave_plan import TodoWriteArgs

        self.tmp = Path(tempfile.mkdtemp(prefix="twbench-floor-"))
        self.conn = sqlite3.connect(self.tmp / "state.db")
        self.conn.execute("PRAGMA journal_mode=WAL").fetchone()
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(
            "CREATE TABLE state (session TEXT, key TEXT, value TEXT, PRIMARY KEY (session, key))"
        )
        self.conn.commit()
        self.validate = TypeAdapter(TodoWriteArgs).validate_json
        self.invoke = invoke
        self.count = 0

    async def pair(self, n: int) -> None:
        conn, validate, invoke = self.conn, self.validate, self.invoke
        for i in range(n):
            args = validate(_TODOS[i % 2])
            self.count = 0
            value = json.dumps(
                {"todos": [t.model_dump() for t in args.todos], "calls_since_update": 0}
            )
            conn.execute("INSERT OR REPLACE INTO state VALUES ('s', 'plan.todos', ?)", (value,))
            conn.commit()
            await invoke(RAW_ARGS)
            self.count += 1

    def close(self) -> None:
        import shutil

        self.conn.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


_TODOS = (TODO_RAW, TODO_RAW_NEXT)


def _tw_pair(session: Any, first: str, first_raw: str) -> Callable[[int], Awaitable[None]]:
    call = session.call
    raws = _TODOS if first == "todo_write" else (first_raw, first_raw)

    async def batch(n: int) -> None:
        for i in range(n):
            await call(first, raws[i % 2], call_id="call_a")
            await call("join", RAW_ARGS, call_id="call_b")

    return batch


async def _state_rows(
    frameworks: Sequence[Framework], table: Table, outcome: Outcome
) -> tuple[list[Case], dict[str, Row], list[Callable[[], Awaitable[None]]]]:
    """The state-writing rows: the plan pack's ``todo_write``, then the host tool."""
    cases: list[Case] = []
    rows: dict[str, Row] = {}
    closers: list[Callable[[], Awaitable[None]]] = []
    floor = next((fw for fw in frameworks if fw.key == "floor"), None)
    tw = next((fw for fw in frameworks if fw.key == "toolweave"), None)
    if floor is not None:
        try:
            fd = await prepare(floor, Variant("async", "async", "async tool"))
            state = _FloorState(fd.invoke)
            await state.pair(1)
        except Exception as exc:
            table.rows.append(error_row("floor", floor.label, "state", exc, outcome))
        else:

            async def close_floor() -> None:
                state.close()

            closers.append(close_floor)
            rows["floor"] = Row(
                "floor",
                floor.label,
                "todo list saved, then a call counted",
                "TypeAdapter(TodoWriteArgs).validate_json + json.dumps + SQLite upsert + "
                "commit (WAL, synchronous=NORMAL); W1's floor call + a counter in memory",
            )
            cases.append(Case(f"{table.id}/floor", state.pair))
    if tw is None:
        return cases, rows, closers
    for key, variant, first, first_raw, what in (
        ("toolweave-todo", _PACKS, "todo_write", TODO_RAW, "todo_write, then the host tool"),
        ("toolweave-packs", _PACKS, "join", RAW_ARGS, "the host tool twice"),
        (
            "toolweave",
            Variant("async", "async", "async tool"),
            "join",
            RAW_ARGS,
            "the host tool twice, full path without the packs",
        ),
    ):
        try:
            dispatch = await prepare(tw, variant)
            session = dispatch.session
            written = await session.call(first, first_raw, call_id="check")
            if written.error is not None:
                raise AssertionError(f"{first} failed: {written.error}")
            check_answer(_plain(await session.call("join", RAW_ARGS, call_id="c")), key)
        except Exception as exc:
            table.rows.append(error_row(key, tw.label, what, exc, outcome))
            continue
        closers.append(dispatch.close)
        rows[key] = Row(
            key,
            tw.label,
            what,
            f"Session.call({first!r}, raw, call_id); Session.call('join', raw, call_id)"
            + (f"; {HOST_NOTE}" if variant.packs else "; reminders on (1 silent), SQLite store"),
        )
        cases.append(Case(f"{table.id}/{key}", _tw_pair(session, first, first_raw)))
    return cases, rows, closers


def _plain(result: Any) -> str:
    """The tool's own text: a reminder the packs append after a call is cut off."""
    if result.error is not None:
        raise AssertionError(f"toolweave call failed: {result.error}")
    return str(result.text).split("\n", 1)[0]


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Measure every framework's call paths in interleaved rounds."""
    outcome = Outcome(ID, TITLE)
    rounds = cfg.rounds_for(15, 2)
    target_s = 0.05 if not cfg.quick else 0.002
    tables = {
        "async": Table("W1-async", "async tool, µs per call", "µs/call", rounds=rounds),
        "sync": Table("W1-sync", "sync tool, µs per call", "µs/call", rounds=rounds),
        "rich": Table(
            "W1-rich",
            "realistic async tool (8 arguments: nested models, lists, enums, optionals, "
            "constraints), µs per call",
            "µs/call",
            rounds=rounds,
        ),
        "host": Table(
            "W1-host",
            "host loop: one provider reply (OpenAI chat message, one tool call) in, tool "
            "messages out, µs per reply",
            "µs/reply",
            rounds=rounds,
            ref="toolweave-packs",
        ),
        "state": Table(
            "W1-state",
            "state-writing calls: two calls of a host turn, µs per pair",
            "µs/pair",
            rounds=rounds,
            ref="floor",
        ),
    }
    cases: list[Case] = []
    rows: dict[str, Row] = {}
    dispatches: list[Dispatch] = []
    for fw in frameworks:
        for variant in fw.variants():
            table = tables[variant.kind if variant.kind in tables else "sync"]
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
            cases.append(Case(case_key, loop_of(dispatch.invoke, raw_for(variant.kind))))
            if fw.key == "toolweave" and variant.key == "async" and ID in cfg.profile:
                await profile("W1-toolweave-async", cases[-1].batch, 2000)
            if fw.key == "toolweave" and variant.key == "async-packs" and ID in cfg.profile:
                await profile("W1-toolweave-async-packs", cases[-1].batch, 2000)
            if variant.kind != "async" or variant.key == "async-bare":
                continue
            host = tables["host"]
            try:
                await _check_host(dispatch, f"{fw.key} {variant.key}")
            except Exception as exc:
                host.rows.append(error_row(key, fw.label, "host loop", exc, outcome))
                continue
            label = "reply with one call" + (", with the built-in packs" if variant.packs else "")
            host_path = dispatch.host_path or "by hand over the call path (host_loop_of)"
            host_row = Row(key, fw.label, label, host_path)
            host.rows.append(host_row)
            rows[f"{host.id}/{key}"] = host_row
            cases.append(
                Case(f"{host.id}/{key}", _host_batch(dispatch.host or host_loop_of(dispatch)))
            )
    state_cases, state_rows, closers = await _state_rows(frameworks, tables["state"], outcome)
    cases.extend(state_cases)
    for key, row in state_rows.items():
        tables["state"].rows.append(row)
        rows[f"{tables['state'].id}/{key}"] = row
    try:
        results = await interleave(cases, rounds, target_s)
    finally:
        for dispatch in dispatches:
            await dispatch.close()
        for close in closers:
            await close()
    for case_key, series in results.items():
        rows[case_key].series = series
    tables["async"].notes.append(
        "Each round runs every row once, in rotated order; a batch is calibrated to "
        f"≈{target_s * 1000:g} ms; the cyclic GC is on inside a batch (objects alive before "
        "the rounds are frozen). toolweave's calls carry a call id, as the peers' do."
    )
    tables["async"].notes.append(f"With the built-in packs: {HOST_NOTE}.")
    tables["rich"].notes.append(
        f"Arguments: `{raw_for('rich')}`; answer `{answer_for('rich')}`, checked for every "
        "framework before timing. The floor validates with a cached TypeAdapter of one "
        "model of the 8 fields."
    )
    tables["host"].notes.append(
        "The reply is a dict shaped like an OpenAI chat completion message with one tool "
        "call of the simple tool; each framework turns it into the tool messages a host "
        "appends, through its own path (the path column). Ratios are to toolweave with the "
        "built-in packs."
    )
    tables["state"].notes.append(
        "`todo_write` alternates two versions of a 3-item list, so each one changes what "
        "is stored. With the packs, the plan pack's todo reminder counts every call in the "
        "session's state (in memory: it runs after the call's state was saved). Ratios are to the floor, which saves the list with one SQLite upsert "
        "and commit and counts the other call in memory."
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
    """The W1 targets, judged on this run's medians: the full path (as before) and the
    host's path with the built-in packs."""
    targets: list[Target] = []
    floor = _median(async_table, "floor")
    peer = _fastest_peer(async_table)
    for key, name, what in (
        ("toolweave", "W1-async", "W1 async"),
        ("toolweave-packs", "W1-async-packs", "W1 async with the built-in packs"),
    ):
        tw = _median(async_table, key)
        if tw is not None and floor is not None:
            ratio = tw / floor
            targets.append(
                Target(
                    f"{name}-floor",
                    f"{what}: toolweave within 2.5× of the floor",
                    f"{ratio:.2f}× the floor ({tw:.2f} vs {floor:.2f} µs)",
                    ratio <= 2.5,
                )
            )
        if tw is not None and peer is not None:
            speedup = peer[1] / tw
            targets.append(
                Target(
                    f"{name}-peers",
                    f"{what}: toolweave ≥ 3× faster than the fastest peer",
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
