"""Persisted runtime state: restarts, concurrent updates, damaged stores, change tracking."""

from __future__ import annotations

import gc
import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import weakref
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel, ConfigDict
from toolweave import (
    Context,
    MemoryStateStore,
    Resources,
    SQLiteStateStore,
    StateStore,
    Tool,
    ToolSetBuilder,
)
from toolweave.state import (
    SCHEMA_VERSION,
    RedisStateStore,
    StateConflict,
    StoredState,
    default_state_path,
    state_key,
)

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

    def load(self, session_id: str, keys: Collection[str] | None = None) -> dict[str, StoredState]:
        return self.inner.load(session_id, keys)

    def save(
        self,
        session_id: str,
        changes: Mapping[str, str | None],
        *,
        expected: Mapping[str, int] | None = None,
    ) -> dict[str, int]:
        self.saves.append(dict(changes))
        return self.inner.save(session_id, changes, expected=expected)

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
        (0x1234, SCHEMA_VERSION, "not a toolweave state store"),
        (0, 0, "tables of another application"),
    ],
)
def test_unknown_schema_is_quarantined(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, app_id: int, version: int, reason: str
) -> None:
    """A database of another application is moved aside with a warning naming the reason."""
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
        assert store.load("s") == {"k": StoredState("1", 1)}
    finally:
        store.close()


def test_store_file_layout(tmp_path: Path) -> None:
    """The store uses WAL mode, marks its schema, and one save replaces and deletes keys."""
    store = SQLiteStateStore(tmp_path / "s.db")
    try:
        store.save("a", {"x": "1", "y": "2"})
        store.save("a", {"x": "3", "y": None})
        store.save("b", {"x": "9"})
        assert store.load("a") == {"x": StoredState("3", 2)}
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
    """Stored JSON that fails the model's validation is logged and replaced by defaults;
    what was stored is kept under a backup key, written with the first save."""
    store = MemoryStateStore()
    store.save("s", {"test.tally": '{"items": "not a list"}'})
    session = toolset().session(state_store=store, session_id="s")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 1})).text == "1"
    assert "does not fit Tally" in caplog.text
    now = store.load("s")
    assert now.pop("test.tally") == StoredState('{"items":[1],"reads":0}', 2)
    ((backup, kept),) = now.items()
    assert backup.startswith("test.tally.unreadable-")
    assert kept == StoredState('{"items": "not a list"}', 1)
    assert repr(backup) in caplog.text


async def test_unopenable_store_keeps_state_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """When the state file cannot be created, calls still work and state lives in memory;
    the failure is logged once (with its traceback), not at every save, and once the
    folder can be made the next save stores what was kept."""
    (tmp_path / ".toolweave").write_text("a file where the folder should be")
    session = toolset().session(workspace=tmp_path, session_id="m")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 1})).text == "1"
        assert (await session.call("add", {"n": 2})).text == "2"
        assert (await session.call("add", {"n": 3})).text == "3"
    failures = [r for r in caplog.records if "kept in memory" in r.getMessage()]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    assert failures[0].levelno == logging.ERROR
    assert failures[0].exc_info is not None
    assert (tmp_path / ".toolweave").is_file()
    (tmp_path / ".toolweave").unlink()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 4})).text == "4"
    assert "works again" in caplog.text
    assert stored(tmp_path, "m")["test.tally"]["items"] == [1, 2, 3, 4]


