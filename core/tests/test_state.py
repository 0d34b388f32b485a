"""Persisted runtime state: restarts, concurrent updates, damaged stores, change tracking."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel
from toolweave import (
    Context,
    MemoryStateStore,
    Resources,
    SQLiteStateStore,
    StateStore,
    Tool,
    ToolSetBuilder,
)
from toolweave.state import SCHEMA_VERSION, default_state_path, state_key

pytestmark = pytest.mark.anyio


class Tally(BaseModel):
    """What the tally tool remembers."""

    state_key: ClassVar[str] = "test.tally"

    items: list[int] = []
    """Every number added, in order."""
    reads: int = 0
    """Not changed by reading (kept at 0)."""


class Add(BaseModel):
    """One number."""

    n: int = 0
    """The number to add."""


class AddTool(Tool[Add, str]):
    """Appends a number; yields to the loop between reading and writing."""

    id = "add"
    state = Tally

    async def run(self, ctx: Context, args: Add) -> str:
        """Read, wait, write: loses updates unless calls are serialised."""
        tally = ctx.state(Tally)
        items = list(tally.items)
        await anyio.lowlevel.checkpoint()
        tally.items = [*items, args.n]
        return str(len(tally.items))


class Peek(Tool[Add, str]):
    """Reads the tally without changing it."""

    id = "peek"
    state = Tally

    def run(self, ctx: Context, args: Add) -> str:
        """Count the items (in a worker thread)."""
        return str(len(ctx.state(Tally).items))


class Reset(Tool[Add, str]):
    """Replaces the state with a new instance."""

    id = "reset"
    state = Tally

    async def run(self, ctx: Context, args: Add) -> str:
        """Start over with one item."""
        ctx.set_state(Tally(items=[args.n]))
        return "reset"


class CountingStore:
    """A real in-memory store that counts the saves it receives."""

    def __init__(self) -> None:
        self.inner = MemoryStateStore()
        self.saves: list[dict[str, str | None]] = []

    def load(self, session_id: str) -> dict[str, str]:
        return self.inner.load(session_id)

    def save(self, session_id: str, changes: Mapping[str, str | None]) -> None:
        self.saves.append(dict(changes))
        self.inner.save(session_id, changes)

    def close(self) -> None:
        self.inner.close()


def toolset() -> Any:
    builder = ToolSetBuilder()
    builder.add_all([AddTool, Peek, Reset])
    return builder.build()


def stored(workspace: Path, session_id: str) -> dict[str, Any]:
    """What the workspace's state file holds for a session, read with plain sqlite3."""
    conn = sqlite3.connect(default_state_path(workspace))
    try:
        rows = conn.execute(
            "SELECT key, value FROM state WHERE session_id = ?", (session_id,)
        ).fetchall()
    finally:
        conn.close()
    return {k: json.loads(v) for k, v in rows}


RESTART_SCRIPT = textwrap.dedent(
    """
    import sys
    import anyio
    from pydantic import BaseModel
    from toolweave import Context, Tool, ToolSetBuilder

    class Notes(BaseModel):
        lines: list[str] = []

    class Note(BaseModel):
        line: str

    class Remember(Tool[Note, str]):
        id = "remember"
        state = Notes

        async def run(self, ctx: Context, args: Note) -> str:
            notes = ctx.state(Notes)
            notes.lines.append(args.line)
            return "|".join(notes.lines)

    async def main() -> None:
        builder = ToolSetBuilder()
        builder.add(Remember)
        session = builder.build().session(workspace=sys.argv[1], session_id=sys.argv[2])
        result = await session.call("remember", {"line": sys.argv[3]})
        print(result.text)

    anyio.run(main)
    """
)


