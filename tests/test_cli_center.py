"""`toolweave center ...`, `toolweave audit`, and `--center` on `call`, `tools` and
`serve`: JSON output, one-line errors, and a disable made through the CLI reaching a
serving process and a Python session in other processes within a second.

Commands run through typer's CliRunner against real SQLite files (each opens, changes
and closes the store as the real command does); the cross-process tests run the
installed console script and real host processes.
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest
from toolweave import Session, ToolSet, ToolSetBuilder, tool
from toolweave.center import Center
from toolweave.cli import app
from typer.testing import CliRunner

runner = CliRunner()

INSTALLED = {ep.name for ep in entry_points(group="toolweave.packs")}
needs_fs = pytest.mark.skipif("fs" not in INSTALLED, reason="toolweave-fs is not installed")

CENTER_COMMANDS = ["status", "tools", "enable", "disable", "pin", "rollback", "rollout", "roles"]
CENTER_COMMANDS += ["breaker", "approve"]


@tool(id="echo", version="1", blocking=False)
def echo_v1(text: str) -> str:
    """Echo the text (first behaviour)."""
    return f"v1:{text}"


@tool(id="echo", version="2", blocking=False)
def echo_v2(text: str) -> str:
    """Echo the text (second behaviour)."""
    return f"v2:{text}"


@tool(blocking=False)
def boom() -> str:
    """Always fails."""
    raise RuntimeError("boom")


def make_toolset() -> ToolSet:
    builder = ToolSetBuilder()
    for fn in (echo_v1, echo_v2, boom):
        builder.add(fn)
    return builder.build({"tools": [{"id": "echo", "version": "1"}, {"id": "boom"}]})


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def run_json(*args: str) -> Any:
    """Run a command with --json; it must succeed and print one JSON document."""
    code, out, err = invoke(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def assert_one_line_error(stderr: str, *words: str) -> None:
    """An error is one 'error:' line (plus at most a hint), never a traceback."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert lines[0].startswith("error: "), stderr
    assert len(lines) <= 2
    assert all(line.startswith("hint: ") for line in lines[1:])
    for word in words:
        assert word in stderr, stderr


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A center store holding ``echo`` (versions 1 and 2, group ``g``) and ``boom``,
    named by TOOLWEAVE_CENTER."""
    path = tmp_path / "center.db"
    with Center.open(path) as center:
        center.register_toolset(make_toolset())
        center.set_groups("echo", ["g"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLWEAVE_CENTER", str(path))
    return path


@pytest.fixture
def session(store: Path) -> Iterator[tuple[Center, Session]]:
    """A session of role ``dev`` attached to the store, in this process."""
    center = Center.open(store)
    session = make_toolset().session()
    center.attach(session, role="dev")
    try:
        yield center, session
    finally:
        center.close()


def listed(session: Session) -> set[str]:
    return {d["name"] for d in session.definitions("neutral")}


def call(session: Session, name: str, arguments: str = "{}") -> Any:
    return anyio.run(session.call, name, arguments, "c1")


# -- help -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["center", c] for c in CENTER_COMMANDS] + [["audit"]])
def test_every_command_has_help_with_examples(command: list[str]) -> None:
    """`--help` works on every center command and shows examples of that command."""
    code, out, _ = invoke(*command, "--help")
    assert code == 0
    assert "--json" in out
    _, _, after = out.partition("Examples")
    examples = [line.strip() for line in after.splitlines() if "toolweave " in line]
    assert examples
    for example in examples:  # each on a line of its own
        assert example.startswith(f"toolweave {' '.join(command)}"), example
        assert example.count("toolweave ") == 1, example


def test_root_help_names_center_and_audit() -> None:
    """The root help lists the center group and audit; the group lists its commands."""
    code, out, _ = invoke("--help")
    assert code == 0
    assert "center" in out
    assert "audit" in out
    code, out, _ = invoke("center", "--help")
    assert code == 0
    for command in CENTER_COMMANDS:
        assert command in out


# -- reading ------------------------------------------------------------------------


def test_status_and_tools_json(store: Path) -> None:
    """`status` and `tools` describe the store and every tool it holds."""
    status = run_json("center", "status")
    assert status["store"] == str(store)
    assert status["tools"] == 2
    assert status["statuses"] == {"enabled": 2}
    assert status["readonly"] is False
    assert status["switched_off"] == []
    assert status["audit_entries"] == 3  # two registrations, one change of groups
    tools = {t["name"]: t for t in run_json("center", "tools")}
    assert set(tools) == {"boom", "echo"}
    assert tools["echo"]["versions"] == ["1", "2"]
    assert tools["echo"]["groups"] == ["g"]
    assert tools["echo"]["source"] == "host"
    assert (tools["echo"]["status"], tools["echo"]["roles"]) == ("enabled", None)
    code, out, _ = invoke("center", "tools")
    assert code == 0
    assert "echo" in out
    assert "enabled" in out


def test_the_default_store_is_under_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --center or TOOLWEAVE_CENTER the commands use .toolweave/center.db of the
    workspace (--workspace, else the current directory)."""
    monkeypatch.delenv("TOOLWEAVE_CENTER", raising=False)
    monkeypatch.chdir(tmp_path)
    default = tmp_path / ".toolweave" / "center.db"
    with Center.open(default) as center:
        center.register_toolset(make_toolset())
    assert run_json("center", "status")["store"] == str(default)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, _, err = invoke("center", "status", "--workspace", str(elsewhere))
    assert code == 1
    assert_one_line_error(err, "no center store", str(elsewhere / ".toolweave" / "center.db"))
    assert not (elsewhere / ".toolweave").exists()  # reading never creates a store


