"""W3 definitions: OpenAI tool definitions of a built set, first render and repeated; the
first listing of realistic tools; definitions serialised per request as a provider SDK
sends them, and the byte-cached variants."""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Series, collected, frozen_heap, rotated
from twbench._tools import fresh_many
from twbench.frameworks import Framework
from twbench.workloads._common import close_host, error_row, with_host

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W3"
TITLE = "render OpenAI definitions"

Render = Callable[[], Awaitable[Any]]

_BYTES_APIS = ("definitions_json", "definitions_bytes")
"""Session methods that give the serialised definitions (``definitions_json`` today)."""


def _name(definition: dict[str, Any]) -> str:
    fn = definition.get("function")
    if isinstance(fn, dict):
        return str(fn.get("name"))
    return str(definition.get("name"))


def _check(defs: Any, count: int, prefix: str, who: str) -> None:
    if isinstance(defs, (bytes, str)):
        defs = json.loads(defs)
    names = {_name(d) for d in defs}
    mine = {n for n in names if n.startswith(prefix)}
    if len(mine) != count or f"{prefix}0" not in mine or f"{prefix}{count - 1}" not in mine:
        raise AssertionError(f"{who} rendered {len(mine)} of {count} definitions {prefix}*")


async def _time(render: Render, min_s: float) -> tuple[float, Any]:
    """Mean ms of back-to-back calls of ``render``: at least 3 and ``min_s`` seconds."""
    repeats = 0
    with collected():
        t0 = t1 = time.perf_counter_ns()
        while repeats < 3 or t1 - t0 < min_s * 1e9:
            out = await render()
            repeats += 1
            t1 = time.perf_counter_ns()
    return (t1 - t0) / 1e6 / repeats, out


def _session_of(fw: Framework, render: Render) -> Any:
    """toolweave's session behind ``render`` (its closure), for the bytes API."""
    for cell in getattr(render, "__closure__", None) or ():
        value = cell.cell_contents
        if type(value).__name__ == "Session":
            return value
    return None


def _request_variants(fw: Framework, render: Render) -> dict[str, tuple[str, str, Render | None]]:
    """What a request sends, per row: ``{row key: (what, path, render)}``."""

    async def dumps() -> str:
        return json.dumps(await render())

    rows: dict[str, tuple[str, str, Render | None]] = {
        fw.key: (
            "per request",
            f"json.dumps([{fw.definitions_path}]) (the tools of the request body)",
            dumps,
        )
    }
    if fw.key == "floor":
        cache: dict[str, Any] = {}

        async def cached_dicts() -> str:
            return json.dumps(cache["dicts"])

        async def cached_bytes() -> bytes:
            blob: bytes = cache["bytes"]
            return blob

        async def fill() -> None:
            cache["dicts"] = await render()
            cache["bytes"] = json.dumps(cache["dicts"]).encode()

        rows["floor-dicts"] = (
            "cached dicts, json.dumps per request",
            "dicts rendered once (TypeAdapter.json_schema), json.dumps per request",
            _after(fill, cached_dicts),
        )
        rows["floor-bytes"] = (
            "cached JSON bytes",
            "json.dumps(...).encode() once, the same bytes per request",
            _after(fill, cached_bytes),
        )
    if fw.key.startswith("toolweave"):
        session = _session_of(fw, render)
        api = next((a for a in _BYTES_APIS if hasattr(session, a)), None)
        bytes_render: Render | None = None
        if api is not None:
            method = getattr(session, api)

            async def from_core() -> Any:
                return method("openai")

            bytes_render = from_core
        rows[f"{fw.key}-bytes"] = (
            "serialised by core, cached",
            f'Session.{api}("openai")'
            if api
            else f"PENDING: no core API for serialised definitions (looked for Session."
            f"{' / '.join(_BYTES_APIS)})",
            bytes_render,
        )
    return rows


def _after(first: Callable[[], Awaitable[None]], then: Render) -> Render:
    """``then``, after ``first`` ran once (untimed: its first call runs during the check)."""
    done: list[bool] = []

    async def run() -> Any:
        if not done:
            await first()
            done.append(True)
        return await then()

    return run


