"""W8 call hooks and sessions: what a hook adds to a call; what a session costs."""

from __future__ import annotations

import functools
import gc
import itertools
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Case, Series, interleave, loop_of
from twbench._tools import RAW_ARGS, fresh
from twbench.frameworks import Framework
from twbench.frameworks._toolweave_full import HOST_NOTE, Setup
from twbench.workloads._common import prepare

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W8"
TITLE = "call hooks and sessions: µs a no-op hook adds to a call; cost of a session"

VARIANTS = (("before", 0), ("before", 1), ("before", 5), ("all", 1), ("all", 5))
"""(the steps each hook overrides, how many hooks)."""


def _text(result: Any) -> str:
    if result.error is not None:
        raise AssertionError(f"toolweave call failed: {result.error}")
    return str(result.text)


def _noop_hook(steps: str) -> Any:
    """A hook whose ``before`` step (``steps="before"``), or whose ``admit``, ``before``
    and ``after`` steps (``steps="all"``), do nothing: what the hook machinery costs."""
    from toolweave import CallHook

    class Before(CallHook):
        def before(self, call: Any) -> None:
            return None

    class Every(Before):
        def admit(self, call: Any) -> None:
            return None

        def after(self, call: Any, result: Any) -> None:
            return None

    return Before() if steps == "before" else Every()


def _toolset() -> Any:
    from toolweave import ToolSetBuilder, tool

    builder = ToolSetBuilder()
    builder.add(tool(fresh("async", "join")))
    return builder.build()


