"""A throwaway ``redis-server`` for W9's Redis rows: started on 127.0.0.1 and a free
port in a folder of its own, with no persistence (``--save '' --appendonly no``), and
stopped at the end of the workload."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["RedisServer", "missing"]

START_S = 20.0
"""How long the server may take to answer its first PING."""


def missing() -> str:
    """Why the Redis rows cannot run here (``""``: they can)."""
    if shutil.which("redis-server") is None:
        return "redis-server is not on PATH (Debian: apt-get install redis-server)"
    if importlib.util.find_spec("redis") is None:
        return "the redis package is not installed (pip install 'toolweave[redis]')"
    return ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """``redis-server`` on 127.0.0.1 and a free port, its files in ``folder``.

    Raises:
        RuntimeError: It ended or did not answer PING within :data:`START_S`.
    """

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.version = subprocess.run(
            ["redis-server", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        self._log = folder / "redis-server.log"
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                [
                    "redis-server",
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(folder),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_S
        while not _pong(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self._log.read_text(errors="replace")[-500:]
                raise RuntimeError(f"redis-server did not start on port {self.port}: {tail}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s); idempotent."""
        process = self._process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
