"""Shared helpers of the MCP tests: real server processes on stdio, loopback HTTP."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import Session, ToolSetBuilder, tool

SERVERS = Path(__file__).parent / "servers"
"""Scripts and packs the tests run as MCP servers."""
PY = sys.executable
DEMO_ARGS = ["-m", "toolweave.mcp", "--packs", "none", "--pack", "demo_pack:pack"]
"""Arguments that start toolweave's own MCP server over the demo pack."""
DEMO_ENV = {"PYTHONPATH": str(SERVERS)}


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@tool(blocking=False)
def echo(text: str) -> str:
    """Repeat the text (a built-in tool of the host).

    Args:
        text: What to repeat.
    """
    return f"local {text}"


def _host_session(**options: Any) -> Session:
    builder = ToolSetBuilder()
    builder.add(echo)
    return builder.build().session(**options)


def _fault_server(*flags: str, **config: Any) -> Any:
    from toolweave.mcp import ServerConfig

    return ServerConfig(command=PY, args=[str(SERVERS / "fault_server.py"), *flags], **config)


def _demo_server(**config: Any) -> Any:
    from toolweave.mcp import ServerConfig

    return ServerConfig(command=PY, args=DEMO_ARGS, env=DEMO_ENV, **config)


@pytest.fixture(scope="session")
def host_session() -> Callable[..., Session]:
    """Make a session whose tool set has one built-in tool, ``echo``."""
    return _host_session


@pytest.fixture(scope="session")
def fault_server() -> Callable[..., Any]:
    """Make a stdio configuration of ``servers/fault_server.py`` (flags, then options)."""
    return _fault_server


@pytest.fixture(scope="session")
def demo_server() -> Callable[..., Any]:
    """Make a stdio configuration of toolweave's own server over the demo pack."""
    return _demo_server


@contextlib.contextmanager
def serving_http(
    workspace: Path, host: str = "127.0.0.1", env: dict[str, str] | None = None
) -> Iterator[str]:
    """toolweave's server over the demo pack, on streamable HTTP at ``host`` (a free
    port), for the block: its URL. Stopped (killed if it lingers) at the end."""
    proc = subprocess.Popen(
        [PY, *DEMO_ARGS, "--http", f"{host}:0", "--workspace", str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **DEMO_ENV} if env is None else env,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"serving MCP on http://{host}:" in line, line
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="module")
def demo_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """toolweave's server over the demo pack, on streamable HTTP at a free loopback port."""
    with serving_http(tmp_path_factory.mktemp("http-workspace")) as url:
        yield url


async def _eventually(check: Callable[[], bool], within: float = 10.0) -> None:
    with anyio.fail_after(within):
        while not check():  # noqa: ASYNC110 - polling a plain condition
            await anyio.sleep(0.02)


@pytest.fixture(scope="session")
def eventually() -> Callable[..., Awaitable[None]]:
    """Wait until ``check()`` holds, failing the test after ``within`` seconds."""
    return _eventually