def _key(steps: str, count: int) -> str:
    return "toolweave-0" if count == 0 else f"toolweave-{count}-{steps}"


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Time calls with no-op hooks next to the floor; time and weigh sessions."""
    outcome = Outcome(ID, TITLE)
    rounds = cfg.rounds_for(15, 2)
    target_s = 0.05 if not cfg.quick else 0.002
    hooks = Table("W8-hooks", "async tool with call hooks, µs per call", "µs/call", rounds=rounds)
    hooks.ref = "toolweave-0"
    cases: list[Case] = []
    rows: dict[str, Row] = {}
    floor = next((fw for fw in frameworks if fw.key == "floor"), None)
    closers: list[Any] = []
    if floor is not None:
        variant = next(v for v in floor.variants() if v.kind == "async")
        dispatch = await prepare(floor, variant)
        closers.append(dispatch.close)
        rows["floor"] = Row("floor", floor.label, variant.label, dispatch.path)
        cases.append(Case("floor", loop_of(dispatch.invoke, RAW_ARGS)))
    from toolweave import tool

    toolset = _toolset()
    for steps, count in VARIANTS:
        session = toolset.session(reminders=False, hooks=[_noop_hook(steps) for _ in range(count)])
        invoke = functools.partial(session.call, "join")
        _text(await invoke(RAW_ARGS))
        what = "admit, before and after" if steps == "all" else "before"
        label = f"{count} no-op hook{'s' if count != 1 else ''}"
        key = _key(steps, count)
        rows[key] = Row(
            key,
            "toolweave",
            label if count == 0 else f"{label} ({what})",
            f"Session.call(name, raw JSON); reminders off; {count} hooks overriding {what}",
        )
        cases.append(Case(key, loop_of(invoke, RAW_ARGS)))
    setup = Setup(packs=True)
    closers.append(setup.close)
    builder = setup.builder()
    builder.add(tool(fresh("async", "join")))
    packs_set = setup.build(builder)
    packs_session = setup.session(packs_set)
    invoke = functools.partial(packs_session.call, "join", call_id="call_1")
    _text(await invoke(RAW_ARGS))
    rows["toolweave-packs"] = Row(
        "toolweave-packs",
        "toolweave",
        "with the built-in packs: their hooks (plan-mode hook, plan mode off) only",
        f"Session.call(name, raw JSON, call_id); {HOST_NOTE}",
    )
    cases.append(Case("toolweave-packs", loop_of(invoke, RAW_ARGS)))
    observe_notes = await _observe_cases(toolset, setup.tmpdir(), rows, cases, closers)
    try:
        results = await interleave(cases, rounds, target_s)
    finally:
        for close in closers:
            await close()
    for key, series in results.items():
        rows[key].series = series
    hooks.rows.extend(rows.values())
    hooks.notes.append(
        "A no-op hook overrides one step (before) or three (admit, before, after), each a "
        "plain function returning None."
    )
    hooks.notes.extend(observe_notes)
    outcome.tables.append(hooks)
    sessions = _sessions(toolset, 10_000 if not cfg.quick else 1_000)
    await _packs_sessions(sessions, 1_000 if not cfg.quick else 100)
    outcome.tables.append(sessions)
    outcome.targets.extend(judge(hooks))
    return outcome


OBSERVE = ("limits", "otel-api", "otel-sdk", "limits+otel", "rules", "rules+limits+otel")
"""The observe rows: rate limits on an SQLite file; the telemetry hook with the
OpenTelemetry API only (no SDK configured), with the SDK; both; permission rules
(toolweave.policy); rules, rate limits and telemetry together."""


class _NullExporter:
    """A span exporter that drops what it gets (the SDK's work, no I/O)."""

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


async def _observe_cases(
    toolset: Any, folder: Any, rows: dict[str, Row], cases: list[Case], closers: list[Any]
) -> list[str]:
    """Rows for toolweave.observe's hooks on the dispatch path (W1's call, no center):
    a rate limit counted in an SQLite file, the telemetry hook with and without the
    OpenTelemetry SDK, and both; the notes say what is missing."""
    notes = [
        "Observe rows: limits = RateLimiter(<SQLite file>, per_session and per_tool "
        "'100/minute', an injected clock moving 1 s per call: each counter holds its last 60 "
        "calls, none refused).attach(session): one BEGIN IMMEDIATE transaction per call "
        "(2 counts, 2 inserts, commit; WAL, synchronous=NORMAL); otel-api = "
        "TelemetryHook() with no SDK configured (the API's no-op tracer and meter); otel-sdk = "
        "TelemetryHook(tracer_provider=SDK TracerProvider with a BatchSpanProcessor into an "
        "exporter that drops spans, meter_provider=SDK MeterProvider with an in-memory reader).",
        "rules = attach_policy(session, {allow: [join], deny: [bash(rm *)]}): the call "
        "matches an allow rule by name (PolicyHook's before step).",
    ]
    from toolweave.observe import RateLimiter, TelemetryHook

    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        notes.append("otel rows skipped: the OpenTelemetry SDK is not installed (toolweave[otel])")
        return notes
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_NullExporter()))  # type: ignore[arg-type]
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    limiter: Any = None
    # A steady state, not a flood: the injected clock moves 1 s per call, so each counter
    # holds the last 60 calls (a sliding-window log costs what its window holds).
    spec = {"per_session": "100/minute", "per_tool": {"join": "100/minute"}}
    clock = functools.partial(next, itertools.count(1_700_000_000_000, 1000))

    async def close() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()
        if limiter is not None:
            limiter.close()

    closers.append(close)
    for kind in OBSERVE:
        session = toolset.session(reminders=False)
        if "limits" in kind:
            try:
                if limiter is None:
                    limiter = RateLimiter(folder / "observe-center.db", spec, clock=clock)
                limiter.attach(session, role=None)
            except Exception as exc:
                notes.append(f"limits rows skipped: {exc}")
                continue
        if "rules" in kind:
            from toolweave.policy import attach_policy

            attach_policy(session, {"allow": ["join"], "deny": ["bash(rm *)"]})
        if kind == "otel-api":
            TelemetryHook().attach(session)
        elif "otel" in kind:
            TelemetryHook(tracer_provider=tracer_provider, meter_provider=meter_provider).attach(
                session
            )
        invoke = functools.partial(session.call, "join", call_id="call_1")
        _text(await invoke(RAW_ARGS))
        key = f"toolweave-{kind}"
        rows[key] = Row(
            key,
            "toolweave",
            {
                "limits": "rate limits (SQLite file)",
                "otel-api": "telemetry hook, OpenTelemetry API only",
                "otel-sdk": "telemetry hook, OpenTelemetry SDK",
                "limits+otel": "rate limits (SQLite) + telemetry (SDK)",
                "rules": "permission rules (an allow rule by name)",
                "rules+limits+otel": "permission rules + rate limits (SQLite) + telemetry (SDK)",
            }[kind],
            f"Session.call(name, raw JSON, call_id); reminders off; toolweave.observe: {kind}",
        )
        cases.append(Case(key, loop_of(invoke, RAW_ARGS)))
    return notes


