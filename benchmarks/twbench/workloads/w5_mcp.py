"""W5 MCP: a trivial remote tool through toolweave's pool vs the bare SDK client, and
toolweave's server vs the SDK's own server, in memory and over stdio."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._timing import Case, interleave, loop_of
from twbench._tools import ARGS, RAW_ARGS
from twbench.frameworks import Framework
from twbench.servers import FASTMCP_SERVER, SDK_SERVER
from twbench.workloads._common import WORK, check_answer, error_row

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W5"
TITLE = "MCP: toolweave's pool and server vs the bare SDK"

BENCH_DIR = Path(__file__).resolve().parents[2]

Invoke = Callable[[str], Awaitable[str]]
Opener = Callable[[AsyncExitStack], Awaitable[Invoke]]


@dataclass
class Route:
    """One way to reach the tool over MCP (a row)."""

    table: str
    key: str
    framework: str
    what: str
    path: str
    open: Opener | None
    pending: str = ""


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _errlog(stack: AsyncExitStack, name: str) -> TextIO:
    WORK.mkdir(parents=True, exist_ok=True)
    return stack.enter_context((WORK / f"w5-{name}.stderr.log").open("w"))


def _content_text(result: Any) -> str:
    if getattr(result, "is_error", False):
        raise AssertionError(f"MCP call failed: {result.content}")
    return str(result.content[0].text)


def _sdk_server() -> Any:
    sys.path.insert(0, str(SDK_SERVER.parent))
    try:
        from sdk_server import make_server  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(SDK_SERVER.parent))
    return make_server()


def _fastmcp_server() -> Any:
    sys.path.insert(0, str(FASTMCP_SERVER.parent))
    try:
        from fastmcp_server import make_server  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(FASTMCP_SERVER.parent))
    return make_server()


def _stdio_params(args: list[str], env: dict[str, str] | None = None) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=args, env=env)


def _serve_args() -> tuple[list[str], str]:
    """How toolweave serves a session over stdio, and how the row names it."""
    pack = ["--packs", "none", "--pack", "twbench.servers.tw_pack:pack"]
    return ["-m", "toolweave.mcp", *pack], "python -m toolweave.mcp (what `toolweave serve` runs)"


async def _sdk_client(stack: AsyncExitStack, target: Any) -> Invoke:
    from mcp import Client

    client = await stack.enter_async_context(Client(target))

    async def invoke(raw: str) -> str:
        return _content_text(await client.call_tool("join", json.loads(raw)))

    return invoke


async def _sdk_stdio(stack: AsyncExitStack, params: Any, log: str) -> Invoke:
    from mcp.client.stdio import stdio_client

    return await _sdk_client(stack, stdio_client(params, errlog=_errlog(stack, log)))


async def _pool(stack: AsyncExitStack, config: Any, packs: bool = False) -> Invoke:
    from toolweave import ToolSetBuilder
    from toolweave.mcp import MCPPool

    from twbench.frameworks._toolweave_full import Setup

    if packs:
        setup = Setup(packs=True)
        stack.push_async_callback(setup.close)
        session = setup.session(setup.build(setup.builder()))
    else:
        session = ToolSetBuilder().build().session()
    await stack.enter_async_context(MCPPool(session, {"bench": config}, watch=False))
    names = [n for n in session.external if n.endswith("join")]
    if len(names) != 1:
        raise AssertionError(f"the pool registered {sorted(session.external)}, expected one *join")
    name = names[0]
    call = session.call

    async def invoke(raw: str) -> str:
        result = await call(name, raw, call_id="call_1")
        if result.error is not None:
            raise AssertionError(f"pool call failed: {result.error}")
        return str(result.text).split("\n\n<system-reminder>", 1)[0]

    return invoke


async def _fastmcp_client(stack: AsyncExitStack, target: Any) -> Invoke:
    from fastmcp import Client

    client = await stack.enter_async_context(Client(target))

    async def invoke(raw: str) -> str:
        result = await client.call_tool("join", json.loads(raw))
        return str(result.content[0].text)

    return invoke


def _routes(quick: bool) -> list[Route]:
    have_pool = _has("toolweave.mcp")
    no_pool = "" if have_pool else "toolweave.mcp (MCPPool) has not landed"
    have_fastmcp = _has("fastmcp") and not quick
    routes: list[Route] = []

    async def mem_sdk(stack: AsyncExitStack) -> Invoke:
        return await _sdk_client(stack, _sdk_server())

    async def mem_pool(stack: AsyncExitStack) -> Invoke:
        from toolweave.mcp import ServerConfig

        return await _pool(stack, ServerConfig.in_process(_sdk_server()))

    async def mem_pool_packs(stack: AsyncExitStack) -> Invoke:
        from toolweave.mcp import ServerConfig

        return await _pool(stack, ServerConfig.in_process(_sdk_server()), packs=True)

    async def mem_fastmcp(stack: AsyncExitStack) -> Invoke:
        return await _fastmcp_client(stack, _fastmcp_server())

    routes += [
        Route(
            "memory",
            "sdk",
            "mcp SDK client (bare)",
            "in process",
            "mcp.Client(MCPServer).call_tool(name, json.loads(raw))",
            mem_sdk,
        ),
        Route(
            "memory",
            "pool",
            "toolweave MCPPool",
            "in process",
            "Session.call(name, raw, call_id) → MCPPool (ServerConfig.in_process(MCPServer))",
            mem_pool if have_pool else None,
            no_pool,
        ),
        Route(
            "memory",
            "pool-packs",
            "toolweave MCPPool",
            "in process, session with the built-in packs",
            "Session.call(name, raw, call_id) → MCPPool (ServerConfig.in_process(MCPServer)); "
            "the session of a set with the 4 built-in packs (reminder, guard, state store)",
            mem_pool_packs if have_pool else None,
            no_pool,
        ),
    ]
    if have_fastmcp:
        routes.append(
            Route(
                "memory",
                "fastmcp",
                "fastmcp client",
                "in process (FastMCP server)",
                "fastmcp.Client(FastMCP).call_tool(name, json.loads(raw))",
                mem_fastmcp,
            )
        )

    sdk_args = [str(SDK_SERVER)]

    async def stdio_sdk(stack: AsyncExitStack) -> Invoke:
        return await _sdk_stdio(stack, _stdio_params(sdk_args), "sdk-server")

    async def stdio_pool(stack: AsyncExitStack) -> Invoke:
        from toolweave.mcp import ServerConfig

        return await _pool(stack, ServerConfig(type="stdio", command=sys.executable, args=sdk_args))

    async def stdio_fastmcp_client(stack: AsyncExitStack) -> Invoke:
        from fastmcp.client.transports import PythonStdioTransport

        return await _fastmcp_client(stack, PythonStdioTransport(SDK_SERVER))

    routes += [
        Route(
            "stdio",
            "sdk",
            "mcp SDK client (bare)",
            "stdio → SDK MCPServer",
            "mcp.Client(stdio_client(python sdk_server.py)).call_tool",
            stdio_sdk,
        ),
        Route(
            "stdio",
            "pool",
            "toolweave MCPPool",
            "stdio → SDK MCPServer",
            "Session.call(name, raw, call_id) → MCPPool (stdio, python sdk_server.py)",
            stdio_pool if have_pool else None,
            no_pool,
        ),
    ]
    if have_fastmcp:
        routes.append(
            Route(
                "stdio",
                "fastmcp",
                "fastmcp client",
                "stdio → SDK MCPServer",
                "fastmcp.Client(PythonStdioTransport(sdk_server.py)).call_tool",
                stdio_fastmcp_client,
            )
        )

    serve_args, serve_label = _serve_args()
    env = {"PYTHONPATH": os.pathsep.join([str(BENCH_DIR), os.environ.get("PYTHONPATH", "")])}

    async def serve_toolweave(stack: AsyncExitStack) -> Invoke:
        return await _sdk_stdio(stack, _stdio_params(serve_args, env), "toolweave-serve")

    async def serve_fastmcp(stack: AsyncExitStack) -> Invoke:
        return await _sdk_stdio(stack, _stdio_params([str(FASTMCP_SERVER)]), "fastmcp-server")

    routes += [
        Route(
            "serve",
            "sdk",
            "mcp SDK MCPServer",
            "server, stdio",
            "SDK client over stdio → MCPServer.run() (the SDK's own server)",
            stdio_sdk,
        ),
        Route(
            "serve",
            "toolweave",
            "toolweave serve",
            "server, stdio",
            f"SDK client over stdio → {serve_label}",
            serve_toolweave if have_pool else None,
            no_pool,
        ),
    ]
    if have_fastmcp:
        routes.append(
            Route(
                "serve",
                "fastmcp",
                "fastmcp FastMCP",
                "server, stdio",
                "SDK client over stdio → FastMCP.run(transport='stdio')",
                serve_fastmcp,
            )
        )
    return routes


_TABLES = {
    "memory": ("in process: one round trip, µs", "µs/call", 1e6),
    "stdio": ("client side over stdio (same SDK server): one round trip, µs", "µs/call", 1e6),
    "serve": ("server side over stdio (same SDK client): one round trip, µs", "µs/call", 1e6),
}


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Interleaved round trips through every route; pending rows for what has not landed."""
    outcome = Outcome(ID, TITLE)
    if not _has("mcp"):
        outcome.notes.append("W5 skipped: the mcp SDK is not installed.")
        return outcome
    # 41 rounds: over stdio one round trip waits on another process, and on 2 cores a
    # round's median moves 2-3x with the scheduler; 15 rounds left the ratio of the two
    # medians ±15 % from run to run (1.04-1.30x in five runs of the same code).
    rounds = cfg.rounds_for(41, 2)
    target_s = 0.08 if not cfg.quick else 0.005
    logging.getLogger("toolweave.mcp").setLevel(logging.WARNING)
    ref = {"memory": "sdk", "stdio": "sdk", "serve": "sdk"}
    tables = {
        name: Table(f"{ID}-{name}", title, unit, ref=ref[name], rounds=rounds)
        for name, (title, unit, _) in _TABLES.items()
    }
    cases: list[Case] = []
    rows: dict[str, list[Row]] = {}
    case_of: dict[Opener, str] = {}
    async with AsyncExitStack() as stack:
        for route in _routes(cfg.quick):
            table = tables[route.table]
            if route.open is None:
                table.rows.append(
                    Row(
                        route.key,
                        route.framework,
                        route.what,
                        route.path,
                        status="pending",
                        note=route.pending,
                    )
                )
                continue
            case_key = case_of.get(route.open)
            if case_key is None:
                try:
                    invoke = await route.open(stack)
                    check_answer(await invoke(RAW_ARGS), route.framework)
                except Exception as exc:
                    table.rows.append(
                        error_row(route.key, route.framework, route.what, exc, outcome)
                    )
                    continue
                case_key = f"{route.table}/{route.key}"
                case_of[route.open] = case_key
                cases.append(Case(case_key, loop_of(invoke, RAW_ARGS)))
                rows[case_key] = []
            row = Row(route.key, route.framework, route.what, route.path)
            table.rows.append(row)
            rows[case_key].append(row)
        results = await interleave(cases, rounds, target_s)
    for case_key, series in results.items():
        for row in rows[case_key]:
            row.series = series
    outcome.tables.extend(tables.values())
    outcome.notes.append(
        "The stdio SDK-server row is one set of measurements shown in both the client-side "
        "and the server-side table. Arguments arrive as the model's JSON text everywhere "
        f"(`{RAW_ARGS}`; the SDK clients get `json.loads` of it: {ARGS})."
    )
    outcome.targets.extend(judge(tables))
    return outcome


