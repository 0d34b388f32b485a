"""The state store's files changed under an open store: deleted or replaced by another
process while a session has them open."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel
from toolweave import Context, SQLiteStateStore, ToolSetBuilder, tool
from toolweave.state import StateConflict, StoredState, default_state_path

pytestmark = pytest.mark.anyio


class Tally(BaseModel):
    """What add remembers."""

    state_key: ClassVar[str] = "test.files.tally"
    items: list[int] = []
    """Every number added, in order."""


@tool(id="add", blocking=False, state=Tally)
def add(ctx: Context, n: int) -> int:
    """Append a number; answers how many there are."""
    tally = ctx.state(Tally)
    tally.items.append(n)
    return len(tally.items)


def toolset() -> Any:
    builder = ToolSetBuilder()
    builder.add(add)
    return builder.build()


def stored(workspace: Path, session_id: str) -> list[int] | None:
    """The items another process reads at the workspace's store path now."""
    script = textwrap.dedent(
        """
        import json, sys
        from toolweave.state import SQLiteStateStore
        store = SQLiteStateStore(sys.argv[1])
        found = store.load(sys.argv[2], ["test.files.tally"]).get("test.files.tally")
        print(json.dumps(None if found is None else json.loads(found.value)["items"]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(default_state_path(workspace)), session_id],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=os.environ.copy(),
    ).stdout
    found: list[int] | None = json.loads(out)
    return found


async def items_of(session: Any) -> list[int]:
    tally: Any = await session.state.update(Tally, lambda t: None)
    return list(tally.items)


async def test_a_store_file_replaced_while_open_is_not_written_unseen(tmp_path: Path) -> None:
    """Another file renamed over ``state.db`` (a restored copy, another tool's file)
    while a session has it open: the session's next save goes to the file now at the
    path, compared with what that file holds, never to the replaced file that no other
    process reads (saves there were acknowledged and lost)."""
    session = toolset().session(workspace=tmp_path, session_id="w")
    for n in (1, 2, 3):
        assert (await session.call("add", {"n": n})).ok
    assert stored(tmp_path, "w") == [1, 2, 3]
    path = default_state_path(tmp_path)
    other = SQLiteStateStore(tmp_path / "other.db")
    other.save("w", {"test.files.tally": json.dumps({"items": [7]})})
    other.close()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    os.replace(tmp_path / "other.db", path)
    # The save finds the file replaced, compares with what the new file holds, and
    # refuses, as for another process's change; the call after starts from that file.
    refused = await session.call("add", {"n": 4})
    assert "changed by another process" in refused.text, refused.text
    assert (await session.call("add", {"n": 4})).text == "2"
    assert (await session.call("add", {"n": 5})).text == "3"
    assert await items_of(session) == [7, 4, 5]
    assert stored(tmp_path, "w") == [7, 4, 5]
    await session.aclose()


async def test_a_store_file_deleted_while_open_is_made_again_by_the_next_save(
    tmp_path: Path,
) -> None:
    """``state.db`` and its ``-wal``/``-shm`` deleted while a session has them open:
    the next save makes a new file at the path, which other processes read."""
    store = SQLiteStateStore(default_state_path(tmp_path))
    store.save("w", {"test.files.tally": json.dumps({"items": [1]})})
    path = default_state_path(tmp_path)
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink()
    assert store.save("w", {"test.files.tally": json.dumps({"items": [2]})}) == {
        "test.files.tally": 1
    }
    store.close()
    assert stored(tmp_path, "w") == [2]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()


OTHER_WRITER = textwrap.dedent(
    """
    import sys
    from toolweave.state import SQLiteStateStore
    store = SQLiteStateStore(sys.argv[1])
    print(store.load("s")["k"].value)
    print(store.save("s", {"k": "other"}, expected={"k": int(sys.argv[2])})["k"])
    store.close()
    """
)


@pytest.mark.parametrize("deleted", [("-wal",), ("-shm",), ("-wal", "-shm")])
def test_a_wal_or_shm_file_deleted_while_open_forks_no_history(
    tmp_path: Path, deleted: tuple[str, ...]
) -> None:
    """``state.db-wal`` or ``-shm`` deleted while a store has them open (a clean-up
    script): SQLite went on using the deleted files, so another process saw none of
    this store's saves (or failed to open the store), and this store's compare-and-set
    passed over the other process's save and overwrote it. The store now notices at its
    next use, closes that connection (which writes what it committed into the database
    file) and opens the files at the path: every acknowledged save is kept and the
    compare-and-set holds again."""
    path = tmp_path / "state.db"
    store = SQLiteStateStore(path)
    for n in (1, 2, 3):
        store.save("s", {"k": str(n)})
    for suffix in deleted:
        Path(f"{path}{suffix}").unlink()
    assert store.load("s") == {"k": StoredState("3", 3)}
    assert store.save("s", {"k": "4"}, expected={"k": 3}) == {"k": 4}
    other = subprocess.run(
        [sys.executable, "-c", OTHER_WRITER, str(path), "4"],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    assert other.stdout.split() == ["4", "5"], other.stderr
    with pytest.raises(StateConflict):
        store.save("s", {"k": "5"}, expected={"k": 4})
    assert store.load("s") == {"k": StoredState("other", 5)}
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert conn.execute("SELECT value, version FROM state").fetchall() == [("other", 5)]
    conn.close()
