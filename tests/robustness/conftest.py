"""Fixtures and options of the reliability battery: the event loop, the soak switch.

The soak tests (``soak*.py``, marked ``soak``) are left out of the normal run by the
root pytest configuration (``-m "not soak"``); ``nox -s soak`` selects them with
``-m soak``. ``--soak-minutes`` sets how long the mixed soak runs.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SOAK_MD = Path(__file__).resolve().parents[2] / "benchmarks" / "SOAK.md"
"""Where the soak's figures are written."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--soak-minutes``: the duration of the mixed soak (default 30)."""
    parser.addoption(
        "--soak-minutes",
        type=float,
        default=30.0,
        help="how long the mixed soak of tests/robustness runs, in minutes (default 30)",
    )


@pytest.fixture
def anyio_backend() -> str:
    """Run on asyncio, the loop hosts use."""
    return "asyncio"


@pytest.fixture
def soak_minutes(request: pytest.FixtureRequest) -> float:
    """The duration of the mixed soak, in minutes (``--soak-minutes``)."""
    return float(request.config.getoption("--soak-minutes"))


NAP_SERVER = '''
"""An MCP server (official SDK) whose tool naps: ``nap(ms, text)`` answers ``text``."""

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("naps", version="1")


@server.tool()
async def nap(ms: int, text: str) -> str:
    """Sleep ms milliseconds, then answer the text."""
    await anyio.sleep(ms / 1000)
    return text


if __name__ == "__main__":
    server.run()
'''
"""Source of a small MCP server the load and soak tests start over stdio."""


@pytest.fixture(scope="session")
def nap_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The path of the napping MCP server's script (see :data:`NAP_SERVER`)."""
    path = tmp_path_factory.mktemp("servers") / "nap_server.py"
    path.write_text(NAP_SERVER)
    return path


@dataclass
class Figure:
    """One measured figure of the soak, against its target."""

    name: str
    value: str
    target: str
    met: bool


@dataclass
class Figures:
    """The soak's figures, printed as a table and written to ``benchmarks/SOAK.md``."""

    rows: list[Figure] = field(default_factory=list)

    def add(self, name: str, value: str, target: str, *, met: bool) -> None:
        """Record a figure."""
        self.rows.append(Figure(name, value, target, met))

    def table(self) -> str:
        """The figures as a Markdown table."""
        lines = ["| figure | measured | target | met |", "|---|---|---|---|"]
        lines += [
            f"| {r.name} | {r.value} | {r.target} | {'yes' if r.met else 'no'} |" for r in self.rows
        ]
        return "\n".join(lines)


def _machine() -> str:
    cpus = os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {cpus} CPUs, load {load}"
    )


@pytest.fixture(scope="session")
def figures(request: pytest.FixtureRequest) -> Iterator[Figures]:
    """Where the soak tests put their figures; at the end of the run they are printed and
    written to ``benchmarks/SOAK.md`` with the command that produced them."""
    collected = Figures()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = _machine()
    yield collected
    if not collected.rows:
        return
    command = "python -m pytest " + " ".join(request.config.invocation_params.args)
    table = collected.table()
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(table)
    SOAK_MD.write_text(
        "# Soak and load figures\n\n"
        "Written by the soak tests of `tests/robustness/` (`nox -s soak`); a run replaces "
        "this file.\n\n"
        f"- Command: `{command}` (what `nox -s soak -- --soak-minutes N` runs)\n"
        f"- Run: {started}, {machine}\n\n{table}\n"
    )
