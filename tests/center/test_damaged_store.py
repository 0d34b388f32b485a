"""A center store with damaged rows (a record that is JSON but not an object, a flag or
a change event that is not JSON, a version counter that is not a count): one bad row
never hides the others nor stops the center's thread, the center fails closed on what
it cannot read (keeping what it last read), reports it in its health, and a damaged
version counter is a CenterError saying the store is damaged."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from toolweave import CenterError, ErrorKind, Session, ToolSet
from toolweave.center import AuditEntry, Center, ChangeEvent, SQLiteCenterStore, ToolRecord
from toolweave.center._model import CallRow
from toolweave.center._store import CenterStore, StoreSnapshot
from toolweave.cli import app
from typer.testing import CliRunner

PREFIX = "toolweave:center"


def eventually(predicate: Callable[[], Any], timeout: float = 20.0) -> None:
    """Wait until ``predicate()`` holds (the center's thread acts on its own)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


class Raw:
    """Writes a center's store behind its back, as a bad restore or a buggy writer of
    another version would, for the SQLite file and for Redis alike."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.redis: Any = None
        if url.startswith("redis"):
            import redis

            self.redis = redis.Redis.from_url(url)

    def close(self) -> None:
        if self.redis is not None:
            self.redis.close()

    @contextlib.contextmanager
    def _sql(self) -> Iterator[sqlite3.Connection]:
        with contextlib.closing(sqlite3.connect(self.url)) as conn, conn:
            yield conn

    def record(self, name: str) -> Any:
        if self.redis is not None:
            return self.redis.hget(f"{PREFIX}:tools", name)
        with self._sql() as conn:
            return conn.execute("SELECT record FROM tools WHERE name = ?", (name,)).fetchone()[0]

    def set_record(self, name: str, raw: Any) -> None:
        if self.redis is not None:
            self.redis.hset(f"{PREFIX}:tools", name, raw)
        else:
            with self._sql() as conn:
                conn.execute("UPDATE tools SET record = ? WHERE name = ?", (raw, name))
        self.bump()

    def set_flag(self, key: tuple[str, str, str], raw: Any) -> None:
        if self.redis is not None:
            self.redis.hset(f"{PREFIX}:flags", "\x1f".join(key), raw)
        else:
            with self._sql() as conn:
                conn.execute("INSERT OR REPLACE INTO flags VALUES (?, ?, ?, ?)", (*key, raw))
        self.bump()

    def set_version(self, raw: Any) -> None:
        if self.redis is not None:
            self.redis.set(f"{PREFIX}:version", raw)
        else:
            with self._sql() as conn:
                conn.execute("UPDATE meta SET value = ? WHERE key = 'version'", (raw,))

    def bump(self) -> None:
        """What every writer does after a change: the centers look again."""
        if self.redis is not None:
            version = self.redis.incr(f"{PREFIX}:version")
            self.redis.publish(f"{PREFIX}:feed", version)
        else:
            with self._sql() as conn:
                conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'version'")


@pytest.fixture
def raw(center_url: str) -> Iterator[Raw]:
    writer = Raw(center_url)
    yield writer
    writer.close()


ARGUMENTS: dict[str, dict[str, str]] = {
    "echo": {"text": "x"},
    "boom": {},
    "look": {"path": "p"},
    "write": {"path": "p", "text": "t"},
}


def refused(session: Session, name: str) -> str:
    """The refusal's text of a call to ``name`` (``""``: the call ran)."""
    result = session.sync().call(name, ARGUMENTS[name])
    if result.error is None or result.error.kind is not ErrorKind.UNAVAILABLE:
        return ""
    return result.text


def alive(center: Center) -> bool:
    return any(
        t.name == f"toolweave-center {center.store.describe()}" for t in threading.enumerate()
    )


# -- one damaged row --------------------------------------------------------------------


def test_one_damaged_record_never_stops_the_center_following_its_store(
    center_url: str, raw: Raw, toolset: ToolSet
) -> None:
    """The prober's case: a record that is JSON but not an object used to kill the
    center's thread for good (health still said healthy, and an operator's disable from
    another process never arrived). Now the row is left out and named, the thread goes
    on, the other rows are read, and a repair is noticed."""
    center = Center.open(center_url, poll_interval=0.05)
    try:
        session = toolset.session()
        center.attach(session)
        good = raw.record("echo")
        raw.set_record("echo", "[]")
        eventually(lambda: "'echo'" in center.health().degraded)
        degraded = center.health().degraded
        assert "not a JSON object but an array" in degraded, degraded
        assert alive(center)
        assert session.sync().call("echo", {"text": "x"}).text == "v1:x"  # as last read
        # Another process's change to another tool still arrives.
        with Center.open(center_url) as other:
            other.disable("look", actor="ops", reason="emergency brake")
        eventually(lambda: "emergency brake" in refused(session, "look"))
        # The repair is noticed, and so is a disable of the repaired tool.
        raw.set_record("echo", good)
        eventually(lambda: center.health().degraded == "")
        with Center.open(center_url) as other:
            other.disable("echo", actor="ops", reason="second brake")
        eventually(lambda: "second brake" in refused(session, "echo"))
        assert alive(center)
    finally:
        center.close()


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ("{not json", "not JSON"),
        ('"a string"', "not a JSON object but a string"),
        ("null", "not a JSON object but null"),
        ('{"name": "echo"}', "its 'source' is not a name"),
        ('{"name": "boom", "source": "host"}', "it is the record of 'boom'"),
        ('{"name": "echo", "source": "host", "groups": "abc"}', "its 'groups' is not a list"),
        ('{"name": "echo", "source": "host", "read_only": "no"}', "its 'read_only' is a string"),
        ('{"name": "echo", "source": "host", "endpoint": []}', "its 'endpoint' is an array"),
        ('{"name": "echo", "source": "host", "roles": [1]}', "its 'roles' is not a list"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_each_kind_of_malformed_record_is_left_out_and_named(
    center_path: Path, toolset: ToolSet, stored: Any, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Center.open(center_path) as center:
        center.register_toolset(toolset)
    Raw(str(center_path)).set_record("echo", stored)
    with Center.open(center_path) as center:
        assert sorted(center.snapshot.records) == ["boom", "look", "write"]
        degraded = center.health().degraded
        assert f"the record of tool 'echo' ({why}" in degraded, degraded
    assert any("'echo'" in r.message and why in r.message for r in caplog.records)


# -- fail-closed ----------------------------------------------------------------------------


def test_a_tool_switched_off_stays_off_while_its_rows_cannot_be_read(
    center_url: str, raw: Raw, toolset: ToolSet
) -> None:
    """What the center last read of a damaged record or flag holds: a disabled tool
    never comes back because its row was damaged."""
    center = Center.open(center_url, poll_interval=0.05)
    try:
        session = toolset.session()
        center.attach(session)
        center.disable("boom", reason="known bad")
        center.set_roles("write", ["admin"])
        raw.set_record("boom", "[]")
        raw.set_flag(("tool", "boom", "status"), "{oops")
        raw.set_flag(("tool", "write", "roles"), '{"roles": "admin"}')
        eventually(lambda: "flag tool/write/roles" in center.health().degraded)
        assert "known bad" in refused(session, "boom")
        denied = session.sync().call("write", {"path": "p", "text": "t"})
        assert denied.error is not None
        assert denied.error.kind is ErrorKind.PERMISSION_DENIED
        assert center.tool("boom").status.value == "disabled"
        assert [d["function"]["name"] for d in session.definitions()] == ["echo", "look"]
    finally:
        center.close()


def test_a_center_that_never_read_a_row_fails_closed(
    center_url: str, raw: Raw, toolset_factory: Callable[[], ToolSet]
) -> None:
    """A center opened on a store with damaged rows has nothing it read before: a
    status it cannot read switches its tool off (a status is only stored for what an
    operator switched off), a role whitelist it cannot read admits no role. An operator
    can still switch, and unregister, a tool whose record cannot be read."""
    with Center.open(center_url) as center:
        center.register_toolset(toolset_factory())
    raw.set_flag(("tool", "look", "status"), "[1, 2]")
    raw.set_flag(("tool", "write", "roles"), "7")
    with Center.open(center_url, poll_interval=0.05) as center:
        session = toolset_factory().session()
        center.attach(session, role="admin")
        assert "its status in the center store cannot be read" in refused(session, "look")
        denied = session.sync().call("write", ARGUMENTS["write"])
        assert denied.error is not None
        assert denied.error.kind is ErrorKind.PERMISSION_DENIED
        assert session.sync().call("echo", {"text": "x"}).text == "v1:x"
    raw.set_record("boom", "[]")
    # The brake works on a tool whose record cannot be read (the command line shows
    # the tool's state after the change).
    result = CliRunner().invoke(
        app, ["center", "disable", "boom", "--reason", "while damaged", "--center", center_url]
    )
    assert (result.exit_code, result.stdout.strip()) == (0, "disabled tool boom"), result.stderr
    with Center.open(center_url) as ops:  # an operator's command: no session of its own
        state = ops.tool("boom")
        assert (state.status.value, state.reason) == ("disabled", "while damaged")
        with pytest.raises(CenterError, match=r"record of tool 'boom' .* cannot be read"):
            ops.set_roles("boom", ["admin"])
        assert ops.enable("boom", actor="ops")
        state = ops.tool("boom")
        assert state.status.value == "disabled"
        assert "its record in the center store cannot be read (not a JSON object" in state.reason
        ops.unregister("boom", actor="ops", reason="damaged")
        (removed,) = ops.audit(type="change", outcome="unregister", tool="boom")
        assert removed.before is None
        degraded = ops.health().degraded  # the two flags remain damaged
        assert "flag tool/look/status (not a status but an array)" in degraded, degraded
        assert "flag tool/write/roles (not a role whitelist but a number)" in degraded
        assert "'boom'" not in degraded


def test_a_tool_whose_groups_cannot_be_read_is_off(
    center_url: str, raw: Raw, toolset_factory: Callable[[], ToolSet]
) -> None:
    """A groups flag the center never read may put the tool in a disabled group: the
    tool is off until the flag can be read again."""
    with Center.open(center_url) as center:
        center.register_toolset(toolset_factory())
    raw.set_flag(("tool", "look", "groups"), "7")
    with Center.open(center_url, poll_interval=0.05) as center:
        session = toolset_factory().session()
        center.attach(session, role="admin")
        assert "cannot be read" in refused(session, "look")
        assert session.sync().call("echo", {"text": "x"}).text == "v1:x"


def test_a_read_only_center_refuses_a_tool_whose_record_it_cannot_read(
    center_path: Path, toolset_factory: Callable[[], ToolSet]
) -> None:
    """A center that cannot register (its store is read-only) cannot repair a damaged
    record either: the tool is refused, never run unchecked."""
    with Center.open(center_path) as center:
        center.register_toolset(toolset_factory())
        center.disable("look", reason="off")
    Raw(str(center_path)).set_record("boom", "[]")
    with Center(SQLiteCenterStore(center_path, readonly=True)) as center:
        session = toolset_factory().session()
        center.attach(session)
        assert "the center cannot read its record" in refused(session, "boom")
        assert "off" in refused(session, "look")
        assert session.sync().call("echo", {"text": "x"}).text == "v1:x"
        assert [d["function"]["name"] for d in session.definitions()] == ["echo", "write"]


# -- repairs ----------------------------------------------------------------------------


def test_registering_or_changing_again_repairs_a_damaged_row(
    center_url: str, raw: Raw, toolset_factory: Callable[[], ToolSet]
) -> None:
    """A registration writes over a damaged record of its own source, and an operation
    over a damaged flag (even one that leaves the flag unset): the center is healthy
    again, and the audit says what was replaced."""
    with Center.open(center_url) as center:
        center.register_toolset(toolset_factory())
        center.disable("boom", reason="x")
    raw.set_record("echo", "[]")
    raw.set_flag(("tool", "boom", "status"), "{oops")
    with Center.open(center_url) as center:
        assert "'echo'" in center.health().degraded
        center.attach(toolset_factory().session())  # registers echo again
        assert center.enable("boom", actor="ops", reason="repair")
        assert center.health().degraded == ""
        assert center.tool("echo").record.versions == ("1", "2")
        assert center.tool("boom").status.value == "enabled"
        (update,) = center.audit(type="change", tool="echo", outcome="update")
        assert update.before is None
        assert update.reason is not None
        assert "could not be read (not a JSON object" in update.reason


def test_a_damaged_record_keeps_its_name_for_its_source(center_url: str, raw: Raw) -> None:
    """A registration from another source never takes a name whose record is
    damaged (the source is still known: SQLite's column, or the record's own field)."""
    with Center.open(center_url) as center:
        center.register([ToolRecord(name="deploy", source="pack:ops")])
    raw.set_record("deploy", '{"name": "deploy", "source": "pack:ops", "groups": 1}')
    with (
        Center.open(center_url) as center,
        pytest.raises(CenterError, match="already registered by pack:ops"),
    ):
        center.register([ToolRecord(name="deploy", source="mcp:evil")])


# -- the change feed ------------------------------------------------------------------------


def test_a_change_event_that_cannot_be_read_is_skipped(
    center_url: str, raw: Raw, caplog: pytest.LogCaptureFixture
) -> None:
    with Center.open(center_url) as center:
        center.register([ToolRecord(name="a", source="api"), ToolRecord(name="b", source="api")])
        if raw.redis is not None:
            raw.redis.zremrangebyscore(f"{PREFIX}:changes", 1, 1)
            raw.redis.zadd(f"{PREFIX}:changes", {b"[not an event": 1})
        else:
            with raw._sql() as conn:
                conn.execute("UPDATE changes SET detail = '{oops' WHERE version = 1")
        assert [e.version for e in center.changes_since(0)] == [2]
    assert any("change event 1 cannot be read" in r.message for r in caplog.records)


def test_subscribers_read_the_state_again_after_an_event_that_cannot_be_read(
    center_path: Path,
) -> None:
    seen: list[ChangeEvent] = []
    center = Center.open(center_path, poll_interval=3600)
    try:
        center.register([ToolRecord(name="a", source="api")])
        center.subscribe(seen.append)
        with Center.open(center_path) as other:
            other.disable("a", reason="one")
            other.enable("a", reason="two")
        with contextlib.closing(sqlite3.connect(center_path)) as conn, conn:
            conn.execute("UPDATE changes SET detail = '[' WHERE version = 2")
        assert center.refresh()
        assert [(e.kind, e.version) for e in seen] == [("resync", 3), ("flag", 3)]
    finally:
        center.close()


# -- the center's thread ---------------------------------------------------------------------


class Flaky(CenterStore):
    """An SQLite store that raises ``fault`` (when set) from every read of its state,
    like a store with a bug, or a driver raising what it should not."""

    def __init__(self, path: Path) -> None:
        self.inner = SQLiteCenterStore(path)
        self.fault: Exception | None = None
        self.looks = 0
        """How many times the center looked at the version."""

    def _check(self) -> None:
        if self.fault is not None:
            raise self.fault

    def describe(self) -> str:
        return self.inner.describe()

    def version(self) -> int:
        self.looks += 1
        self._check()
        return self.inner.version()

    def load(self) -> StoreSnapshot:
        self._check()
        return self.inner.load()

    def changes_since(self, version: int) -> list[ChangeEvent]:
        return self.inner.changes_since(version)

    def register(self, records: Sequence[ToolRecord], *, actor: str) -> list[ChangeEvent]:
        return self.inner.register(records, actor=actor)

    def unregister(self, name: str, *, actor: str, reason: str) -> list[ChangeEvent]:
        return self.inner.unregister(name, actor=actor, reason=reason)

    def update_flag(self, *args: Any, **kwargs: Any) -> ChangeEvent | None:
        return self.inner.update_flag(*args, **kwargs)

    def append_calls(self, rows: Sequence[CallRow]) -> None:
        self._check()
        self.inner.append_calls(rows)

    def append_audit(self, entries: Sequence[AuditEntry]) -> None:
        self.inner.append_audit(entries)

    def query_audit(self, **kwargs: Any) -> list[AuditEntry]:
        return self.inner.query_audit(**kwargs)

    def count_audit(self, *, type: str | None = None) -> int:
        return self.inner.count_audit(type=type)

    def close(self) -> None:
        self.inner.close()


def test_the_center_thread_survives_a_store_that_raises(
    center_path: Path, toolset: ToolSet
) -> None:
    """Whatever a round of the thread raises is logged and reported in the health; the
    last view holds (a disabled tool stays disabled), the call audit waits, and the next
    rounds try again: when the store reads again the center takes every change made
    meanwhile and writes the audit."""
    store = Flaky(center_path)
    center = Center(store, poll_interval=0.05)
    try:
        session = toolset.session()
        center.attach(session)
        center.disable("boom", reason="known bad")
        store.fault = AttributeError("'list' object has no attribute 'get'")
        eventually(lambda: "AttributeError" in center.health().degraded)
        assert "'list' object has no attribute 'get'" in center.health().degraded
        assert "known bad" in refused(session, "boom")
        assert session.sync().call("echo", {"text": "x"}).text == "v1:x"
        eventually(lambda: "AttributeError" in center.health().audit_error)
        with Center.open(center_path) as other:
            other.disable("echo", actor="ops", reason="while it was down")
        looks = store.looks
        eventually(lambda: store.looks >= looks + 3)  # several rounds fail, none stops it
        assert alive(center)
        store.fault = None
        eventually(lambda: center.health().degraded == "" and center.health().audit_pending == 0)
        assert "while it was down" in refused(session, "echo")
        assert center.health().audit_error == ""
        center.flush_audit()
        assert center.store.count_audit(type="call") == 3
    finally:
        center.close()


# -- the version counter -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ("DELETE FROM meta", "has no version row"),
        ("UPDATE meta SET value = 'abc'", "holds a string ('abc') as its version"),
        ("UPDATE meta SET value = 1.5", "holds a number ('1.5') as its version"),
        ("UPDATE meta SET value = -3", "holds a number ('-3') as its version"),
    ],
)
def test_a_damaged_version_row_is_a_center_error(
    tmp_path: Path, damage: str, why: str, toolset: ToolSet
) -> None:
    path = tmp_path / "center.db"
    with Center.open(path) as center:
        center.register_toolset(toolset)
    running = Center.open(path, poll_interval=3600)
    try:
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            conn.execute(damage)
        # While running: degraded, the last view kept, changes refused.
        assert running.refresh() is False
        assert why in running.health().degraded
        with pytest.raises(CenterError, match=re.escape(f"is damaged: it {why}")):
            running.disable("echo")
        assert running.tool("echo").status.value == "enabled"
    finally:
        running.close()
    expected = re.escape(f"{path} is damaged: it {why}") + ".*restore it from a backup"
    with pytest.raises(CenterError, match=expected):
        Center.open(path)
    result = CliRunner().invoke(app, ["center", "status", "--center", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: "), result.stderr
    assert "is damaged" in result.stderr
    assert "bug" not in result.stderr


@pytest.mark.parametrize("damage", ["text", "wrong type"])
def test_a_damaged_version_key_on_redis_is_a_center_error(
    redis_url: str, toolset: ToolSet, damage: str
) -> None:
    import redis

    key = f"{PREFIX}:version"
    running = Center.open(redis_url, poll_interval=3600)
    try:
        running.register_toolset(toolset)
        with redis.Redis.from_url(redis_url) as client:
            if damage == "text":
                client.set(key, "abc")
            else:
                client.delete(key)
                client.hset(key, "x", 1)
        why = "holds 'abc', not a count" if damage == "text" else "WRONGTYPE"
        assert running.refresh() is False
        assert why in running.health().degraded
        with pytest.raises(CenterError, match=re.escape(why)):
            running.disable("echo")
        with pytest.raises(CenterError, match=re.escape(why)):
            Center.open(redis_url)
    finally:
        running.close()
