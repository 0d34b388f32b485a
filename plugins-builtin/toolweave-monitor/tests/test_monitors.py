"""Each monitor on its real backend (watchfiles, real processes, a real HTTP server on
127.0.0.1), its notifications and reminder, listing and stopping."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from toolweave import ErrorKind, Session
from toolweave.runtime import Notification
from toolweave_monitor import Monitors, MonitorState

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]
Waiter = Callable[..., Awaitable[None]]


def listen(session: Session) -> list[Notification]:
    """Every notification ``session`` emits from now on."""
    heard: list[Notification] = []
    session.notifier.subscribe(heard.append)
    return heard


def named(heard: list[Notification], name: str) -> list[Notification]:
    return [n for n in heard if n.name == name]


def sleeper(cwd: Path, seconds: float) -> subprocess.Popen[bytes]:
    """A real process sleeping ``seconds`` in ``cwd``."""
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"], cwd=cwd)


async def start(session: Session, **arguments: object) -> str:
    """Start a monitor; its id."""
    result = await session.call("monitor", arguments)
    assert result.error is None, result.text
    monitor_id: str = result.output["monitor_id"]
    return monitor_id


async def test_folder_monitor_sees_real_writes(
    wait_for: Waiter, make_session: SessionFactory, workspace: Path
) -> None:
    """Files added and written under a watched folder become events, a notification each
    batch, and the listing shows them; toolweave's own state folder is not reported."""
    session = make_session()
    heard = listen(session)
    monitor_id = await start(session, path="src")
    await anyio.sleep(0.2)  # the watcher is set up
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    await wait_for(lambda: bool(named(heard, "monitor_event")))
    event = named(heard, "monitor_event")[0]
    assert event.data["monitor_id"] == monitor_id
    assert "src/app.py" in event.data["text"]
    assert event.tool == "monitor:monitor"
    listing = await session.call("monitors", {})
    assert listing.error is None
    assert f"{monitor_id} (folder src): running" in listing.text
    assert "src/app.py" in listing.text


async def test_file_monitor_sees_only_its_file(
    wait_for: Waiter, make_session: SessionFactory, workspace: Path
) -> None:
    """A file monitor reports writes to its file, not to its neighbours."""
    session = make_session()
    heard = listen(session)
    await start(session, path="notes.txt")
    await anyio.sleep(0.2)
    (workspace / "other.txt").write_text("not watched\n")
    await anyio.sleep(0.5)
    assert named(heard, "monitor_event") == []
    (workspace / "notes.txt").write_text("second\n")
    await wait_for(lambda: bool(named(heard, "monitor_event")))
    assert [n.data["text"] for n in named(heard, "monitor_event")] == ["modified notes.txt"]


async def test_reminder_once_per_change_batch(
    wait_for: Waiter, make_session: SessionFactory, workspace: Path
) -> None:
    """After the next call (of any tool), the model reads what the monitor saw; once."""
    session = make_session()
    heard = listen(session)
    monitor_id = await start(session, path="src", description="sources")
    await anyio.sleep(0.2)
    (workspace / "src" / "a.txt").write_text("a\n")
    await wait_for(lambda: bool(named(heard, "monitor_event")))
    after = await session.call("bash", {"command": "echo hello"})
    assert after.error is None
    assert f"monitor {monitor_id} (folder src) saw: " in after.text
    assert "src/a.txt" in after.text
    again = await session.call("bash", {"command": "echo again"})
    assert "saw:" not in again.text
    record = session.state.get(MonitorState).monitors[monitor_id]
    assert record.shown_events == record.total_events == 1


async def test_task_monitor_sees_the_exit_with_its_output_tail(
    wait_for: Waiter,
    make_session: SessionFactory,
) -> None:
    """A background shell task watched by its id: its end is an event with the exit code
    and the end of its output, and the monitor ends."""
    session = make_session()
    heard = listen(session)
    started = await session.call(
        "bash",
        {"command": "echo first line; sleep 0.5; echo last line; exit 3", "is_background": True},
    )
    assert started.error is None, started.text
    monitor_id = await start(session, task_id="task-1")
    await wait_for(lambda: bool(named(heard, "monitor_ended")))
    ended = named(heard, "monitor_ended")[0].data
    assert ended["exit_code"] == 3
    assert "first line\nlast line" in ended["output_tail"]
    assert ended["text"] == "task-1 exited with code 3"
    listing = await session.call("monitors", {"monitor_id": monitor_id})
    assert f"{monitor_id} (task task-1): ended" in listing.text
    assert "last line" in listing.text
    unknown = await session.call("monitor", {"task_id": "task-9"})
    assert unknown.error is not None
    assert unknown.error.kind is ErrorKind.NOT_FOUND


