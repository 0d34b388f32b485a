"""W7 cold start: a fresh process imports toolweave, discovers 50 installed packs, loads
the 3 selected ones and builds the set; unselected packs must stay unimported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twbench import _coldstart
from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Series, rotated
from twbench.frameworks import Framework
from twbench.workloads._common import error_row

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W7"
TITLE = "cold start in a fresh process"

_TOOLWEAVE = textwrap.dedent(
    """
    import time
    t0 = time.perf_counter()
    import toolweave
    t1 = time.perf_counter()
    packs = toolweave.load_packs(include={selected!r})
    t2 = time.perf_counter()
    toolset = packs.build()
    t3 = time.perf_counter()
    import json, sys
    print(json.dumps({{
        "total_ms": (t3 - t0) * 1e3,
        "import_ms": (t1 - t0) * 1e3,
        "discover_ms": (t2 - t1) * 1e3,
        "build_ms": (t3 - t2) * 1e3,
        "imported": sorted(m for m in sys.modules if m.startswith("toolweave_benchpack_")),
        "declared": len(packs.packs),
        "tools": len(toolset),
    }}))
    """
)

_TOOLWEAVE_PACKS = textwrap.dedent(
    """
    import time
    t0 = time.perf_counter()
    import asyncio
    import toolweave
    t1 = time.perf_counter()


    async def join(a: str, b: int, c: list[str] | None = None) -> str:
        "Join a word and a number."
        return f"{{a}}:{{b}}"


    builder = toolweave.load_packs(include={packs!r}, strict=True).builder()
    builder.add(toolweave.tool(join))
    toolset = builder.build()
    t2 = time.perf_counter()
    import shutil, tempfile
    workspace = tempfile.mkdtemp(prefix="twbench-cold-")


    async def main():
        session = toolset.session(workspace=workspace)
        t3 = time.perf_counter()
        listing = session.definitions("openai")
        t4 = time.perf_counter()
        result = await session.call("join", '{{"a": "hello", "b": 42}}', call_id="call_1")
        t5 = time.perf_counter()
        await session.aclose()
        return listing, result, t3, t4, t5


    listing, result, t3, t4, t5 = asyncio.run(main())
    shutil.rmtree(workspace, ignore_errors=True)
    import json, sys
    print(json.dumps({{
        "total_ms": (t5 - t0) * 1e3,
        "import_ms": (t1 - t0) * 1e3,
        "load_build_ms": (t2 - t1) * 1e3,
        "listing_ms": (t4 - t3) * 1e3,
        "call_ms": (t5 - t4) * 1e3,
        "tools": len(listing),
        "text": (result.text or "").split("\\n", 1)[0],
        "error": None if result.error is None else str(result.error),
    }}))
    """
)
"""toolweave as a host starts: the four built-in packs, a host tool, the first listing
and the first call (the asyncio loop's start included), in the bench venv."""

_PEER = """\
import time
t0 = time.perf_counter()
{imports}


async def a0(a: str, b: int, c: list[str] | None = None) -> str:
    "Join a word and a number."
    return f"{{a}}:{{b}}"


async def a1(a: str, b: int, c: list[str] | None = None) -> str:
    "Join a word and a number."
    return f"{{a}}:{{b}}"


async def a2(a: str, b: int, c: list[str] | None = None) -> str:
    "Join a word and a number."
    return f"{{a}}:{{b}}"


fns = [a0, a1, a2]
{build}
t1 = time.perf_counter()
import json
print(json.dumps({{"total_ms": (t1 - t0) * 1e3, "tools": len(fns)}}))
"""

_PEERS: dict[str, tuple[str, str, str]] = {
    "floor": (
        "from pydantic import create_model",
        "built = [create_model(f.__name__, a=(str, ...), b=(int, ...), "
        "c=(list[str] | None, None)) for f in fns]",
        "import pydantic + create_model × 3",
    ),
    "openai-agents": (
        "from agents import function_tool",
        "built = [function_tool(f) for f in fns]",
        "import agents + function_tool × 3",
    ),
    "pydantic-ai": (
        "from pydantic_ai.toolsets import FunctionToolset",
        "built = FunctionToolset(fns)",
        "import pydantic_ai.toolsets + FunctionToolset(3 functions)",
    ),
    "mcp": (
        "from mcp.server.mcpserver import MCPServer",
        "built = MCPServer('x')\nfor f in fns:\n    built.add_tool(f)",
        "import mcp.server.mcpserver + MCPServer.add_tool × 3",
    ),
    "fastmcp": (
        "from fastmcp import FastMCP",
        "built = FastMCP('x')\nfor f in fns:\n    built.tool(f)",
        "import fastmcp + FastMCP.tool × 3",
    ),
    "langchain-core": (
        "from langchain_core.tools import StructuredTool",
        "built = [StructuredTool.from_function(coroutine=f) for f in fns]",
        "import langchain_core.tools + StructuredTool.from_function × 3",
    ),
}


def _peer_script(key: str) -> str:
    imports, build, _ = _PEERS[key]
    return _PEER.format(imports=imports, build=build)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("TOOLWEAVE_", "PYTHON"))}


