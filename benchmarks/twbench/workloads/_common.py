"""Helpers shared by the workloads: prepared calls with their answer checked, profiling."""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from twbench._results import Outcome, Row
from twbench._tools import ANSWER, RAW_ARGS
from twbench.frameworks import Dispatch, Framework, Variant
from twbench.frameworks import _toolweave_full as full

__all__ = [
    "PEER_NOTE",
    "WORK",
    "check_answer",
    "error_row",
    "pending_note",
    "prepare",
    "profile",
]

WORK = Path(__file__).resolve().parents[2] / ".work"
"""Scratch folder of the suite (git-ignored): venvs, generated packs, profiles."""

PEER_NOTE = "peers: every framework other than the floor and toolweave"


def pending_note(fw: Framework) -> str:
    """For toolweave rows: which parts of the full call path have not landed yet."""
    if fw.key != "toolweave" or not full.PENDING:
        return ""
    return "awaits " + " + ".join(full.PENDING) + " in core (row runs without them)"


def check_answer(text: str, who: str) -> None:
    """Raise unless ``text`` is the expected answer."""
    if text != ANSWER:
        raise AssertionError(f"{who} answered {text!r}, expected {ANSWER!r}")


def error_row(key: str, who: str, variant: str, exc: BaseException, outcome: Outcome) -> Row:
    """A row for a framework that crashed, with the crash recorded in ``outcome``."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    outcome.errors.append(f"{outcome.workload} {who} {variant}: {detail}")
    traceback.print_exception(exc)
    return Row(key, who, variant, "", status="error", note=detail[:200])


async def prepare(fw: Framework, variant: Variant, fillers: int = 0) -> Dispatch:
    """A dispatch of ``fw`` whose answer was checked once (untimed)."""
    dispatch = await fw.dispatch(variant, fillers)
    check_answer(dispatch.answer(await dispatch.invoke(RAW_ARGS)), f"{fw.key} {variant.key}")
    return dispatch


async def profile(
    name: str, batch: Callable[[int], Awaitable[None]], n: int, seconds: float = 2.0
) -> Path | None:
    """Profile ``batch`` with pyinstrument for about ``seconds``; returns the text report."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("pyinstrument is not installed; no profile", flush=True)
        return None
    WORK.mkdir(parents=True, exist_ok=True)
    profiler = Profiler(interval=0.0001, async_mode="disabled")
    deadline = time.perf_counter() + seconds
    profiler.start()
    while time.perf_counter() < deadline:
        await batch(n)
    profiler.stop()
    path = WORK / f"profile-{name}.txt"
    path.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    (WORK / f"profile-{name}.html").write_text(profiler.output_html())
    print(f"profile written to {path}", flush=True)
    return path


def describe(dispatch: Dispatch | None, fallback: str) -> str:
    """The path a row timed."""
    return dispatch.path if dispatch is not None else fallback


def noop(*_: Any) -> None:
    """Does nothing (a default callback)."""