def test_state_survives_a_restart_in_a_new_process(tmp_path: Path) -> None:
    """Each run is a new host process; the same workspace and session id see earlier state,
    another session id does not."""
    script = tmp_path / "host.py"
    script.write_text(RESTART_SCRIPT)
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def run(session_id: str, line: str) -> str:
        done = subprocess.run(
            [sys.executable, str(script), str(workspace), session_id, line],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("s1", "first") == "first"
    assert run("s1", "second") == "first|second"
    assert run("s2", "other") == "other"
    assert run("s1", "third") == "first|second|third"
    assert (workspace / ".toolweave" / ".gitignore").read_text().splitlines()[-1] == "*"


async def test_200_concurrent_updates_are_all_kept(tmp_path: Path) -> None:
    """Concurrent calls that update one state model lose no update, in memory or on disk."""
    session = toolset().session(workspace=tmp_path, session_id="busy")
    async with anyio.create_task_group() as tg:
        for n in range(200):
            tg.start_soon(session.call, "add", {"n": n})
    assert sorted(session.state.get(Tally).items) == list(range(200))
    on_disk = stored(tmp_path, "busy")["test.tally"]
    assert sorted(on_disk["items"]) == list(range(200))


async def test_state_is_saved_only_when_it_changed() -> None:
    """Reading state writes nothing; a change is one save holding only the changed model."""
    store = CountingStore()
    session = toolset().session(state_store=store, session_id="s")
    assert (await session.call("peek", {})).text == "0"
    assert store.saves == []
    assert (await session.call("add", {"n": 7})).text == "1"
    assert store.saves == [{"test.tally": '{"items":[7],"reads":0}'}]
    assert (await session.call("peek", {})).text == "1"
    assert len(store.saves) == 1


async def test_replaced_state_is_saved_and_seen_by_the_next_session() -> None:
    """ctx.set_state replaces the live instance; a new session with the id loads it."""
    store = CountingStore()
    ts = toolset()
    first = ts.session(state_store=store, session_id="s")
    await first.call("add", {"n": 1})
    await first.call("reset", {"n": 42})
    second = ts.session(state_store=store, session_id="s")
    assert second.state.get(Tally).items == [42]


async def test_host_changes_state_outside_calls(tmp_path: Path) -> None:
    """The host reads and changes a state model and saves it explicitly."""
    shared = MemoryStateStore()
    resources = Resources()
    resources.insert(shared, StateStore)  # type: ignore[type-abstract]
    ts = toolset()
    session = ts.session(resources=resources, session_id="h", workspace=tmp_path)
    session.state.get(Tally).items.append(5)
    await session.save_state()
    again = ts.session(resources=resources, session_id="h", workspace=tmp_path)
    assert (await again.call("peek", {})).text == "1"
    assert not default_state_path(tmp_path).exists()


async def test_corrupt_store_is_quarantined_and_the_session_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A state file that is not a database is moved aside with a warning; the session
    starts empty and saves to a fresh file."""
    path = default_state_path(tmp_path)
    path.parent.mkdir()
    garbage = b"this is not sqlite " * 300
    path.write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        session = toolset().session(workspace=tmp_path, session_id="c")
        result = await session.call("add", {"n": 3})
    assert result.ok, result.text
    assert result.text == "1"
    moved = sorted(path.parent.glob("state.db.corrupt-*"))
    assert len(moved) == 1
    assert moved[0].read_bytes() == garbage
    assert "is unusable (file is not a database)" in caplog.text
    assert str(moved[0]) in caplog.text
    assert stored(tmp_path, "c")["test.tally"]["items"] == [3]


@pytest.mark.parametrize(
    ("app_id", "version", "reason"),
    [
        (0x54574541, SCHEMA_VERSION + 1, f"unknown schema version {SCHEMA_VERSION + 1}"),
        (0x1234, SCHEMA_VERSION, "not a toolweave state store"),
        (0, 0, "tables of another application"),
    ],
)
def test_unknown_schema_is_quarantined(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, app_id: int, version: int, reason: str
) -> None:
    """A database of an unknown schema version, or of another application, is moved
    aside with a warning naming the reason."""
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE other (x)")
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        store = SQLiteStateStore(path)
    try:
        assert reason in caplog.text
        assert len(list(tmp_path.glob("state.db.corrupt-*"))) == 1
        store.save("s", {"k": "1"})
        assert store.load("s") == {"k": "1"}
    finally:
        store.close()


def test_store_file_layout(tmp_path: Path) -> None:
    """The store uses WAL mode, marks its schema, and one save replaces and deletes keys."""
    store = SQLiteStateStore(tmp_path / "s.db")
    try:
        store.save("a", {"x": "1", "y": "2"})
        store.save("a", {"x": "3", "y": None})
        store.save("b", {"x": "9"})
        assert store.load("a") == {"x": "3"}
        assert store.load("missing") == {}
    finally:
        store.close()
    conn = sqlite3.connect(tmp_path / "s.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x54574541
    finally:
        conn.close()


async def test_stored_state_that_no_longer_fits_starts_from_defaults(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Stored JSON that fails the model's validation is logged and replaced by defaults."""
    store = MemoryStateStore()
    store.save("s", {"test.tally": '{"items": "not a list"}'})
    session = toolset().session(state_store=store, session_id="s")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 1})).text == "1"
    assert "does not fit Tally" in caplog.text
    assert store.load("s") == {"test.tally": '{"items":[1],"reads":0}'}


async def test_unopenable_store_keeps_state_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """When the state file cannot be created, calls still work and state lives in memory."""
    (tmp_path / ".toolweave").write_text("a file where the folder should be")
    session = toolset().session(workspace=tmp_path, session_id="m")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 1})).text == "1"
        assert (await session.call("add", {"n": 2})).text == "2"
    assert "keeps its state in memory only" in caplog.text


def test_state_key_default_and_declared() -> None:
    """A model without a declared key is stored under module:QualifiedName."""

    class Plain(BaseModel):
        x: int = 0

    assert state_key(Tally) == "test.tally"
    assert state_key(Plain).endswith(":test_state_key_default_and_declared.<locals>.Plain")


def test_sessions_that_use_no_state_create_no_file(tmp_path: Path) -> None:
    """A session whose calls never touch state opens no store and writes nothing."""

    class Echo(Tool[Add, str]):
        id = "echo"

        async def run(self, ctx: Context, args: Add) -> str:
            return str(args.n)

    builder = ToolSetBuilder()
    builder.add(Echo)

    async def main() -> str:
        session = builder.build().session(workspace=tmp_path)
        return (await session.call("echo", {"n": 4})).text

    assert anyio.run(main) == "4"
    assert not (tmp_path / ".toolweave").exists()
