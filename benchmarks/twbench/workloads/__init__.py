"""The workloads W1–W10; each module has ``ID``, ``TITLE`` and ``async def run(cfg, frameworks)``."""

from __future__ import annotations

from twbench.workloads import (
    w1_dispatch,
    w2_build,
    w3_definitions,
    w4_scaling,
    w5_mcp,
    w6_concurrency,
    w7_cold_start,
    w8_hooks_sessions,
    w9_center,
    w10_retrieval,
)

__all__ = ["ALL"]

ALL = (
    w1_dispatch,
    w2_build,
    w3_definitions,
    w4_scaling,
    w5_mcp,
    w6_concurrency,
    w7_cold_start,
    w8_hooks_sessions,
    w9_center,
    w10_retrieval,
)
"""Every workload, in report order."""
