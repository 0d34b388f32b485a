"""Fixtures of the monitor pack's tests: sessions of the monitor and shell packs over a
temporary workspace, a real HTTP server on 127.0.0.1, and a way to wait for what the
monitors report."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
import toolweave_monitor
import toolweave_shell
from toolweave import MemoryStateStore, PackManager, Resources, Session
from toolweave_shell import BackgroundTasks, LocalTerminal, Terminal

FAST = {"min_url_interval_s": 0.05, "min_process_interval_s": 0.02, "batch_window_ms": 100}
"""Params that make the monitors quick enough for tests (``make_session``'s default)."""


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a ``src`` folder and a ``notes.txt`` file."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "notes.txt").write_text("first\n")
    return root


@pytest.fixture
def host(tmp_path: Path) -> Resources:
    """Host resources: a terminal with a short kill grace, task output under tmp_path."""
    resources = Resources()
    resources.insert(LocalTerminal(kill_grace=0.5), Terminal)
    resources.insert(BackgroundTasks(root=tmp_path / "task-output"))
    return resources


def monitor_config(**params: Any) -> dict[str, Any]:
    """A configuration giving the monitor tools ``FAST`` params and ``params``."""
    merged = {**FAST, **params}
    shell = [{"id": name} for name in ("bash", "task_output", "wait_tasks", "kill_task")]
    mine = [{"id": name, "params": merged} for name in ("monitor", "monitors", "stop_monitor")]
    return {"tools": shell + mine}


SessionFactory = Callable[..., Session]


@pytest.fixture
async def make_session(workspace: Path, host: Resources) -> AsyncIterator[SessionFactory]:
    """Sessions of the monitor and shell packs over the workspace (``FAST`` params and
    ``params``); every one is closed at the end."""
    made: list[Session] = []

    def make(params: dict[str, Any] | None = None, **options: Any) -> Session:
        packs = PackManager(strict=True)
        packs.add("shell", toolweave_shell.pack)
        packs.add("monitor", toolweave_monitor.pack)
        toolset = packs.builder().build(monitor_config(**(params or {})))
        options.setdefault("workspace", workspace)
        options.setdefault("resources", host)
        options.setdefault("state_store", MemoryStateStore())
        session = toolset.session(debug=True, **options)
        made.append(session)
        return session

    yield make
    for session in made:
        await session.aclose()


class StatusServer:
    """A real HTTP server on 127.0.0.1 answering every GET with :attr:`status`
    (after :attr:`delay_s` seconds)."""

    def __init__(self) -> None:
        self.status = 200
        self.delay_s = 0.0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(outer.delay_s)
                body = b"ok"
                self.send_response(outer.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/health"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def http_server() -> Iterator[StatusServer]:
    """A :class:`StatusServer`, running for the test."""
    server = StatusServer()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()
    server.thread.join()


Waiter = Callable[..., Awaitable[None]]


@pytest.fixture
def wait_for() -> Waiter:
    """``await wait_for(predicate, seconds=15)``: wait until ``predicate()`` holds; fail
    the test after ``seconds``."""

    async def wait(predicate: Callable[[], bool], seconds: float = 15.0) -> None:
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail("the condition did not hold in time")
            await anyio.sleep(0.02)

    return wait
