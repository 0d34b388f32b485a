"""Shared fixtures of the cross-package tests."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
"""The repository root."""

TEMPLATE = ROOT / "plugins-builtin" / "_template"
"""The pack template that ``toolweave new-pack`` and pack authors copy."""

PLACEHOLDER = "NAME"
"""The word that stands for the pack's name in the template's paths and files."""

_PACK_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".*_cache", "build", "dist")


def render_template(parent: Path, name: str) -> Path:
    """Make a pack from the template by replacing the placeholder in paths and texts.

    Args:
        parent: The folder that receives ``toolweave-<name>/``.
        name: The pack's name.

    Returns:
        The new pack's folder.
    """
    if not _PACK_NAME.fullmatch(name):
        raise ValueError(f"pack name {name!r} must match {_PACK_NAME.pattern}")
    dest = parent / f"toolweave-{name}"
    shutil.copytree(TEMPLATE, dest, ignore=_SKIPPED)
    for path in sorted(dest.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file():
            path.write_text(path.read_text(encoding="utf-8").replace(PLACEHOLDER, name))
        if PLACEHOLDER in path.name:
            path.rename(path.with_name(path.name.replace(PLACEHOLDER, name)))
    return dest


def install_into(project: Path, site: Path) -> Path:
    """Build ``project``'s wheel with hatchling and unpack it into ``site``, as pip would.

    A pure-Python wheel unpacked into a folder on ``PYTHONPATH`` is an installed
    distribution: its metadata and entry points are found, so a pack's conformance
    test (which loads the pack through its entry point) runs as after ``pip install``.

    Returns:
        ``site``.
    """
    pytest.importorskip("hatchling", reason="hatchling (the packs' build backend) is missing")
    out = site.parent / f"{project.name}-dist"
    done = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "--target", "wheel", "-d", str(out)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


@pytest.fixture(scope="session")
def pack_installer() -> Callable[[Path, Path], Path]:
    """:func:`install_into`, for tests that run a pack's own tests as if installed."""
    return install_into


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the backend toolweave's hosts use)."""
    return "asyncio"


@pytest.fixture(scope="session")
def template_renderer() -> Callable[[Path, str], Path]:
    """:func:`render_template`, for tests that need a pack made from the template."""
    return render_template


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
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real Redis for the session's tests (see :class:`RedisServer`); flushed between
    tests by :func:`redis_url`."""
    import os

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