async def another_workspace(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A workspace whose store holds session "o"'s tally [7], and its files' bytes."""
    other = tmp_path / "other"
    other.mkdir()
    session = toolset().session(workspace=other, session_id="o")
    assert (await session.call("add", {"n": 7})).text == "1"
    await session.aclose()
    return other, {p.name: p.read_bytes() for p in (other / ".toolweave").iterdir()}


@pytest.mark.parametrize("link", [".toolweave", ".toolweave/state.db", ".toolweave/state.db.lock"])
async def test_a_workspace_cannot_send_its_state_files_elsewhere_through_a_link(
    link: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A workspace (a cloned repository) whose .toolweave folder, state.db or lock file is
    a symbolic link: calls work with their state in memory, the log says why, and
    nothing is written where the link points (another workspace's store stays as it
    was)."""
    other, before = await another_workspace(tmp_path)
    workspace = tmp_path / "cloned"
    (workspace / ".toolweave").mkdir(parents=True)
    if link == ".toolweave":
        (workspace / ".toolweave").rmdir()
        (workspace / ".toolweave").symlink_to(other / ".toolweave")
    elif link.endswith("state.db"):
        (workspace / link).symlink_to(other / ".toolweave" / "state.db")
    else:
        (workspace / link).symlink_to(other / ".toolweave" / "planted.lock")
    session = toolset().session(workspace=workspace, session_id="o")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 1})).text == "1"
        assert (await session.call("add", {"n": 2})).text == "2"
    await session.aclose()
    assert "in memory" in caplog.text  # the store refused, or its first save failed
    assert "symbolic link" in caplog.text  # "Too many levels of symbolic links" (ELOOP)
    assert {p.name: p.read_bytes() for p in (other / ".toolweave").iterdir()} == before
    assert stored(other, "o")["test.tally"]["items"] == [7]


@pytest.mark.parametrize("link", [".toolweave", ".toolweave/state.db"])
async def test_a_link_put_in_a_workspace_after_its_store_opened_is_refused(
    link: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The open store of a workspace is handed to its next session without checking
    for links again only while its path still names the file it has open: once the
    .toolweave folder or state.db is replaced by a link to another workspace's files,
    the next session refuses the link (state in memory, the log says why) and the other
    workspace's store stays as it was."""
    other, before = await another_workspace(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for n in (1, 2):  # the first session creates the file, the second finds it open
        earlier = toolset().session(workspace=workspace, session_id="o")
        assert (await earlier.call("add", {"n": n})).text == str(n)
        await earlier.aclose()
    if link == ".toolweave":
        (workspace / ".toolweave").rename(workspace / "moved")
        (workspace / ".toolweave").symlink_to(other / ".toolweave")
    else:
        (workspace / link).unlink()
        (workspace / link).symlink_to(other / ".toolweave" / "state.db")
    session = toolset().session(workspace=workspace, session_id="o")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 3})).text == "1"
    await session.aclose()
    assert "in memory" in caplog.text
    assert "symbolic link" in caplog.text
    assert {p.name: p.read_bytes() for p in (other / ".toolweave").iterdir()} == before
    assert stored(other, "o")["test.tally"]["items"] == [7]


def test_a_workspace_store_is_opened_once_for_its_sessions(tmp_path: Path) -> None:
    """Sessions of one workspace share one open store; a store whose file was
    replaced is not handed out again."""
    path = default_state_path(tmp_path)
    SQLiteStateStore(path).save("s", {"k": "1"})
    store = SQLiteStateStore.of_workspace(tmp_path)
    assert SQLiteStateStore.of_workspace(str(tmp_path)) is store
    path.rename(path.with_name("old.db"))
    SQLiteStateStore(path).save("s", {"k": "2"})
    fresh = SQLiteStateStore.of_workspace(tmp_path)
    assert fresh is not store
    assert fresh.load("s")["k"].value == "2"
    store.close()
    fresh.close()