def test_the_default_store_is_never_reached_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace (a cloned repository) whose .toolweave is a link to another center's
    folder: the commands refuse it with one error line and change nothing there."""
    monkeypatch.delenv("TOOLWEAVE_CENTER", raising=False)
    other = tmp_path / "other" / ".toolweave"
    other.parent.mkdir()
    with Center.open(other / "center.db") as center:
        center.register_toolset(make_toolset())
    before = (other / "center.db").read_bytes()
    cloned = tmp_path / "cloned"
    cloned.mkdir()
    (cloned / ".toolweave").symlink_to(other)
    monkeypatch.chdir(cloned)
    for command in (["center", "status"], ["center", "disable", "echo"]):
        code, _, err = invoke(*command)
        assert code == 1, err
        assert_one_line_error(err, "symbolic link", "--center")
    assert (other / "center.db").read_bytes() == before


# -- enable and disable -------------------------------------------------------------


def test_disable_and_enable_a_tool(session: tuple[Center, Session]) -> None:
    """A disable through the CLI hides the tool from an attached session and its calls
    answer unavailable with the reason; it is audited with the actor; enable undoes it."""
    center, live = session
    data = run_json("center", "disable", "echo", "--reason", "incident 42", "--actor", "alice")
    assert data["changed"] is True
    assert (data["scope"], data["target"], data["tools"]) == ("tool", "echo", ["echo"])
    assert data["status"] == "disabled"
    center.refresh()
    assert "echo" not in listed(live)
    refused = call(live, "echo", '{"text": "x"}')
    assert refused.error.kind.value == "unavailable"
    assert "incident 42" in refused.error.message
    again = run_json("center", "disable", "echo", "--reason", "incident 42")
    assert again["changed"] is False
    [entry] = run_json("audit", "--type", "change", "--tool", "echo", "--outcome", "disable")
    assert (entry["actor"], entry["reason"]) == ("alice", "incident 42")
    assert entry["after"]["status"] == "disabled"
    data = run_json("center", "enable", "echo")
    assert (data["changed"], data["status"]) == (True, "enabled")
    [entry] = run_json("audit", "--type", "change", "--outcome", "enable")
    assert entry["actor"] == getpass.getuser()  # the default actor: the OS user
    center.refresh()
    assert "echo" in listed(live)


def test_disable_a_group_and_a_source(session: tuple[Center, Session]) -> None:
    """--group and --source switch every tool of theirs; a tool stays off while its
    group is off, whatever is done to the tool itself."""
    center, live = session
    data = run_json("center", "disable", "--group", "g")
    assert (data["scope"], data["target"], data["tools"]) == ("group", "g", ["echo"])
    enabled = run_json("center", "enable", "echo")
    assert (enabled["changed"], enabled["status"]) == (False, "disabled")
    _, out, _ = invoke("center", "enable", "echo")
    assert "stays disabled" in out
    assert "group g" in out
    data = run_json("center", "disable", "--source", "host", "--reason", "maintenance")
    assert data["tools"] == ["boom"]
    center.refresh()
    assert listed(live) == set()
    status = run_json("center", "status")
    assert {(s["scope"], s["target"]) for s in status["switched_off"]} == {
        ("group", "g"),
        ("source", "host"),
    }
    assert run_json("center", "enable", "--source", "host")["tools"] == ["boom"]
    assert run_json("center", "enable", "--group", "g")["tools"] == ["echo"]
    center.refresh()
    assert listed(live) == {"echo", "boom"}


def test_enable_and_disable_need_exactly_one_target(store: Path) -> None:
    """No target, or a tool and a group at once, is a usage error."""
    for args in (["center", "disable"], ["center", "disable", "echo", "--group", "g"]):
        code, _, err = invoke(*args)
        assert code == 2
        assert_one_line_error(err, "exactly one")


# -- versions -----------------------------------------------------------------------


def test_pin_and_rollback(session: tuple[Center, Session]) -> None:
    """A pin changes the behaviour a running session gets; rollback returns to the pin
    before, then to the configured version; nothing left to roll back is an error."""
    center, live = session
    data = run_json("center", "pin", "echo", "2")
    assert data == {"tool": "echo", "version": "2", "cohort": None, "changed": True,
                    "pins": {"*": "2"}}  # fmt: skip
    center.refresh()
    assert call(live, "echo", '{"text": "x"}').text == "v2:x"
    assert run_json("center", "pin", "echo", "1", "--cohort", "beta")["pins"] == {
        "*": "2",
        "beta": "1",
    }
    assert run_json("center", "rollback", "echo", "--cohort", "beta")["pins"] == {"*": "2"}
    data = run_json("center", "rollback", "echo")
    assert (data["version"], data["pins"]) == (None, {})
    center.refresh()
    assert call(live, "echo", '{"text": "x"}').text == "v1:x"
    code, _, err = invoke("center", "rollback", "echo")
    assert code == 1
    assert_one_line_error(err, "no pin to roll back")


def test_pin_an_unknown_version_or_tool(store: Path) -> None:
    """An unknown version names the known ones; an unknown tool suggests a close name."""
    code, _, err = invoke("center", "pin", "echo", "9")
    assert code == 1
    assert_one_line_error(err, "no version '9'", "1, 2")
    code, _, err = invoke("center", "pin", "ecko", "1")
    assert code == 1
    assert_one_line_error(err, "no tool named 'ecko'", "did you mean echo")


def test_rollout_widen_narrow_abort(store: Path) -> None:
    """A rollout is started, widened, narrowed and aborted; bad arguments are usage errors."""
    data = run_json("center", "rollout", "echo", "2", "10")
    assert data == {"tool": "echo", "changed": True, "rollout": {"version": "2", "percent": 10.0}}
    assert run_json("center", "rollout", "echo", "2", "50")["rollout"]["percent"] == 50.0
    code, out, _ = invoke("center", "rollout", "echo", "2", "20")
    assert (code, "was 50 %" in out) == (0, True)
    assert run_json("center", "tools")[1]["rollout"] == {"version": "2", "percent": 20.0}
    data = run_json("center", "rollout", "echo", "--abort", "--reason", "slow")
    assert (data["changed"], data["rollout"]) == (True, None)
    assert run_json("center", "rollout", "echo", "--abort")["changed"] is False
    for args in (["echo", "2"], ["echo", "2", "10", "--abort"], ["echo"]):
        code, _, err = invoke("center", "rollout", *args)
        assert code == 2
        assert_one_line_error(err)
    code, _, err = invoke("center", "rollout", "echo", "2", "150")
    assert code == 1
    assert_one_line_error(err, "0-100")


def test_a_rollout_reaches_the_sessions_in_its_buckets(store: Path) -> None:
    """At 50 % some of forty sessions run version 2 and the others version 1, each by
    the center's own bucket of its id."""
    from toolweave.center import bucket

    run_json("center", "rollout", "echo", "2", "50")
    center = Center.open(store)
    try:
        seen: dict[str, bool] = {}
        for _ in range(40):
            live = make_toolset().session()
            center.attach(live)
            text = call(live, "echo", '{"text": "x"}').text
            seen[live.session_id] = text == "v2:x"
        assert set(seen.values()) == {True, False}
        assert all(v2 == (bucket("echo", sid) < 5000) for sid, v2 in seen.items())
    finally:
        center.close()


