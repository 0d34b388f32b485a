"""The center's SQLite store: URLs, damaged, foreign, newer, read-only and locked files,
degraded running, and changes reaching a session in another process within a second."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from toolweave import CenterError, ErrorKind, ToolSet
from toolweave.center import Center, SQLiteCenterStore

pytestmark = pytest.mark.anyio


def test_urls(tmp_path: Path) -> None:
    for url in (f"sqlite:///{tmp_path}/a.db", str(tmp_path / "b.db"), tmp_path / "c" / "d.db"):
        with Center.open(url) as center:
            assert center.version == 0
            assert Path(center.store.describe()).exists()
    with pytest.raises(CenterError, match="no center store for etcd://"):
        Center.open("etcd://localhost:2379")
    with pytest.raises(CenterError, match=r"redis://127.0.0.1:1/0 is unreachable"):
        Center.open("redis://127.0.0.1:1/0")
    with pytest.raises(CenterError, match="names no file"):
        Center.open("sqlite://")


def test_damaged_foreign_and_newer_files_are_clear_errors(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(CenterError, match="is damaged or is not a toolweave center store"):
        Center.open(damaged)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(CenterError, match="not a toolweave center store; choose another path"):
        Center.open(foreign)
    newer = tmp_path / "newer.db"
    Center.open(newer).close()
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(CenterError, match="newer toolweave"):
        Center.open(newer)
    assert damaged.read_bytes().startswith(b"this is not"), "a damaged file is left as it is"


async def test_read_only_open_reads_and_refuses_changes(
    center_path: Path, toolset: ToolSet
) -> None:
    with Center.open(center_path) as center:
        center.register_toolset(toolset)
        center.disable("boom", reason="x")
    with Center(SQLiteCenterStore(center_path, readonly=True)) as center:
        session = toolset.session()
        center.attach(session)
        refused = await session.call("boom", {})
        assert refused.error is not None
        assert refused.error.kind is ErrorKind.UNAVAILABLE
        assert (await session.call("echo", {"text": "x"})).text == "v1:x"
        with pytest.raises(CenterError, match="read-only: changes are refused"):
            center.enable("boom")
        center.flush_audit()
        assert center.health().audit_pending == 2
        assert "read-only" in center.health().audit_error


def test_locked_store_gives_a_clear_error(center_path: Path, toolset: ToolSet) -> None:
    center = Center(SQLiteCenterStore(center_path, busy_timeout=0.1))
    try:
        center.register_toolset(toolset)
        blocker = sqlite3.connect(center_path)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(CenterError, match="is locked by another process"):
                center.disable("echo")
        finally:
            blocker.rollback()
            blocker.close()
        assert center.disable("echo")
    finally:
        center.close()


def test_a_store_damaged_while_running_degrades_and_calls_go_on(
    center_path: Path, toolset: ToolSet
) -> None:
    center = Center.open(center_path, poll_interval=60)
    try:
        session = toolset.session()
        center.attach(session)
        center.disable("boom", reason="x")
        center.store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[attr-defined]
        good = center_path.read_bytes()
        with open(center_path, "r+b") as f:
            f.write(b"\0garbage" * 512)
        center.store._conn.execute("PRAGMA cache_size = 0")  # type: ignore[attr-defined]
        assert center.refresh() is False
        assert center.health().degraded
        # The last view stays: boom is still off, the rest runs.
        sync = session.sync()
        assert sync.call("boom", {}).error.kind is ErrorKind.UNAVAILABLE  # type: ignore[union-attr]
        assert sync.call("echo", {"text": "x"}).text == "v1:x"
        center_path.write_bytes(good)
        center.refresh()
        assert center.health().degraded == ""
    finally:
        center.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_store_file_deleted_or_replaced_while_running_refuses_changes(
    center_path: Path, toolset: ToolSet, how: str
) -> None:
    """When the file at the store's path is no longer the one the center opened, the
    center says so in its health and refuses changes (a 503 in the admin API) rather
    than confirming changes no other process would ever see; the last view stays."""
    from starlette.testclient import TestClient
    from toolweave.center._admin import admin_app

    center = Center.open(center_path, poll_interval=60)
    try:
        session = toolset.session()
        center.attach(session)
        center.disable("boom", reason="x")
        if how == "deleted":
            for suffix in ("", "-wal", "-shm"):
                Path(f"{center_path}{suffix}").unlink(missing_ok=True)
        else:
            with Center.open(center_path.with_name("other.db")):
                pass
            center_path.with_name("other.db").replace(center_path)
        assert center.refresh() is False
        assert "deleted or replaced" in center.health().degraded
        with pytest.raises(CenterError, match="deleted or replaced"):
            center.disable("echo", reason="lost?")
        api = TestClient(admin_app(center), base_url="http://127.0.0.1:8770")
        answer = api.post("/api/tools/echo/disable", json={"reason": "lost?"})
        assert answer.status_code == 503, answer.text
        assert api.get("/api/health").json()["degraded"]
        sync = session.sync()
        assert sync.call("boom", {}).error.kind is ErrorKind.UNAVAILABLE  # type: ignore[union-attr]
        assert sync.call("echo", {"text": "x"}).text == "v1:x"
    finally:
        center.close()


CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from conftest import make_toolset
    from toolweave.center import Center

    center = Center.open(sys.argv[1])
    session = make_toolset().session()
    center.attach(session)
    print("ready", flush=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        names = [d["function"]["name"] for d in session.definitions()]
        if "echo" not in names:
            print(f"gone {time.time()!r}", flush=True)
            break
        time.sleep(0.005)
    center.close()
    """
)


def test_a_disable_reaches_a_session_in_another_process_within_a_second(
    center_url: str, toolset: ToolSet
) -> None:
    center = Center.open(center_url)
    try:
        center.register_toolset(toolset)
        with subprocess.Popen(
            [sys.executable, "-c", CHILD, center_url, str(Path(__file__).parent)],
            stdout=subprocess.PIPE,
            text=True,
        ) as child:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
            time.sleep(0.3)  # the child is polling its listing
            started = time.time()
            center.disable("echo", reason="cross-process")
            line = child.stdout.readline().strip()
            child.wait(timeout=30)
        assert line.startswith("gone "), line
        delay = float(line.split()[1]) - started
        assert delay < 1.0, f"the disable took {delay:.3f} s to reach the other process"
    finally:
        center.close()


def test_open_without_create_refuses_a_missing_store(tmp_path: Path) -> None:
    missing = tmp_path / "nothing" / "center.db"
    with pytest.raises(CenterError, match="there is no center store at"):
        Center.open(missing, create=False)
    assert not missing.parent.exists()
    with pytest.raises(CenterError, match="there is no center store at"):
        Center.open(f"sqlite:///{missing}", create=False)
