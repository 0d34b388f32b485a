"""Command line of the suite: ``python benchmarks/run.py [--quick] [--check] [--only W1,W3]``."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from twbench import _report
from twbench._results import Config, Outcome
from twbench.frameworks import ALL as FRAMEWORKS
from twbench.frameworks import available
from twbench.workloads import ALL as WORKLOADS
from twbench.workloads._common import WORK

__all__ = ["main"]

BENCH_DIR = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description="toolweave side by side with peer frameworks (workloads W1–W9).",
    )
    p.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, 1–3 rounds")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit non-zero when a workload crashes or a framework gives a wrong answer",
    )
    p.add_argument("--only", default="", help="comma-separated workloads to run (W1,W3)")
    p.add_argument(
        "--frameworks",
        default="",
        help="comma-separated peers to include (floor and toolweave always run): "
        + ", ".join(cls.key for cls in FRAMEWORKS if cls.key not in {"floor", "toolweave"}),
    )
    p.add_argument("--rounds", type=int, default=None, help="rounds for every workload")
    p.add_argument(
        "--profile",
        default="",
        help="workloads whose toolweave path is profiled with pyinstrument (W1); "
        "reports go to benchmarks/.work/",
    )
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the Markdown report (default: benchmarks/RESULTS.md; "
        "benchmarks/.work/RESULTS-quick.md with --quick)",
    )
    p.add_argument("--no-write", action="store_true", help="print only; write no report")
    return p


async def _run(cfg: Config, only: set[str], peers: set[str] | None) -> list[Outcome]:
    frameworks, missing = available(peers)
    for key, reason in missing.items():
        print(f"skipping {key}: {reason}", file=sys.stderr)
    outcomes: list[Outcome] = []
    for module in WORKLOADS:
        if only and module.ID not in only:
            continue
        print(f"== {module.ID}: {module.TITLE}", flush=True)
        t0 = time.perf_counter()
        try:
            outcome = await module.run(cfg, frameworks)
        except Exception as exc:
            traceback.print_exc()
            outcome = Outcome(module.ID, module.TITLE)
            outcome.errors.append(f"{module.ID} crashed: {type(exc).__name__}: {exc}")
        for key, reason in missing.items():
            outcome.notes.append(f"{key} skipped: {reason}.")
        outcomes.append(outcome)
        _report.print_outcome(outcome)
        print(f"({module.ID} took {time.perf_counter() - t0:.1f} s)", flush=True)
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected workloads, print the tables, write the report; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(args_list)
    only = {w.strip().upper() for w in args.only.split(",") if w.strip()}
    unknown = only - {m.ID for m in WORKLOADS}
    if unknown:
        print(f"unknown workloads: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    peers = {p.strip() for p in args.frameworks.split(",") if p.strip()} or None
    cfg = Config(
        quick=args.quick,
        check=args.check,
        rounds=args.rounds,
        profile={w.strip().upper() for w in args.profile.split(",") if w.strip()},
    )
    started = dt.datetime.now(dt.UTC)
    load_at_start = _report.load_average()
    t0 = time.perf_counter()
    outcomes = asyncio.run(_run(cfg, only, peers))
    elapsed = time.perf_counter() - t0
    targets = [t for o in outcomes for t in o.targets]
    _report.print_targets(targets)
    errors = [e for o in outcomes for e in o.errors]
    if not args.no_write:
        out = args.output or (WORK / "RESULTS-quick.md" if cfg.quick else BENCH_DIR / "RESULTS.md")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            _report.markdown(outcomes, args_list, started, elapsed, load_at_start=load_at_start)
        )
        print(f"report written to {out}")
    print(f"done in {elapsed:.1f} s; {len(errors)} error(s)")
    if errors:
        for e in errors:
            print(f"ERROR {e}", file=sys.stderr)
        if cfg.check:
            return 1
    return 0