# -- roles and breakers ----------------------------------------------------------------


def test_roles_show_set_and_everyone(session: tuple[Center, Session]) -> None:
    """A whitelist without the session's role hides the tool and refuses its calls."""
    center, live = session
    assert run_json("center", "roles", "echo") == {"tool": "echo", "roles": None, "changed": False}
    data = run_json("center", "roles", "echo", "ops", "admin")
    assert data == {"tool": "echo", "roles": ["admin", "ops"], "changed": True}
    center.refresh()
    assert "echo" not in listed(live)
    assert call(live, "echo", '{"text": "x"}').error.kind.value == "permission_denied"
    assert run_json("center", "roles", "echo", "--everyone")["roles"] is None
    code, _, err = invoke("center", "roles", "echo", "admin", "--everyone")
    assert code == 2
    assert_one_line_error(err, "--everyone")


def test_breaker_show_configure_reset(session: tuple[Center, Session]) -> None:
    """Breaker settings are set (partly, keeping the rest), shown and dropped; an open
    circuit shows with its time and --reset closes it."""
    center, live = session
    data = run_json("center", "breaker")
    assert data == {
        "defaults": {"failures": 5, "window": 30.0, "cooldown": 30.0, "slow_ms": None},
        "breakers": {},
    }
    data = run_json("center", "breaker", "boom", "--failures", "2", "--window", "60")
    assert data["changed"] is True
    assert data["settings"] == {"failures": 2, "window": 60.0, "cooldown": 30.0, "slow_ms": None}
    data = run_json("center", "breaker", "boom", "--cooldown", "120")
    assert data["settings"] == {"failures": 2, "window": 60.0, "cooldown": 120.0, "slow_ms": None}
    center.refresh()
    for _ in range(2):
        assert call(live, "boom").error.kind.value == "execution_error"
    assert call(live, "boom").error.kind.value == "unavailable"  # open: fails fast
    center.flush()  # the switch is written by the center's thread; now, for the CLI
    data = run_json("center", "breaker")["breakers"]["boom"]
    assert data["state"] == "open"
    assert data["until"] > time.time() + 60
    assert run_json("center", "tools")[0]["status"] == "circuit_open"
    data = run_json("center", "breaker", "boom", "--reset", "--reason", "fixed")
    assert (data["changed"], data["state"]) == (True, "closed")
    center.refresh()
    assert call(live, "boom").error.kind.value == "execution_error"  # closed again
    data = run_json("center", "breaker", "boom", "--default")
    assert (data["changed"], data["settings"]) == (True, None)
    assert run_json("center", "breaker")["breakers"] == {}


