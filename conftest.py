"""Fixtures every test folder shares: a real Redis server."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


class RedisServer:
    """A real ``redis-server`` on 127.0.0.1 and a free port, persisting every write
    (append-only file, fsync always), so a test can kill and restart it without losing
    what Redis acknowledged."""

    def __init__(self, folder: Path) -> None:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.folder = folder
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        import time

        import redis

        command = "redis-server --bind 127.0.0.1 --save '' --appendonly yes --appendfsync always"
        self.process = subprocess.Popen(
            [*shlex.split(command), "--port", str(self.port), "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        client.close()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def flush(self) -> None:
        import redis

        with redis.Redis(port=self.port) as client:
            client.flushall()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real Redis for the session's tests (see :class:`RedisServer`); flushed between
    tests by :func:`redis_url`."""
    if shutil.which("redis-server") is None:
        if os.environ.get("CI"):
            pytest.fail(
                "redis-server is missing: .ci/run installs it (apt-get install redis-server)"
            )
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    pytest.importorskip("redis", reason="the redis package (toolweave[redis]) is missing")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.kill()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The URL of a running, empty Redis."""
    if redis_server.process is None:
        redis_server.start()
    redis_server.flush()
    return redis_server.url