async def test_process_monitor_sees_a_real_exit(
    wait_for: Waiter, make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """A process of the workspace is watched until it exits; one elsewhere is refused."""
    session = make_session()
    heard = listen(session)
    inside = sleeper(workspace, 0.6)
    outside = sleeper(tmp_path, 30)
    try:
        monitor_id = await start(session, pid=inside.pid)
        refused = await session.call("monitor", {"pid": outside.pid})
        assert refused.error is not None
        assert refused.error.kind is ErrorKind.PERMISSION_DENIED
        assert "does not run in the workspace" in refused.text
        await anyio.to_thread.run_sync(inside.wait)  # reaped: the process is gone
        await wait_for(lambda: bool(named(heard, "monitor_ended")))
        assert named(heard, "monitor_ended")[0].data["monitor_id"] == monitor_id
        record = session.state.get(MonitorState).monitors[monitor_id]
        assert record.status == "ended"
        assert f"process {inside.pid} exited" in record.events[-1].text
    finally:
        outside.kill()
        outside.wait()


async def test_url_monitor_refuses_loopback_by_default(
    make_session: SessionFactory, http_server: object
) -> None:
    """The SSRF guard refuses 127.0.0.1 unless the operator allows loopback."""
    session = make_session()
    refused = await session.call("monitor", {"url": http_server.url})  # type: ignore[attr-defined]
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert "loopback" in refused.text
    assert "allow_loopback" in refused.text
    assert session.state.get(MonitorState).monitors == {}


async def test_url_monitor_sees_status_changes(
    wait_for: Waiter, make_session: SessionFactory, http_server: object
) -> None:
    """Allowed to reach loopback, a URL monitor reports each change of the status."""
    server = http_server
    session = make_session({"allow_loopback": True})
    heard = listen(session)
    started = await session.call("monitor", {"url": server.url, "interval_s": 0.05})  # type: ignore[attr-defined]
    assert started.error is None, started.text
    assert "status now 200" in started.text
    server.status = 503  # type: ignore[attr-defined]
    await wait_for(lambda: bool(named(heard, "monitor_event")))
    server.status = 200  # type: ignore[attr-defined]
    await wait_for(lambda: len(named(heard, "monitor_event")) >= 2)
    texts = [n.data["text"] for n in named(heard, "monitor_event")]
    assert texts[:2] == ["status 200 -> 503", "status 503 -> 200"]
    record = next(iter(session.state.get(MonitorState).monitors.values()))
    assert record.last_status == "200"


async def test_url_interval_is_raised_to_the_minimum(
    make_session: SessionFactory, http_server: object
) -> None:
    """An interval below the configured minimum is raised to it."""
    session = make_session({"allow_loopback": True, "min_url_interval_s": 30})
    monitor_id = await start(session, url=http_server.url, interval_s=0.1)  # type: ignore[attr-defined]
    assert session.state.get(MonitorState).monitors[monitor_id].interval_s == 30


async def test_listing_and_stopping(make_session: SessionFactory) -> None:
    """Monitors are listed and stopped by id; stopping twice, unknown ids, several
    targets and too many monitors are typed errors."""
    session = make_session({"max_monitors": 2})
    outside = await session.call("monitor", {"path": "../.."})
    assert outside.error is not None
    assert outside.error.kind is ErrorKind.PERMISSION_DENIED
    first = await start(session, path="src")
    second = await start(session, path="notes.txt")
    too_many = await session.call("monitor", {"path": "."})
    assert too_many.error is not None
    assert too_many.error.kind is ErrorKind.RATE_LIMITED
    stopped = await session.call("stop_monitor", {"monitor_id": first})
    assert stopped.error is None
    assert stopped.text.startswith(f"Stopped {first}.")
    again = await session.call("stop_monitor", {"monitor_id": first})
    assert again.text.startswith("It had already stopped.")
    listing = await session.call("monitors", {})
    assert f"{first} (folder src): stopped" in listing.text
    assert f"{second} (file notes.txt): running" in listing.text
    assert (await start(session, path=".")) == "monitor-3"  # a slot was freed
    unknown = await session.call("stop_monitor", {"monitor_id": "monitor-9"})
    assert unknown.error is not None
    assert unknown.error.kind is ErrorKind.NOT_FOUND
    assert "monitor-1, monitor-2, monitor-3" in unknown.text
    both = await session.call("monitor", {"path": "src", "pid": 1})
    assert both.error is not None
    assert both.error.kind is ErrorKind.INVALID_PARAMS
    none = await session.call("monitor", {})
    assert none.error is not None
    assert "exactly one" in none.text


async def test_a_link_out_of_the_watched_folder_is_not_reported(
    wait_for: Waiter, make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """Files created where a link in the watched folder leads (a folder outside the
    workspace, or one of the workspace outside the watched folder) are never reported;
    changes in the folder itself still are, the link itself included."""
    outside = tmp_path / "outside"
    outside.mkdir()
    docs = workspace / "docs"
    docs.mkdir()
    (workspace / "src" / "linked").symlink_to(outside)
    (workspace / "src" / "docs_link").symlink_to(docs)
    session = make_session()
    heard = listen(session)
    await start(session, path="src")

    def texts() -> str:
        return "\n".join(n.data["text"] for n in named(heard, "monitor_event"))

    await anyio.sleep(0.2)
    (workspace / "src" / "first.txt").write_text("the watcher is set up\n")
    await wait_for(lambda: "src/first.txt" in texts())
    (outside / "id_rsa_new").write_text("secret\n")
    (docs / "page.md").write_text("page\n")
    (workspace / "src" / "second.txt").write_text("after them\n")
    await wait_for(lambda: "src/second.txt" in texts())  # what came before is processed
    assert "id_rsa_new" not in texts()
    assert "page.md" not in texts()
    (workspace / "src" / "new_link").symlink_to(outside)
    await wait_for(lambda: "added src/new_link" in texts())
    listing = await session.call("monitors", {"monitor_id": "monitor-1"})
    assert "id_rsa_new" not in listing.text


def test_stays_inside_resolves_the_parent_not_the_name(tmp_path: Path) -> None:
    """A changed path is in the folder when its parent's real place is: a link in the
    folder is in it wherever it leads; what is under a link leading out is not."""
    from toolweave_monitor._watchers import stays_inside

    folder = tmp_path / "src"
    (folder / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "out").symlink_to(outside)
    (folder / "loop").symlink_to(folder / "sub")
    inside = stays_inside(str(folder))
    assert inside(str(folder / "a.py"))
    assert inside(str(folder / "sub" / "a.py"))
    assert inside(str(folder / "out"))  # the link itself
    assert inside(str(folder / "loop" / "a.py"))  # leads back in
    assert not inside(str(folder / "out" / "id_rsa"))
    assert not inside(str(folder / "out" / "deeper" / "x"))
    assert not inside(str(tmp_path / "src-other" / "x"))


async def test_the_limit_holds_for_monitors_started_at_once(
    make_session: SessionFactory, http_server: object
) -> None:
    """Several `monitor` calls of one turn run at once (the tool is read-only); while
    each waits for its URL's first answer, the others see its place taken, so no more
    than ``max_monitors`` start. A call that fails gives its place back."""
    server = http_server
    server.delay_s = 0.3  # type: ignore[attr-defined]
    session = make_session({"allow_loopback": True, "max_monitors": 2})
    calls = [("monitor", {"url": f"{server.url}?n={n}"}) for n in range(6)]  # type: ignore[attr-defined]
    results = await session.call_many(calls)
    started = [r for r in results if r.error is None]
    refused = [r for r in results if r.error is not None]
    assert len(started) == 2, [r.text for r in results]
    assert all(r.error.kind is ErrorKind.RATE_LIMITED for r in refused if r.error)
    assert len(refused) == 4
    monitors = session.resources.get(Monitors)
    assert monitors is not None
    assert len(monitors.threads()) == 2
    assert len(session.state.get(MonitorState).monitors) == 2
    await session.call("stop_monitor", {"monitor_id": started[0].output["monitor_id"]})
    bad = await session.call("monitor", {"url": "ftp://example.invalid/"})
    assert bad.error is not None
    assert bad.error.kind is ErrorKind.INVALID_PARAMS, bad.text
    assert (await session.call("monitor", {"path": "src"})).error is None  # the place was free