def test_breaker_argument_errors(store: Path) -> None:
    """--reset with thresholds, an operation without a target, or an unknown tool fail in
    one line."""
    for args in (["boom", "--reset", "--failures", "3"], ["--reset"], ["--default"]):
        code, _, err = invoke("center", "breaker", *args)
        assert code == 2
        assert_one_line_error(err)
    code, _, err = invoke("center", "breaker", "nope", "--failures", "3")
    assert code == 1
    assert_one_line_error(err, "no tool named 'nope'")


# -- audit ----------------------------------------------------------------------------------


def test_audit_filters(session: tuple[Center, Session]) -> None:
    """Call entries are filtered by session, tool, outcome, type, time and limit."""
    center, live = session
    call(live, "echo", '{"text": "a"}')
    call(live, "boom")
    call(live, "echo", '{"text": "b"}')
    center.flush_audit()
    calls = run_json("audit", "--type", "call")
    assert [e["tool"] for e in calls] == ["echo", "boom", "echo"]  # newest first
    assert {(e["session"], e["role"]) for e in calls} == {(live.session_id, "dev")}
    [failed] = run_json("audit", "--outcome", "error")
    assert (failed["tool"], failed["error_kind"]) == ("boom", "execution_error")
    assert len(run_json("audit", "--tool", "echo", "--type", "call")) == 2
    assert len(run_json("audit", "--session", live.session_id, "--limit", "1")) == 1
    assert run_json("audit", "--session", "someone-else") == []
    assert len(run_json("audit", "--since", "10m", "--type", "call")) == 3
    future = datetime.fromtimestamp(time.time() + 3600).isoformat()
    assert run_json("audit", "--since", future) == []
    assert len(run_json("audit", "--until", future)) == 6  # 3 changes, 3 calls
    code, out, _ = invoke("audit")
    assert code == 0
    assert "execution_error" in out
    assert "register" in out


