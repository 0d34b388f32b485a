"""Timing: batches of calls, calibrated once, repeated in interleaved rounds."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "Case",
    "Series",
    "calibrate",
    "collected",
    "frozen_heap",
    "interleave",
    "loop_of",
    "rotated",
]

T = TypeVar("T")


@dataclass
class Series:
    """Samples of one measurement, one per round.

    Attributes:
        samples: One value per round, in the row's unit.
    """

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        """The median of the samples."""
        return statistics.median(self.samples)

    @property
    def lo(self) -> float:
        """The smallest sample."""
        return min(self.samples)

    @property
    def hi(self) -> float:
        """The largest sample."""
        return max(self.samples)


@contextmanager
def collected() -> Iterator[None]:
    """Collect first (untimed), then run the timed block with the cyclic collector on.

    A host's calls run with the collector on, so the timed blocks do too: a framework
    that allocates many container objects per call pays for the collections it causes.
    Collecting before each block makes every batch start from the same heap.
    """
    gc.collect()
    if not gc.isenabled():
        gc.enable()
    yield


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Move every live object out of the collector's reach (``gc.freeze``) for a block.

    Workloads hold thousands of tools of every framework at once; without this, every
    collection (before a batch, and the ones calls trigger inside it) would walk all of
    them. Freezing applies to every framework alike: only objects created during the
    rounds are tracked, as in a long-running host whose tools were built at start-up.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def loop_of(invoke: Callable[[str], Awaitable[Any]], raw: str) -> Callable[[int], Awaitable[None]]:
    """A batch runner: ``n`` sequential awaited calls of ``invoke(raw)``."""

    async def batch(n: int) -> None:
        for _ in range(n):
            await invoke(raw)

    return batch


async def calibrate(
    batch: Callable[[int], Awaitable[None]], target_s: float, cap: int = 200_000
) -> int:
    """How many operations make a batch of about ``target_s`` seconds (at least 1)."""
    n = 1
    while True:
        t0 = time.perf_counter()
        await batch(n)
        elapsed = time.perf_counter() - t0
        if elapsed >= target_s / 4 or n >= cap:
            break
        n *= 4 if elapsed < target_s / 40 else 2
    per_op = elapsed / n
    return max(1, min(cap, round(target_s / per_op))) if per_op > 0 else cap


@dataclass
class Case:
    """One row of an interleaved measurement.

    Attributes:
        key: Identifies the row.
        batch: Runs ``n`` operations.
        n: Operations per batch (set by calibration unless given).
        scale: Multiplies seconds-per-operation into the row's unit (1e6 for µs).
    """

    key: str
    batch: Callable[[int], Awaitable[None]]
    n: int = 0
    scale: float = 1e6


def rotated(items: Sequence[T], round_no: int) -> list[T]:
    """``items`` rotated by ``round_no`` so no row always runs first or last."""
    if not items:
        return []
    k = round_no % len(items)
    return [*items[k:], *items[:k]]


async def interleave(
    cases: Sequence[Case],
    rounds: int,
    target_s: float,
    on_round: Callable[[int], None] | None = None,
) -> dict[str, Series]:
    """Time every case once per round, rows rotated each round; per-operation values.

    Each case is warmed up and calibrated first; its batch size then stays fixed.
    """
    for case in cases:
        await case.batch(1)
        if case.n <= 0:
            case.n = await calibrate(case.batch, target_s)
    out: dict[str, Series] = {case.key: Series() for case in cases}
    with frozen_heap():
        for r in range(rounds):
            for case in rotated(cases, r):
                with collected():
                    t0 = time.perf_counter_ns()
                    await case.batch(case.n)
                    t1 = time.perf_counter_ns()
                out[case.key].samples.append((t1 - t0) / 1e9 / case.n * case.scale)
            if on_round is not None:
                on_round(r)
    return out