async def _first(
    fw: Framework, fns: list[Callable[..., Any]], prefix: str
) -> tuple[float, Render, float]:
    """Build tools of ``fns`` (named ``{prefix}{i}``), then time the first render: its
    ms, the render for the rounds that follow, and the ms of the build and the first
    render together."""
    with collected():
        b0 = time.perf_counter_ns()
        built = fw.build(fns)
        b1 = time.perf_counter_ns()
    render = await fw.definitions(built)
    with collected():
        t0 = time.perf_counter_ns()
        defs = await render()
        t1 = time.perf_counter_ns()
    _check(defs, len(fns), prefix, fw.key)
    return (t1 - t0) / 1e6, render, (b1 - b0 + t1 - t0) / 1e6


def _new_shape(fns: list[Callable[..., Any]], tag: str) -> list[Callable[..., Any]]:
    """``fns`` (realistic tools) with nested model classes no set listed before: fresh
    subclasses of ``Location`` and ``Assignee`` (same fields, names and schemas)."""
    from typing import Annotated

    from pydantic import Field

    from twbench._tools import Assignee, Location

    location = type("Location", (Location,), {"__doc__": Location.__doc__, "__module__": tag})
    assignee = type("Assignee", (Assignee,), {"__doc__": Assignee.__doc__, "__module__": tag})
    people = Annotated[list[assignee] | None, Field(max_length=5)]  # type: ignore[valid-type]
    for fn in fns:
        fn.__annotations__ = {**fn.__annotations__, "location": location, "assignees": people}
    return fns


async def _round_simple(
    fw: Framework, count: int, prefix: str, min_s: float
) -> tuple[float, float]:
    first_ms, render, _ = await _first(fw, fresh_many("async", count, prefix), prefix)
    again, defs = await _time(render, min_s)
    _check(defs, count, prefix, fw.key)
    return first_ms, again