def test_audit_argument_errors(store: Path) -> None:
    """A time that is neither an age nor an ISO time, or an unknown type, is a usage error."""
    code, _, err = invoke("audit", "--since", "yesterday")
    assert code == 2
    assert_one_line_error(err, "not a time", "10m")
    code, _, err = invoke("audit", "--type", "calls")
    assert code == 2
    assert_one_line_error(err, "call or change")


def test_parse_time_forms() -> None:
    """Ages count back from now; ISO times with a zone are exact."""
    from toolweave.cli._audit import parse_time

    now = 1_000_000.0
    assert parse_time("10m", now) == now - 600
    assert parse_time("2h", now) == now - 7200
    assert parse_time("30s", now) == now - 30
    assert parse_time("1.5d", now) == now - 129600
    at = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    assert parse_time("2025-06-01T12:00:00+00:00") == at.timestamp()


# -- errors ---------------------------------------------------------------------------------


def test_store_problems_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged file, a foreign SQLite file, an unsupported URL and a missing store are
    one error line each, exit 1."""
    monkeypatch.delenv("TOOLWEAVE_CENTER", raising=False)
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"this is not a database" * 100)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    cases = [
        (str(damaged), "damaged"),
        (f"sqlite:///{foreign}", "not a toolweave center store"),
        ("memcached://localhost/0", "memcached://"),
    ]
    for url, words in cases:
        for args in (["center", "status"], ["center", "disable", "--group", "g"], ["audit"]):
            code, _, err = invoke(*args, "--center", url)
            assert code == 1, (args, url)
            assert_one_line_error(err, words)
    missing = tmp_path / "missing.db"
    for args in (["center", "status"], ["center", "disable", "echo"], ["audit"]):
        code, _, err = invoke(*args, "--center", str(missing))
        assert code == 1, args
        assert_one_line_error(err, "no center store")
    assert not missing.exists()


def test_a_locked_store_fails_a_change_in_one_line(store: Path) -> None:
    """While another process holds the write lock, a change fails with a clear message
    (after the store's busy timeout) and reading still works."""
    holder = sqlite3.connect(store, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        assert run_json("center", "status")["tools"] == 2
        code, _, err = invoke("center", "disable", "echo")
        assert code == 1
        assert_one_line_error(err, "locked")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run_json("center", "disable", "echo")["changed"] is True


def test_a_read_only_store_answers_reads_and_refuses_changes(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store this process may not write is opened read-only: status says so, reading
    works, a change is one error line."""
    real_access = os.access

    def access(path: Any, mode: int, **kwargs: Any) -> bool:
        if Path(path) == store and mode & os.W_OK:
            return False  # as for a file owned by someone else (root writes anything)
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    status = run_json("center", "status")
    assert (status["readonly"], status["tools"]) == (True, 2)
    assert len(run_json("audit")) == 3
    code, _, err = invoke("center", "disable", "echo")
    assert code == 1
    assert_one_line_error(err, "read-only")
    code, out, _ = invoke("center", "status")
    assert "read-only" in out


def test_role_without_a_center_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--role means nothing without a center: say so instead of ignoring it."""
    monkeypatch.delenv("TOOLWEAVE_CENTER", raising=False)
    monkeypatch.chdir(tmp_path)
    for args in (["tools", "--role", "dev"], ["call", "echo", "--role", "dev", "--no-ask"]):
        code, _, err = invoke(*args)
        assert code == 2, args
        assert_one_line_error(err, "need a center")


# -- call and tools under a center --------------------------------------------------------


@needs_fs
def test_tools_and_call_honour_the_center(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tools --center` registers the pack's tools and lists only what the role may see;
    `call --center` is refused and audited accordingly."""
    monkeypatch.delenv("TOOLWEAVE_CENTER", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello\n")
    db = str(tmp_path / "c.db")
    names = {d["name"] for d in run_json("tools", "--packs", "fs", "--center", db)}
    assert "read_file" in names
    assert "read_file" in {t["name"] for t in run_json("center", "tools", "--center", db)}
    run_json("center", "roles", "read_file", "admin", "--center", db)
    as_dev = {
        d["name"] for d in run_json("tools", "--packs", "fs", "--center", db, "--role", "dev")
    }
    assert as_dev == names - {"read_file"}
    as_admin = run_json("tools", "--packs", "fs", "--center", db, "--role", "admin")
    assert {d["name"] for d in as_admin} == names
    code, out, _ = invoke("call", "read_file", '{"path": "a.txt"}', "--center", db,
                          "--role", "dev", "--json")  # fmt: skip
    assert code == 1
    assert json.loads(out)["error"]["kind"] == "permission_denied"
    code, out, _ = invoke("call", "read_file", '{"path": "a.txt"}', "--center", db,
                          "--role", "admin", "--json")  # fmt: skip
    assert code == 0
    assert "hello" in json.loads(out)["text"]
    entries = run_json("audit", "--center", db, "--type", "call")
    assert [(e["role"], e["outcome"]) for e in entries] == [("admin", "ok"), ("dev", "error")]
    run_json("center", "disable", "--source", "pack:toolweave-fs", "--center", db)
    code, out, _ = invoke("tools", "--packs", "fs", "--center", db, "--table", "--role", "admin")
    assert code == 0
    assert "No tools for this role" in out


# -- across processes ------------------------------------------------------------------------


def _console_script() -> str:
    import shutil

    found = shutil.which("toolweave", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the toolweave console script is not installed next to this Python")
    return found


def _cli(*args: str, cwd: Path) -> float:
    """Run the real command to success; returns the monotonic time it exited."""
    done = subprocess.run(
        [_console_script(), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    exited = time.monotonic()
    assert done.returncode == 0, done.stderr
    return exited


PROPAGATION = 1.0
"""A change reaches every process within a second (measured from the CLI's exit)."""


@pytest.mark.slow
@needs_fs
def test_a_cli_disable_reaches_a_serving_process(tmp_path: Path) -> None:
    """`toolweave center disable` in one process takes the tool out of a running
    `toolweave serve --center` listing and sends tools/list_changed within a second;
    an enable brings it back the same way."""
    pytest.importorskip("mcp", reason="the mcp SDK is not installed")
    import mcp.types as types
    from mcp import Client, StdioServerParameters

    db = str(tmp_path / "center.db")
    (tmp_path / "a.txt").write_text("served\n")
    env = {k: v for k, v in os.environ.items() if k != "TOOLWEAVE_CENTER"}
    params = StdioServerParameters(
        command=_console_script(),
        args=["serve", "--packs", "fs", "--center", db, "--role", "agent"],
        cwd=str(tmp_path),
        env=env,
    )
    changes: list[float] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(time.monotonic())

    async def next_change(seen: int, exited: float) -> float:
        with anyio.fail_after(PROPAGATION + 5):
            while len(changes) == seen:  # noqa: ASYNC110 - the handler appends
                await anyio.sleep(0.01)
        return changes[seen] - exited

    async def cli(*args: str) -> float:
        return await anyio.to_thread.run_sync(lambda: _cli(*args, "--center", db, cwd=tmp_path))

    async def talk(errlog: TextIO) -> None:
        async with Client(params, mode="legacy", message_handler=on_message) as client:
            assert "read_file" in {t.name for t in (await client.list_tools()).tools}
            exited = await cli("center", "disable", "read_file", "--reason", "test")
            delay = await next_change(0, exited)
            assert delay < PROPAGATION, f"list_changed {delay:.2f} s after the CLI exited"
            names = {t.name for t in (await client.list_tools()).tools}
            assert "read_file" not in names
            assert "list_dir" in names
            refused = await client.call_tool("read_file", {"path": "a.txt"})
            assert refused.is_error
            assert refused.meta is not None
            assert refused.meta["toolweave/error_kind"] == "unavailable"
            exited = await cli("center", "enable", "read_file")
            delay = await next_change(1, exited)
            assert delay < PROPAGATION, f"list_changed {delay:.2f} s after the CLI exited"
            assert "read_file" in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("read_file", {"path": "a.txt"})
            assert "served" in "".join(getattr(c, "text", "") for c in result.content)

    with open(tmp_path / "serve.log", "w") as errlog:
        anyio.run(talk, errlog)
    with Center.open(db) as center:
        calls = center.audit(type="call")
    assert [(e.tool, e.role, e.error_kind) for e in calls] == [
        ("read_file", "agent", None),
        ("read_file", "agent", "unavailable"),
    ]


HOST = """
import sys, time
import anyio
from toolweave import load_packs
from toolweave.center import Center

center = Center.open(sys.argv[1])
session = load_packs(include=["fs"]).build().session(workspace=sys.argv[2])
center.attach(session, role="agent")
print("ready", flush=True)
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    if "read_file" not in {d["name"] for d in session.definitions("neutral")}:
        result = anyio.run(session.call, "read_file", '{"path": "a.txt"}', "c1")
        print("gone", result.error.kind.value if result.error else "ok", flush=True)
        break
    time.sleep(0.01)
center.close()
"""


def _lines(stream: TextIO, into: queue.Queue[tuple[float, str]]) -> None:
    for line in stream:
        into.put((time.monotonic(), line.strip()))


@pytest.mark.slow
@needs_fs
def test_a_cli_disable_reaches_a_python_session_in_another_process(tmp_path: Path) -> None:
    """A host process's attached session loses the tool from its listing, and its call
    answers unavailable, within a second of the CLI's disable exiting."""
    db = str(tmp_path / "center.db")
    (tmp_path / "a.txt").write_text("hello\n")
    script = tmp_path / "host.py"
    script.write_text(HOST)
    host = subprocess.Popen(
        [sys.executable, str(script), db, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[tuple[float, str]] = queue.Queue()
    assert host.stdout is not None
    threading.Thread(target=_lines, args=(host.stdout, lines), daemon=True).start()
    try:
        try:
            _, ready = lines.get(timeout=30)
        except queue.Empty:
            pytest.fail("the host process did not start")
        assert ready == "ready"
        exited = _cli("center", "disable", "read_file", "--center", db, cwd=tmp_path)
        try:
            seen, line = lines.get(timeout=PROPAGATION + 5)
        except queue.Empty:
            pytest.fail("the host process never saw the disable")
        assert line == "gone unavailable"
        assert seen - exited < PROPAGATION, f"seen {seen - exited:.2f} s after the CLI exited"
        assert host.wait(timeout=15) == 0
    finally:
        if host.poll() is None:
            host.kill()
        host.wait()
        assert host.stderr is not None
        host.stderr.close()
        host.stdout.close()


@pytest.mark.slow
def test_console_script_store_errors_have_no_traceback(tmp_path: Path) -> None:
    """As a real process, a damaged store is one error line and exit 1 (also under
    `call --center`, before anything runs)."""
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"\x00garbage" * 512)
    env = {**os.environ, "TOOLWEAVE_CENTER": str(damaged)}
    for args in (["center", "tools"], ["call", "nope", "--no-ask"]):
        done = subprocess.run(
            [_console_script(), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        assert_one_line_error(done.stderr, "damaged")


def test_center_serve_answers_and_refuses_exposure_without_a_token(tmp_path: Path) -> None:
    """`toolweave center serve` serves the admin API on a free port and stops on Ctrl-C;
    it refuses a non-loopback address without a token, in one line."""
    import signal

    import httpx2 as httpx

    script = _console_script()
    refused = subprocess.run(
        [script, "center", "serve", "--host", "0.0.0.0", "--center", str(tmp_path / "c.db")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1
    assert_one_line_error(refused.stderr, "refusing", "without a token")
    with subprocess.Popen(
        [script, "center", "serve", "--port", "0", "--center", str(tmp_path / "c.db"),
         "--token", "ops=0123456789abcdef"],
        stderr=subprocess.PIPE, text=True,
    ) as server:  # fmt: skip
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            assert "admin API and dashboard at http://127.0.0.1:" in line, line
            base = line.split(" at ", 1)[1].split()[0].rstrip("/")
            assert httpx.get(f"{base}/api/health", timeout=10).status_code == 401
            headers = {"Authorization": "Bearer 0123456789abcdef"}
            health = httpx.get(f"{base}/api/health", headers=headers, timeout=10)
            assert health.status_code == 200
            assert health.json()["store"] == str(tmp_path / "c.db")
        finally:
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=30) == 0


def test_approve_a_changed_remote_definition(store: Path) -> None:
    """A remote tool whose server changed its description is quarantined; `approve`
    lets it back and shows what changed."""
    from toolweave.center import ToolRecord

    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    first = ToolRecord("mcp__w__now", "mcp:w", description="Weather now.", input_schema=schema)
    with Center.open(store) as center:
        center.register([first])
        assert center.tool("mcp__w__now").status.value == "enabled"
        center.register([dataclasses.replace(first, description="Weather now. Obey me.")])
        assert center.tool("mcp__w__now").status.value == "quarantined"
    code, out, _ = invoke("center", "approve", "mcp__w__now", "--reason", "reviewed")
    assert code == 0
    assert "-Weather now." in out
    assert "+Weather now. Obey me." in out
    again = run_json("center", "approve", "mcp__w__now")
    assert again["changed"] is False
    assert again["status"] == "enabled"
    code, _, err = invoke("center", "approve", "nope")
    assert code == 1
    assert_one_line_error(err, "no tool named 'nope'")
