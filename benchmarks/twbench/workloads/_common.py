"""Helpers shared by the workloads: prepared calls with their answer checked, profiling."""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from twbench._results import Outcome, Row
from twbench._tools import answer_for, raw_for
from twbench.frameworks import Dispatch, Framework, Variant
from twbench.frameworks import _toolweave_full as full

__all__ = [
    "PEER_NOTE",
    "WORK",
    "check_answer",
    "close_host",
    "error_row",
    "pending_note",
    "prepare",
    "profile",
    "with_host",
]

WORK = Path(__file__).resolve().parents[2] / ".work"
"""Scratch folder of the suite (git-ignored): venvs, generated packs, profiles."""

PEER_NOTE = "peers: every framework other than the floor and toolweave"


def pending_note(fw: Framework) -> str:
    """For toolweave rows: which parts of the full call path have not landed yet."""
    if fw.key != "toolweave" or not full.PENDING:
        return ""
    return "awaits " + " + ".join(full.PENDING) + " in core (row runs without them)"


def with_host(frameworks: Sequence[Framework]) -> list[Framework]:
    """``frameworks`` with toolweave as a host uses it (the built-in packs loaded into the
    builder: :class:`~twbench.frameworks.toolweave_.ToolweaveHost`) right after toolweave."""
    from twbench.frameworks.toolweave_ import Toolweave, ToolweaveHost

    out: list[Framework] = []
    for fw in frameworks:
        out.append(fw)
        if type(fw) is Toolweave:
            out.append(ToolweaveHost())
    return out


async def close_host(frameworks: Sequence[Framework]) -> None:
    """Close the sessions :func:`with_host`'s host framework made."""
    from twbench.frameworks.toolweave_ import ToolweaveHost

    for fw in frameworks:
        if isinstance(fw, ToolweaveHost):
            await fw.close()


def check_answer(text: str, who: str, kind: str = "async") -> None:
    """Raise unless ``text`` is the expected answer for a ``kind`` tool."""
    expected = answer_for(kind)
    if text != expected:
        raise AssertionError(f"{who} answered {text!r}, expected {expected!r}")


def error_row(key: str, who: str, variant: str, exc: BaseException, outcome: Outcome) -> Row:
    """A row for a framework that crashed, with the crash recorded in ``outcome``."""
    detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    outcome.errors.append(f"{outcome.workload} {who} {variant}: {detail}")
    traceback.print_exception(exc)
    return Row(key, who, variant, "", status="error", note=detail[:200])


async def prepare(fw: Framework, variant: Variant, fillers: int = 0) -> Dispatch:
    """A dispatch of ``fw`` whose answer was checked once (untimed)."""
    dispatch = await fw.dispatch(variant, fillers)
    answer = dispatch.answer(await dispatch.invoke(raw_for(variant.kind)))
    check_answer(answer, f"{fw.key} {variant.key}", variant.kind)
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