def _weigh(make: Callable[[], Any], n: int) -> tuple[float, int, list[Any]]:
    """Make ``n`` sessions under tracemalloc: seconds, bytes they hold, the sessions."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    kept = [make() for _ in range(n)]
    elapsed = time.perf_counter() - started
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return elapsed, held, kept


def _sessions(toolset: Any, n: int) -> Table:
    """Create ``n`` idle sessions on one set: µs per session, KB each holds."""
    table = Table("W8-sessions", "sessions on one tool set", "", rounds=1)
    table.ref = None
    elapsed, held, kept = _weigh(lambda: toolset.session(reminders=False), n)
    del kept
    table.rows.append(
        Row(
            "create",
            "toolweave",
            "create a session, µs",
            f"ToolSet.session() x {n:,} (tracemalloc on), µs per session",
            Series([elapsed / n * 1e6]),
        )
    )
    table.rows.append(
        Row(
            "memory",
            "toolweave",
            "memory an idle session holds, KB",
            f"tracemalloc over {n:,} idle sessions on one set, KB per session",
            Series([held / n / 1024]),
        )
    )
    return table


async def _packs_sessions(table: Table, n: int) -> None:
    """Create ``n`` idle host sessions on a set with the built-in packs (their
    ``provide_resources`` and call hooks run per session): µs per session, KB each holds."""
    from toolweave import tool

    setup = Setup(packs=True)
    try:
        builder = setup.builder()
        builder.add(tool(fresh("async", "join")))
        packs_set = setup.build(builder)
        workspace = setup.tmpdir()
        elapsed, held, kept = _weigh(lambda: packs_set.session(workspace=workspace), n)
        for one in kept:
            await one.aclose()
        del kept
    finally:
        await setup.close()
    table.rows.append(
        Row(
            "create-packs",
            "toolweave",
            "create a session with the built-in packs, µs",
            f"ToolSet.session(workspace=...) x {n:,} on a set with the 4 built-in packs "
            "(tracemalloc on), µs per session",
            Series([elapsed / n * 1e6]),
        )
    )
    table.rows.append(
        Row(
            "memory-packs",
            "toolweave",
            "memory an idle session with the built-in packs holds, KB",
            f"tracemalloc over {n:,} idle sessions on that set, KB per session",
            Series([held / n / 1024]),
        )
    )


def judge(table: Table) -> list[Target]:
    """Each no-op hook adds at most 10 % of the floor's time per call: judged on five
    one-step hooks (their whole cost, the fixed part of having hooks included, over five)
    and on each hook after the first; one hook's whole cost and the three-step hooks are
    reported in the table's notes."""
    floor = table.median("floor")
    base = table.median("toolweave-0")
    targets: list[Target] = []
    if floor is None or base is None:
        return targets

    def share(per_hook: float) -> str:
        return f"{per_hook:+.2f} µs per hook ({per_hook / floor * 100:.0f} % of the floor's {floor:.2f} µs)"

    one = table.median(_key("before", 1))
    five = table.median(_key("before", 5))
    if one is not None:
        table.notes.append(
            f"1 one-step hook: {share(one - base)}: the fixed part of having hooks (finding "
            "the entry's plan, the steps' loop) and one step"
        )
    if five is not None:
        per_hook = (five - base) / 5
        targets.append(
            Target(
                "W8-hooks-5",
                "W8: with 5 no-op hooks, each adds ≤ 10 % of the floor",
                share(per_hook),
                per_hook <= 0.10 * floor,
            )
        )
    if one is not None and five is not None:
        per_hook = (five - one) / 4
        targets.append(
            Target(
                "W8-hooks-more",
                "W8: each no-op hook after a session's first adds ≤ 10 % of the floor",
                share(per_hook),
                per_hook <= 0.10 * floor,
            )
        )
    for count in (1, 5):
        mine = table.median(_key("all", count))
        if mine is not None:
            table.notes.append(f"{count} three-step hook(s): {share((mine - base) / count)}")
    for kind in OBSERVE:
        mine = table.median(f"toolweave-{kind}")
        if mine is not None:
            table.notes.append(
                f"observe {kind}: {mine - base:+.2f} µs per call over no hooks "
                f"({(mine - base) / floor * 100:.0f} % of the floor)"
            )
    return targets