async def _round_rich(
    fw: Framework, count: int, prefix: str, min_s: float
) -> tuple[float, float, dict[str, tuple[str, str, float | None]]]:
    first_ms, render, with_build = await _first(fw, fresh_many("rich", count, prefix), prefix)
    per_request: dict[str, tuple[str, str, float | None]] = {}
    for key, (what, path, variant) in _request_variants(fw, render).items():
        if variant is None:
            per_request[key] = (what, path, None)
            continue
        _check(await variant(), count, prefix, key)
        ms, out = await _time(variant, min_s)
        _check(out, count, prefix, key)
        per_request[key] = (what, path, ms)
    return first_ms, with_build, per_request


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Time the first render after a build, then repeated renders, per framework."""
    outcome = Outcome(ID, TITLE)
    fws = with_host(frameworks)
    try:
        with frozen_heap():
            await _measure(cfg, fws, outcome)
    finally:
        await close_host(fws)
    return outcome


async def _measure(cfg: Config, fws: Sequence[Framework], outcome: Outcome) -> None:
    count = cfg.pick(1000, 20)
    rounds = cfg.rounds_for(3, 1)
    min_s = cfg.pick(0.05, 0.005)
    first = Table(f"{ID}-first", f"first render of {count:,} tools, ms", "ms", rounds=rounds)
    again = Table(f"{ID}-repeated", f"repeated render of {count:,} tools, ms", "ms", rounds=rounds)
    first_rich = Table(
        f"{ID}-first-rich",
        f"first listing of {count:,} realistic tools (8 arguments), ms",
        "ms",
        rounds=rounds,
    )
    built_first = Table(
        f"{ID}-build-first-rich",
        f"build and first listing of {count:,} realistic tools (8 arguments), ms",
        "ms",
        rounds=rounds,
    )
    request = Table(
        f"{ID}-request",
        f"definitions of {count:,} realistic tools serialised for one request, ms",
        "ms",
        rounds=rounds,
    )
    first_s: dict[str, Series] = {}
    again_s: dict[str, Series] = {}
    rich_s: dict[str, Series] = {}
    built_s: dict[str, Series] = {}
    request_s: dict[str, Series] = {}
    request_rows: dict[str, Row] = {}
    failed: set[str] = set()
    for fw in fws:  # warm-up (untimed): imports and per-process caches, for every framework
        try:
            await _round_simple(fw, 2, "warm_", 0.0)
            await _round_rich(fw, 2, "warm_rich_", 0.0)
        except Exception:
            pass  # reported by the timed rounds
    gc.collect()
    gc.freeze()  # what the warm-up imported stays out of the collections that follow
    for r in range(rounds):
        for fw in rotated(list(fws), r):
            if fw.key in failed:
                continue
            try:
                ms_first, ms_again = await _round_simple(fw, count, f"d{r}_", min_s)
                ms_rich, ms_built, per_request = await _round_rich(fw, count, f"r{r}_", min_s)
                if fw.key == "toolweave":
                    fns = _new_shape(fresh_many("rich", count, f"n{r}_"), f"n{r}_")
                    ms_new, _, ms_new_built = await _first(fw, fns, f"n{r}_")
                    rich_s.setdefault("toolweave-new-shape", Series()).samples.append(ms_new)
                    built_s.setdefault("toolweave-new-shape", Series()).samples.append(ms_new_built)
            except NotImplementedError:
                failed.add(fw.key)
                continue
            except Exception as exc:
                failed.add(fw.key)
                first.rows.append(error_row(fw.key, fw.label, "render", exc, outcome))
                continue
            first_s.setdefault(fw.key, Series()).samples.append(ms_first)
            again_s.setdefault(fw.key, Series()).samples.append(ms_again)
            rich_s.setdefault(fw.key, Series()).samples.append(ms_rich)
            built_s.setdefault(fw.key, Series()).samples.append(ms_built)
            for key, (what, path, ms) in per_request.items():
                if key not in request_rows:
                    request_rows[key] = Row(key, fw.label, what, path)
                if ms is None:
                    request_rows[key].status = "pending"
                    continue
                request_s.setdefault(key, Series()).samples.append(ms)
    for fw in fws:
        if fw.key in first_s:
            first.rows.append(Row(fw.key, fw.label, "first", fw.definitions_path, first_s[fw.key]))
            again.rows.append(
                Row(fw.key, fw.label, "repeated", fw.definitions_path, again_s[fw.key])
            )
            first_rich.rows.append(
                Row(fw.key, fw.label, "first", fw.definitions_path, rich_s[fw.key])
            )
            built_first.rows.append(
                Row(
                    fw.key,
                    fw.label,
                    "build + first listing",
                    f"{fw.build_path}; then {fw.definitions_path}",
                    built_s[fw.key],
                )
            )
        if fw.key == "toolweave" and "toolweave-new-shape" in rich_s:
            first_rich.rows.append(
                Row(
                    "toolweave-new-shape",
                    fw.label,
                    "first, parameter list new to the process",
                    f"{fw.definitions_path}; the tools' nested models are classes no set "
                    "listed before (the schema is generated at this listing)",
                    rich_s["toolweave-new-shape"],
                )
            )
            built_first.rows.append(
                Row(
                    "toolweave-new-shape",
                    fw.label,
                    "build + first listing, parameter list new to the process",
                    f"{fw.build_path}; then {fw.definitions_path}; the tools' nested models "
                    "are classes no set listed before",
                    built_s["toolweave-new-shape"],
                )
            )
    for key, row in request_rows.items():
        row.series = request_s.get(key)
        request.rows.append(row)
    again.notes.append(
        f"Repeated: the mean of back-to-back renders of the same set, at least 3 and at least "
        f"{min_s * 1000:g} ms' worth, per round. The floor here caches nothing (every render "
        "regenerates every schema); W3-request has floors that cache what a host would."
    )
    again.notes.append(
        "Peers that are MCP servers (mcp SDK, fastmcp) list their tools in MCP form; the "
        "benchmark maps each to the OpenAI function shape (one small dict per tool). With "
        "the built-in packs, toolweave's listing also holds the packs' 17 tools."
    )
    first_rich.notes.append(
        "A set of realistic tools is built before the clock starts (untimed); the first "
        "listing is what the path column says. The 1,000 tools share one parameter list. "
        "toolweave generates a parameter list's schema once per process, at the first "
        "listing of a tool that has it, and a build prepares the listing of tools whose "
        "parameter list was listed before (here: by the warm-up, as by an earlier set in a "
        "host); the peers generate each tool's schema when the tool is created (untimed). "
        "The row 'parameter list new to the process' gives toolweave nested model classes "
        "no set listed before, so its listing generates the schema."
    )
    built_first.notes.append(
        "The build and the first listing together, from the functions to the first "
        "definitions a host sends: the peers generate every tool's schema in the build, "
        "toolweave at the first listing. The peers and toolweave's first row build the "
        "same functions as W3-first-rich (their nested model classes known to pydantic "
        "from the warm-up); the last row gives toolweave classes new to the process."
    )
    request.notes.append(
        "Per request: what a provider SDK puts on the wire, `json.dumps` of the OpenAI tools "
        "list, once per request, after each framework's per-request listing path (mean of "
        "back-to-back requests). Floors: rendering every time, caching the rendered dicts, "
        "caching the JSON bytes. toolweave's byte-cached row needs a core API that returns "
        "the serialised definitions."
    )
    outcome.tables.extend([first, again, first_rich, built_first, request])
    outcome.targets.extend(judge(again, first_rich, built_first, request))


def _fastest_peer(table: Table) -> tuple[str, float] | None:
    best: tuple[str, float] | None = None
    for row in table.rows:
        if row.key.startswith(("floor", "toolweave")) or row.series is None:
            continue
        if row.status != "ok":
            continue
        if best is None or row.series.median < best[1]:
            best = (row.framework, row.series.median)
    return best


def judge(again: Table, first_rich: Table, built_first: Table, request: Table) -> list[Target]:
    """The W3 targets: repeated render, first listing of realistic tools (and the build
    with it, for a parameter list new to the process), serialised definitions per
    request (toolweave alone and with the built-in packs)."""
    targets: list[Target] = []
    tw = again.median("toolweave")
    best = _fastest_peer(again)
    if tw is not None and best is not None:
        speedup = best[1] / tw if tw > 0 else float("inf")
        targets.append(
            Target(
                "W3-repeated",
                "W3: repeated render ≥ 10× faster than the fastest peer",
                f"{speedup:,.0f}× faster than {best[0]} ({tw * 1000:.2f} µs vs {best[1]:.2f} ms)",
                speedup >= 10,
            )
        )
    for table, key, label, what in (
        (first_rich, "toolweave", "", "first listing of realistic tools"),
        (
            first_rich,
            "toolweave-packs",
            " with the built-in packs",
            "first listing of realistic tools",
        ),
        (
            built_first,
            "toolweave-new-shape",
            "",
            "build and first listing of realistic tools whose parameter list is new to the process",
        ),
    ):
        best = _fastest_peer(table)
        mine = table.median(key)
        if mine is not None and best is not None:
            targets.append(
                Target(
                    f"W3-first-rich{key.removeprefix('toolweave')}",
                    f"W3{label}: {what} no slower than the fastest peer",
                    f"{mine:.1f} ms vs {best[0]} {best[1]:.1f} ms ({mine / best[1]:.2f}×)",
                    mine <= best[1],
                )
            )
    best = _fastest_peer(request)
    for key, label in (("toolweave", ""), ("toolweave-packs", " with the built-in packs")):
        # A host sends what core serialises for it when it can (Session.definitions_json),
        # else json.dumps of the listing.
        cached = request.median(f"{key}-bytes")
        mine = cached if cached is not None else request.median(key)
        how = "Session.definitions_json" if cached is not None else "json.dumps(definitions)"
        if mine is not None and best is not None:
            speedup = best[1] / mine if mine > 0 else float("inf")
            targets.append(
                Target(
                    f"W3-request{'-packs' if label else ''}",
                    f"W3{label}: serialised definitions per request ≥ 3× faster than the "
                    "fastest peer",
                    f"{speedup:.1f}× faster than {best[0]} ({mine:.4f} vs {best[1]:.2f} ms, {how})",
                    speedup >= 3,
                )
            )
    return targets