async def test_a_workspace_that_does_not_exist_is_not_made_by_a_save(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A session on a workspace that does not exist (a mistyped path) does not create it
    and its .toolweave folder: calls work with their state in memory, the log says why,
    and once the workspace exists the next save stores what was kept, with the
    .gitignore that keeps state out of the repository."""
    workspace = tmp_path / "typo" / "ws"
    session = toolset().session(workspace=workspace, session_id="t")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        assert (await session.call("add", {"n": 1})).text == "1"
    assert not (tmp_path / "typo").exists()
    assert "does not exist" in caplog.text
    workspace.mkdir(parents=True)
    assert (await session.call("add", {"n": 2})).text == "2"
    await session.aclose()
    assert stored(workspace, "t")["test.tally"]["items"] == [1, 2]
    assert (workspace / ".toolweave" / ".gitignore").read_text().splitlines()[-1] == "*"


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


async def test_reading_state_in_a_new_workspace_creates_no_database(tmp_path: Path) -> None:
    """Calls that only read state open no database file; the first save creates it and
    later sessions read what it holds."""
    session = toolset().session(workspace=tmp_path, session_id="r")
    assert (await session.call("peek", {"n": 0})).text == "0"
    assert (await session.call("peek", {"n": 0})).text == "0"
    assert not (tmp_path / ".toolweave").exists()
    assert (await session.call("add", {"n": 5})).text == "1"
    assert default_state_path(tmp_path).exists()
    assert stored(tmp_path, "r") == {"test.tally": {"items": [5], "reads": 0}}
    later = toolset().session(workspace=tmp_path, session_id="r")
    assert (await later.call("peek", {"n": 0})).text == "1"


async def test_a_workspace_store_outlives_its_sessions_until_its_file_is_replaced(
    tmp_path: Path,
) -> None:
    """A later session of the same workspace gets the store (and open file) of the
    sessions before it, which have ended; once the file is removed or replaced, the
    next session gets a store of the file now at the path and reads what it holds."""
    first = toolset().session(workspace=tmp_path, session_id="w")
    assert (await first.call("add", {"n": 1})).text == "1"
    kept = weakref.ref(first._state.store)
    await first.aclose()
    del first
    gc.collect()
    later = toolset().session(workspace=tmp_path, session_id="w")
    assert (await later.call("peek", {"n": 0})).text == "1"
    assert later._state.store is kept()
    await later.aclose()
    path = default_state_path(tmp_path)
    other = tmp_path / "other.db"
    holding = SQLiteStateStore(other)
    holding.save("someone-else", {"k": "1"})
    holding.close()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    os.replace(other, path)  # another inode at the path, holding nothing
    fresh = toolset().session(workspace=tmp_path, session_id="w")
    assert (await fresh.call("peek", {"n": 0})).text == "0"
    assert fresh._state.store is not kept()
    await fresh.aclose()


def test_a_store_whose_file_another_writer_creates_sees_it(tmp_path: Path) -> None:
    """A store opened before its file exists reads nothing and creates nothing; once
    another store (another process) creates the file, its revision moves and it reads
    what was saved; its own first save works as on any file."""
    path = tmp_path / "late" / "state.db"
    early = SQLiteStateStore(path)
    other: SQLiteStateStore | None = None
    try:
        assert early.load("s") == {}
        before = early.revision()
        assert early.revision() == before
        assert not path.exists()
        other = SQLiteStateStore(path)
        other.save("s", {"k": "1"})
        assert early.revision() != before
        assert early.load("s") == {"k": StoredState("1", 1)}
        assert early.save("s", {"k": "2"}, expected={"k": 1}) == {"k": 2}
        assert other.load("s") == {"k": StoredState("2", 2)}
    finally:
        early.close()
        if other is not None:
            other.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        early.load("s")


# -- versions and compare-and-set (every store) -------------------------------------------


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each store implementation, fresh (Redis: a real server, see the root conftest)."""
    made: Any
    if request.param == "memory":
        made = MemoryStateStore()
    elif request.param == "sqlite":
        made = SQLiteStateStore(tmp_path / "cas.db")
    else:
        made = RedisStateStore(request.getfixturevalue("redis_url"))
    yield made
    made.close()


def test_save_is_a_compare_and_set_over_all_its_keys(store: StateStore) -> None:
    """A save whose expected versions are stale stores nothing and names what is stored;
    versions count writes and never go back, not even after a delete."""
    assert store.save("s", {"a": "1", "b": "1"}, expected={"a": 0, "b": 0}) == {"a": 1, "b": 1}
    assert store.save("s", {"a": "2"}, expected={"a": 1}) == {"a": 2}
    with pytest.raises(StateConflict) as caught:
        store.save("s", {"a": "x", "b": "x"}, expected={"a": 1, "b": 1})
    assert caught.value.current == {"a": StoredState("2", 2)}
    assert store.load("s") == {"a": StoredState("2", 2), "b": StoredState("1", 1)}
    with pytest.raises(StateConflict):
        store.save("s", {"c": "1"}, expected={"c": 1})
    assert store.save("s", {"b": None}, expected={"b": 1}) == {"b": 0}
    assert store.load("s", ["b"]) == {}
    with pytest.raises(StateConflict) as caught:
        store.save("s", {"b": "stale"}, expected={"b": 1})
    assert caught.value.current == {"b": None}
    assert store.save("s", {"b": "again"}, expected={"b": 0}) == {"b": 3}
    assert store.load("s", ["a", "b", "zz"]) == {
        "a": StoredState("2", 2),
        "b": StoredState("again", 3),
    }
    assert store.save("s", {"a": "unconditional"}) == {"a": 3}


# -- what another version of a model stored ---------------------------------------------


class Todo(BaseModel):
    """A todo item (the version of the model this process has)."""

    text: str
    """What to do."""


class Todos(BaseModel):
    """A todo list; a newer version of the pack may store more than this one knows."""

    state_key: ClassVar[str] = "test.todos"

    items: list[Todo] = []
    """The items, in order."""


class StrictTodos(BaseModel):
    """A todo list that refuses fields it does not know."""

    model_config = ConfigDict(extra="forbid")
    state_key: ClassVar[str] = "test.todos"

    items: list[Todo] = []
    """The items, in order."""


class Text(BaseModel):
    """One todo's text."""

    text: str = "x"
    """What to do."""


def todo_tools(model: type[BaseModel]) -> Any:
    """A set whose ``append`` adds a todo to ``model`` and whose ``look`` only reads it."""

    class Append(Tool[Text, str]):
        id = "append"
        state = model

        async def run(self, ctx: Context, args: Text) -> str:
            todos: Any = ctx.state(model)
            todos.items.append(Todo(text=args.text))
            return str(len(todos.items))

    class Look(Tool[Text, str]):
        id = "look"
        state = model

        async def run(self, ctx: Context, args: Text) -> str:
            todos: Any = ctx.state(model)
            return str(len(todos.items))

    builder = ToolSetBuilder()
    builder.add_all([Append, Look])
    return builder.build()


async def test_fields_a_newer_model_added_are_kept_by_every_save(store: StateStore) -> None:
    """Top-level fields the model does not know (a newer version of the pack stored them)
    were dropped by the next save; every save now writes them back, and nothing is
    backed up."""
    newer = {"items": [{"text": "pay rent"}], "done": ["call mom"], "owner": {"name": "ann"}}
    store.save("s", {"test.todos": json.dumps(newer)})
    ts = todo_tools(Todos)
    session = ts.session(state_store=store, session_id="s")
    assert (await session.call("append", {"text": "buy milk"})).text == "2"
    assert (await session.call("append", {"text": "walk"})).text == "3"
    again = ts.session(state_store=store, session_id="s")
    assert (await again.call("append", {"text": "read"})).text == "4"
    now = store.load("s")
    assert list(now) == ["test.todos"]
    assert json.loads(now["test.todos"].value) == {
        "items": [{"text": t} for t in ("pay rent", "buy milk", "walk", "read")],
        "done": ["call mom"],
        "owner": {"name": "ann"},
    }
    assert now["test.todos"].version == 4


@pytest.mark.parametrize(
    ("model", "stored_value", "why"),
    [
        (Todos, {"items": [["pay rent", 1]]}, "unreadable"),
        (StrictTodos, {"items": [{"text": "pay rent"}], "done": ["call mom"]}, "unreadable"),
        (Todos, {"items": [{"text": "pay rent", "priority": 1}]}, "unknown-fields"),
    ],
    ids=["does-not-validate", "extra-fields-forbidden", "unknown-fields-inside"],
)
async def test_a_value_the_model_cannot_read_back_is_kept_under_a_backup_key(
    store: StateStore,
    caplog: pytest.LogCaptureFixture,
    model: type[BaseModel],
    stored_value: dict[str, Any],
    why: str,
) -> None:
    """A stored value the model cannot read (or read whole: fields it does not know
    inside its items, which a save could not put back) was silently overwritten by the
    next save. The session starts from what it can read, and the first save that
    replaces the value copies it, exactly as stored, to ``<key>.<why>-<UTC time>`` in
    the same transaction; a warning names that key. Reading alone writes nothing."""
    text = json.dumps(stored_value)
    store.save("s", {"test.todos": text})
    ts = todo_tools(model)
    session = ts.session(state_store=store, session_id="s")
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        first = (await session.call("look", {})).text
        assert store.load("s") == {"test.todos": StoredState(text, 1)}
        await session.call("append", {"text": "buy milk"})
    assert first == ("1" if why == "unknown-fields" else "0")
    now = store.load("s")
    saved = now.pop("test.todos")
    ((backup, kept),) = now.items()
    assert backup.startswith(f"test.todos.{why}-")
    assert kept == StoredState(text, 1)
    assert json.loads(saved.value)["items"][-1] == {"text": "buy milk"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all(repr(backup) in w for w in warnings)
    await session.call("append", {"text": "walk"})
    assert len(store.load("s")) == 2  # one backup, written once


async def test_a_backup_is_written_with_the_save_or_not_at_all() -> None:
    """The backup and the save that replaces the value are one compare-and-set: when
    another writer saved the key meanwhile, neither is stored, and the session goes on
    from the other writer's (readable) value with no backup to make."""
    store = MemoryStateStore()
    store.save("s", {"test.todos": '{"items": "a newer shape"}'})
    ts = todo_tools(Todos)
    session = ts.session(state_store=store, session_id="s")
    session.state.get(Todos).items.append(Todo(text="mine"))  # read: the defaults
    other = '{"items":[{"text":"from another writer"}]}'
    store.save("s", {"test.todos": other})
    conflict = await session.state.persist_all()
    assert isinstance(conflict, StateConflict)
    assert store.load("s") == {"test.todos": StoredState(other, 2)}
    assert (await session.call("append", {"text": "again"})).text == "2"
    assert list(store.load("s")) == ["test.todos"]


async def test_a_call_starts_from_what_another_session_saved() -> None:
    """A session's next call sees what another session (another process, here a second
    session on one store) saved since its last call, instead of overwriting it."""
    shared = MemoryStateStore()
    ts = toolset()
    one = ts.session(state_store=shared, session_id="same")
    two = ts.session(state_store=shared, session_id="same")
    assert (await one.call("add", {"n": 1})).text == "1"
    assert (await two.call("add", {"n": 2})).text == "2"
    assert (await one.call("add", {"n": 3})).text == "3"
    assert one.state.get(Tally).items == [1, 2, 3]
    assert json.loads(shared.load("same")["test.tally"].value)["items"] == [1, 2, 3]


class Slow(Tool[Add, str]):
    """Appends after waiting for the test's go-ahead (another writer saves meanwhile)."""

    id = "slow"
    state = Tally
    read: ClassVar[anyio.Event]
    go: ClassVar[anyio.Event]

    async def run(self, ctx: Context, args: Add) -> str:
        """Read, wait for the go-ahead, write."""
        tally = ctx.state(Tally)
        items = list(tally.items)
        Slow.read.set()
        await Slow.go.wait()
        tally.items = [*items, args.n]
        return "appended"


async def test_a_save_after_another_writer_is_refused_reported_and_reloaded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """When another writer saves the key while a call runs, the call's save is refused
    (the other update is kept, not overwritten), logged, returned by persist, and the
    live instance is reloaded in place."""
    shared = MemoryStateStore()
    builder = ToolSetBuilder()
    builder.add_all([AddTool, Slow])
    ts = builder.build()
    one = ts.session(state_store=shared, session_id="same")
    two = ts.session(state_store=shared, session_id="same")
    await one.call("add", {"n": 1})
    live = one.state.get(Tally)
    Slow.read, Slow.go = anyio.Event(), anyio.Event()
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one.call, "slow", {"n": 2})
            await Slow.read.wait()
            assert (await two.call("add", {"n": 3})).text == "2"
            Slow.go.set()
    assert "was changed by another writer" in caplog.text
    assert json.loads(shared.load("same")["test.tally"].value)["items"] == [1, 3]
    assert one.state.get(Tally) is live
    assert live.items == [1, 3]
    live.items.append(9)
    conflict = await two.state.persist_all()
    assert conflict is None
    two.state.get(Tally).items.append(4)
    conflict = await two.state.persist_all()
    assert conflict is None
    one.state.get(Tally).items.append(5)
    conflict = await one.state.persist_all()
    assert isinstance(conflict, StateConflict)
    assert conflict.current["test.tally"] is not None


async def test_update_reapplies_its_function_after_a_conflict() -> None:
    """session.state.update reloads and applies its function again when another writer
    saved in between, so neither update is lost."""
    shared = MemoryStateStore()
    ts = toolset()
    one = ts.session(state_store=shared, session_id="same")
    two = ts.session(state_store=shared, session_id="same")
    await one.state.update(Tally, lambda t: t.items.append(1))
    applied: list[list[int]] = []

    def append_two(tally: Tally) -> None:
        applied.append(list(tally.items))
        if len(applied) == 1:  # another writer saves while this update runs
            shared.save("same", {"test.tally": '{"items":[1,3],"reads":0}'})
        tally.items.append(2)

    saved = await one.state.update(Tally, append_two)
    assert applied == [[1], [1, 3]]
    assert saved.items == [1, 3, 2]
    assert json.loads(shared.load("same")["test.tally"].value)["items"] == [1, 3, 2]
    replaced = await two.state.update(Tally, lambda t: Tally(items=[*t.items, 4]))
    assert replaced.items == [1, 3, 2, 4]


# -- several processes --------------------------------------------------------------------

OPEN_RACE_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from toolweave.state import SQLiteStateStore

    me = sys.argv[1]
    for line in sys.stdin:
        folder = Path(line.strip())
        try:
            store = SQLiteStateStore(folder / "state.db")
            store.save("s", {me: "1"})
            store.close()
            print("ok", flush=True)
        except Exception as exc:
            print(f"error {type(exc).__name__}: {exc}".replace("\\n", " "), flush=True)
    """
)


def test_two_processes_creating_a_store_at_once_never_move_it_aside(tmp_path: Path) -> None:
    """Two processes open a fresh store at the same moment, round after round: neither
    takes the other's half-created file for a foreign one, and both writes are kept."""
    script = tmp_path / "opener.py"
    script.write_text(OPEN_RACE_CHILD)
    children = [
        subprocess.Popen(
            [sys.executable, str(script), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    rounds, started = 0, time.monotonic()
    try:
        while rounds < 300 and time.monotonic() - started < 60:
            folder = tmp_path / f"round-{rounds}"
            folder.mkdir()
            for child in children:
                assert child.stdin is not None
                child.stdin.write(f"{folder}\n")
            for child in children:
                assert child.stdin is not None
                child.stdin.flush()
            answers = [child.stdout.readline().strip() for child in children if child.stdout]
            assert answers == ["ok", "ok"], (rounds, answers)
            assert not list(folder.glob("state.db.corrupt-*")), rounds
            conn = sqlite3.connect(folder / "state.db")
            try:
                keys = {k for (k,) in conn.execute("SELECT key FROM state")}
            finally:
                conn.close()
            assert keys == {"a", "b"}, rounds
            rounds += 1
    finally:
        for child in children:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(timeout=30)
            if child.stdout is not None:
                child.stdout.close()
    assert rounds >= 50


UPDATE_CHILD = textwrap.dedent(
    """
    import logging
    import sys
    from typing import ClassVar

    import anyio
    import anyio.lowlevel
    from pydantic import BaseModel
    from toolweave import Context, Tool, ToolSetBuilder
    from toolweave.state import RedisStateStore

    class Tally(BaseModel):
        state_key: ClassVar[str] = "test.tally"
        items: list[int] = []

    class Add(BaseModel):
        n: int

    class AddTool(Tool[Add, str]):
        id = "add"
        state = Tally

        async def run(self, ctx: Context, args: Add) -> str:
            tally = ctx.state(Tally)
            items = list(tally.items)
            await anyio.lowlevel.checkpoint()
            tally.items = [*items, args.n]
            return "ok"

    class Conflicts(logging.Handler):
        count = 0

        def emit(self, record: logging.LogRecord) -> None:
            if "changed by another writer" in record.getMessage():
                Conflicts.count += 1

    logging.getLogger("toolweave").addHandler(Conflicts())

    session_store = RedisStateStore(sys.argv[4]) if len(sys.argv) > 4 else None

    async def main(workspace: str, mode: str, first: int) -> None:
        builder = ToolSetBuilder()
        builder.add(AddTool)
        session = builder.build().session(
            workspace=workspace, session_id="shared", state_store=session_store
        )
        session.state.get(Tally)  # open the store before the start signal
        print("ready", flush=True)
        sys.stdin.readline()
        refused = []
        for n in range(first, first + 100):
            if mode == "update":
                await session.state.update(Tally, lambda t, n=n: t.items.append(n))
            else:
                before = Conflicts.count
                await session.call("add", {"n": n})
                if Conflicts.count != before:
                    refused.append(n)
        print(" ".join(map(str, refused)), flush=True)

    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
    if session_store is not None:
        session_store.close()
    """
)


def _two_writers(
    tmp_path: Path, mode: str, redis_url: str | None = None
) -> tuple[list[int], set[int]]:
    """Run two processes that each make 100 updates of one session's Tally at the same
    time (on the workspace's SQLite file, or on Redis); return what the store holds and
    the updates reported as refused."""
    script = tmp_path / "writer.py"
    script.write_text(UPDATE_CHILD)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    children = [
        subprocess.Popen(
            [sys.executable, str(script), str(workspace), mode, str(first)]
            + ([redis_url] if redis_url else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for first in (0, 100)
    ]
    refused: set[int] = set()
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out, _ = child.communicate(timeout=120)
            assert child.returncode == 0
            refused.update(int(n) for n in out.split())
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    if redis_url:
        store = RedisStateStore(redis_url)
        try:
            held = json.loads(store.load("shared")["test.tally"].value)
        finally:
            store.close()
        return held["items"], refused
    return stored(workspace, "shared")["test.tally"]["items"], refused


@pytest.fixture(params=["sqlite", "redis"])
def shared_store(request: pytest.FixtureRequest) -> str | None:
    """Where the two writers keep the session: the workspace's SQLite file, or Redis."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("redis_url"))


def test_two_processes_updating_one_session_keep_all_200_updates(
    tmp_path: Path, shared_store: str | None
) -> None:
    """Two processes each make 100 read-modify-write updates through session.state.update
    at the same time: all 200 are kept."""
    items, refused = _two_writers(tmp_path, "update", shared_store)
    assert refused == set()
    assert sorted(items) == list(range(200))


def test_two_processes_calling_tools_lose_no_update_silently(
    tmp_path: Path, shared_store: str | None
) -> None:
    """Two processes each make 100 tool calls that update one session's state: every
    update is either kept or refused with a conflict warning, never silently lost."""
    items, refused = _two_writers(tmp_path, "call", shared_store)
    assert len(items) == len(set(items))
    assert set(items) | refused == set(range(200))
    assert not set(items) & refused