def _spawn(python: Path | str, script: str) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(python), "-I", "-c", script],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )
    wall = (time.perf_counter() - t0) * 1e3
    if proc.returncode != 0:
        raise RuntimeError(f"cold-start process failed ({proc.returncode}): {proc.stderr[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Spawn fresh processes, interleaved: toolweave with 50 packs, then each peer."""
    outcome = Outcome(ID, TITLE)
    rounds = cfg.rounds_for(7, 1)
    try:
        cold_python = _coldstart.ensure()
    except Exception as exc:
        table = Table(f"{ID}-in-process", "cold start", "ms")
        table.rows.append(error_row("toolweave", "toolweave", "cold start", exc, outcome))
        outcome.tables.append(table)
        return outcome
    selected = list(_coldstart.SELECTED)
    tw_script = _TOOLWEAVE.format(selected=selected)
    keys = [fw.key for fw in frameworks]
    labels = {fw.key: fw.label for fw in frameworks}
    jobs: list[tuple[str, Path | str, str, str]] = [
        (
            "toolweave",
            cold_python,
            tw_script,
            f"import toolweave + load_packs(include=3 of {_coldstart.PACK_COUNT} installed) "
            "+ build()",
        )
    ]
    from twbench.frameworks._toolweave_full import BUILTIN_PACKS

    jobs.append(
        (
            "toolweave-packs",
            sys.executable,
            _TOOLWEAVE_PACKS.format(packs=list(BUILTIN_PACKS)),
            "import toolweave + load_packs(include=[4 built-in packs]).builder() + a host "
            "tool -> build() -> session -> first definitions('openai') -> first call "
            "(in asyncio.run), in the bench venv",
        )
    )
    labels["toolweave-packs"] = "toolweave, with the built-in packs"
    for key in keys:
        if key in _PEERS and (not cfg.quick or key == "floor"):
            jobs.append((key, sys.executable, _peer_script(key), _PEERS[key][2]))
    jobs.append(
        (
            "python",
            cold_python,
            "import json; print(json.dumps({'total_ms': 0}))",
            "interpreter start only (python -I -c)",
        )
    )
    labels["python"] = "python (empty)"
    inproc: dict[str, Series] = {}
    wall: dict[str, Series] = {}
    parts: dict[str, list[float]] = {"import_ms": [], "discover_ms": [], "build_ms": []}
    host_parts: dict[str, list[float]] = {
        "import_ms": [],
        "load_build_ms": [],
        "listing_ms": [],
        "call_ms": [],
    }
    imported_seen: set[str] = set()
    failed: set[str] = set()
    info: dict[str, Any] = {}
    for key, python, script, _ in jobs:  # warm-up: compile caches, page cache
        try:
            _spawn(python, script)
        except Exception as exc:
            failed.add(key)
            outcome.notes.append(f"{key} cold start failed: {exc}")
            outcome.errors.append(f"W7 {key}: {exc}")
    for r in range(rounds):
        for key, python, script, _ in rotated(jobs, r):
            if key in failed:
                continue
            data, ms = _spawn(python, script)
            inproc.setdefault(key, Series()).samples.append(float(data["total_ms"]))
            wall.setdefault(key, Series()).samples.append(ms)
            if key == "toolweave":
                info = data
                imported_seen.update(data["imported"])
                for part in parts:
                    parts[part].append(float(data[part]))
            if key == "toolweave-packs":
                if data.get("error") is not None or data.get("text") != "hello:42":
                    raise RuntimeError(f"toolweave with the built-in packs answered {data}")
                for part in host_parts:
                    host_parts[part].append(float(data[part]))
    t_in = Table(
        f"{ID}-in-process",
        "import + discover + build (with the built-in packs: + listing + first call), "
        "measured inside the process, ms",
        "ms",
        rounds=rounds,
    )
    t_wall = Table(
        f"{ID}-wall", "whole process (interpreter start to exit), ms", "ms", rounds=rounds
    )
    for key, _, _, path in jobs:
        if key not in inproc:
            continue
        label = labels.get(key, key)
        if key != "python":
            t_in.rows.append(Row(key, label, "cold start", path, inproc[key]))
        t_wall.rows.append(Row(key, label, "cold start", path, wall[key]))
    for key, measured in (("toolweave", parts), ("toolweave-packs", host_parts)):
        label = labels.get(key, key)
        for part, values in measured.items():
            if values:
                t_in.rows.append(
                    Row(
                        f"{key}-{part}",
                        label,
                        part.removesuffix("_ms").replace("_", " + "),
                        f"part of the {label} row",
                        Series(values),
                    )
                )
    outcome.tables.extend([t_in, t_wall])
    outcome.notes.append(
        f"toolweave runs in a dedicated venv with {_coldstart.PACK_COUNT} generated pack "
        f"distributions installed (benchmarks/.work/coldstart); {len(selected)} are selected "
        f"({', '.join(selected)}). Peers have no pack discovery: their row imports the "
        "framework and registers 3 tools, in the benchmark venv. Every process runs "
        "`python -I -c …` after one untimed warm-up run."
    )
    outcome.targets.extend(judge(t_in))
    tw = t_in.median("toolweave")
    if tw is not None:
        expected = {f"toolweave_benchpack_{name[2:]}" for name in selected}
        stray = sorted(m for m in imported_seen if m.split(".")[0] not in expected)
        ok_tools = info.get("tools", 0) >= 2 * len(selected)
        outcome.targets.append(
            Target(
                "W7-cold-start",
                f"W7: cold start under 300 ms with {_coldstart.PACK_COUNT} packs installed, "
                "no unselected pack imported",
                f"{tw:.0f} ms; {info.get('declared')} packs declared, "
                f"imported: {sorted({m.split('.')[0] for m in imported_seen})}"
                + (f"; UNSELECTED IMPORTED: {stray}" if stray else "")
                + ("" if ok_tools else f"; only {info.get('tools')} tools built"),
                tw < 300 and not stray and ok_tools,
            )
        )
    return outcome


def judge(t_in: Table) -> list[Target]:
    """The W7 target of a host's start: the built-in packs, the first listing and the
    first call under 250 ms in process (the 50-pack target is judged in :func:`run`)."""
    host = t_in.median("toolweave-packs")
    if host is None:
        return []
    return [
        Target(
            "W7-cold-start-packs",
            "W7: cold start with the built-in packs, first listing and first call under "
            "250 ms in process",
            f"{host:.0f} ms",
            host < 250,
        )
    ]