def judge(tables: dict[str, Table]) -> list[Target]:
    """The W5 targets: the pool's overhead over the bare SDK client (in process, also on a
    session with the built-in packs; over stdio), and ``toolweave serve`` against the
    SDK's own server."""
    targets: list[Target] = []
    for name, key, label in (
        ("memory", "pool", "memory"),
        ("memory", "pool-packs", "memory, session with the built-in packs"),
        ("stdio", "pool", "stdio"),
    ):
        pool, bare = tables[name].median(key), tables[name].median("sdk")
        pool_row = tables[name].row(key)
        tid = f"W5-{key}-{name}"
        text = f"W5 pool ({label}): overhead over the bare SDK client ≤ 1.2×"
        if pool is not None and bare is not None:
            targets.append(
                Target(
                    tid,
                    text,
                    f"{pool / bare:.2f}× ({pool:.0f} vs {bare:.0f} µs)",
                    pool / bare <= 1.2,
                )
            )
        elif pool_row is not None and pool_row.status == "pending":
            targets.append(Target(tid, text, pool_row.note, None))
    mine, sdk = tables["serve"].median("toolweave"), tables["serve"].median("sdk")
    serve_row = tables["serve"].row("toolweave")
    if mine is not None and sdk is not None:
        targets.append(
            Target(
                "W5-serve",
                "W5: toolweave serve no slower than the SDK's own server",
                f"{mine / sdk:.2f}× ({mine:.0f} vs {sdk:.0f} µs)",
                mine <= sdk,
            )
        )
    elif serve_row is not None and serve_row.status == "pending":
        targets.append(
            Target(
                "W5-serve",
                "W5: toolweave serve no slower than the SDK's own server",
                serve_row.note,
                None,
            )
        )
    return targets
