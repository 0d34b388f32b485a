"""Two processes writing one memory database at once lose nothing (WAL, busy timeout,
retries)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from toolweave_memory import MemoryStore, default_path

WRITER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path

    import anyio
    from toolweave import PackManager
    from toolweave_memory import pack

    workspace, name, count, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    packs = PackManager(strict=True)
    packs.add("memory", pack)
    session = packs.builder().build().session(workspace=workspace, session_id=name)
    (workspace / f"{name}.ready").touch()
    deadline = time.monotonic() + 30
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.005)


    async def main() -> None:
        for i in range(count):
            args = {"content": f"{name} remembers item {i}", "tags": [name]}
            result = await session.call("memory_save", args)
            if result.error is not None:
                print(result.text)
                sys.exit(1)


    anyio.run(main)
    """
)
COUNT = 80


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    """Two host processes save 80 memories each into one workspace at the same moment:
    every save succeeds and all 160 are there, each writer's under its tag."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(workspace), name, str(COUNT), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    deadline = time.monotonic() + 60
    while not all((workspace / f"{n}.ready").exists() for n in ("alpha", "beta")):
        assert time.monotonic() < deadline, "the writers did not start"
        assert all(w.poll() is None for w in writers), [w.communicate()[0] for w in writers]
        time.sleep(0.01)
    go.touch()
    for writer in writers:
        out, _ = writer.communicate(timeout=120)
        assert writer.returncode == 0, out
    store = MemoryStore(default_path(workspace))
    assert store.count() == 2 * COUNT
    for name in ("alpha", "beta"):
        hits = store.search(None, scopes=("shared",), tags=[name], limit=1_000)
        contents = {hit.memory.content for hit in hits}
        assert contents == {f"{name} remembers item {i}" for i in range(COUNT)}


def test_a_save_waits_out_a_long_write_lock(tmp_path: Path) -> None:
    """Another connection holding the write lock longer than the busy timeout delays a
    save (retried with backoff) but does not fail it."""
    path = tmp_path / "mem.db"
    store = MemoryStore(path, busy_timeout=0.05, attempts=20)
    store.save(scope="shared", content="first")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    released = threading.Event()

    def release() -> None:
        time.sleep(0.4)
        holder.execute("COMMIT")
        released.set()

    thread = threading.Thread(target=release)
    thread.start()
    try:
        saved = store.save(scope="shared", content="second")
    finally:
        thread.join()
        holder.close()
    assert released.is_set()
    assert saved is not None
    assert store.count() == 2
