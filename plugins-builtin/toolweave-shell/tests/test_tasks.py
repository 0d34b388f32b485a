"""Background tasks: bash ``is_background``, ``task_output``, ``wait_tasks``, ``kill_task``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolweave import ConfigError, ErrorKind, Resources, Session
from toolweave.processes import process_alive
from toolweave.runtime import Notification
from toolweave_shell import BackgroundTasks, LocalTerminal, ShellTasks, Terminal

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]

GATED = "echo start; while [ ! -f go ]; do sleep 0.02; done; echo end; exit 4"
"""Runs until the test creates the file ``go``, then fails with exit code 4."""


def _pids(path: Path) -> list[int]:
    """The process ids written to ``path``, one per line (none while it does not exist)."""
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


def _touch(path: Path) -> None:
    path.touch()


async def _poll(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Check ``predicate`` until it holds (``True``) or ``seconds`` pass (``False``)."""
    deadline = time.monotonic() + seconds
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.01)


async def test_background_task_life_cycle(make_session: SessionFactory, workspace: Path) -> None:
    """Start returns at once; output is read incrementally; a wait times out while the
    task runs; after it ends, a blocking read returns the rest with the exit code and a
    notification says it failed."""
    session = make_session()
    seen: list[Notification] = []
    session.notifier.subscribe(seen.append)
    result = await session.call("bash", {"command": GATED, "is_background": True})
    assert result.error is None, result.text  # returned: GATED runs until the test says
    task_id = result.output["task_id"]
    assert task_id == "task-1"
    assert "task-1" in result.text

    read: list[str] = []

    async def read_some() -> None:
        out = await session.call("task_output", {"task_id": task_id})
        assert out.error is None, out.text
        assert out.output["task"]["status"] == "running"
        read.append(out.output["output"])

    with anyio.fail_after(10):
        while "start" not in "".join(read):
            await read_some()
            await anyio.sleep(0.02)
    assert "".join(read) == "start\n"

    waited = await session.call("wait_tasks", {"task_ids": [task_id], "timeout": 100})
    assert waited.error is None, waited.text
    assert waited.output["timed_out"] is True
    assert waited.output["tasks"][0]["status"] == "running"

    _touch(workspace / "go")
    final = await session.call(
        "task_output", {"task_id": task_id, "block": True, "timeout": 10_000}
    )
    assert final.error is None, final.text
    assert final.output["output"] == "end\n"
    assert final.output["task"]["status"] == "failed"
    assert final.output["task"]["exit_code"] == 4
    assert "exit code 4" in final.text

    again = await session.call("task_output", {"task_id": task_id})
    assert again.output["output"] == ""
    assert "(no new output)" in again.text

    assert await _poll(lambda: bool(seen))
    [note] = seen
    assert note.name == "execution_failed"
    assert note.data["task_id"] == task_id
    assert note.data["exit_code"] == 4
    assert note.data["background"] is True


async def test_wait_tasks_for_several_tasks(make_session: SessionFactory, workspace: Path) -> None:
    """``wait_tasks`` returns when all tasks end, or when any one does."""
    session = make_session()
    fast = await session.call("bash", {"command": "exit 0", "is_background": True})
    slow = await session.call("bash", {"command": GATED, "is_background": True})
    ids = [fast.output["task_id"], slow.output["task_id"]]
    any_done = await session.call("wait_tasks", {"task_ids": ids, "wait_for": "any"})
    assert any_done.output["timed_out"] is False
    assert [t["status"] for t in any_done.output["tasks"]] == ["completed", "running"]
    _touch(workspace / "go")
    all_done = await session.call("wait_tasks", {"task_ids": ids, "timeout": 10_000})
    assert all_done.output["timed_out"] is False
    assert [t["status"] for t in all_done.output["tasks"]] == ["completed", "failed"]
    assert "Done waiting." in all_done.text


async def test_kill_task_stops_the_whole_process_group(
    make_session: SessionFactory, workspace: Path
) -> None:
    """``kill_task`` stops the task's shell and its grandchildren, and says so."""
    session = make_session()
    command = "echo $$ > pids; sleep 60 & echo $! >> pids; echo up; wait"
    started = await session.call("bash", {"command": command, "is_background": True})
    task_id = started.output["task_id"]
    assert await _poll(lambda: len(_pids(workspace / "pids")) == 2)
    pids = _pids(workspace / "pids")
    killed = await session.call("kill_task", {"task_id": task_id})
    assert killed.error is None, killed.text
    assert killed.output["task"]["status"] == "killed"
    assert "Stopped task-1" in killed.text
    assert "up" in killed.output["output"]
    assert [p for p in pids if process_alive(p)] == []
    again = await session.call("kill_task", {"task_id": task_id})
    assert "had already ended" in again.text


async def test_a_task_that_killed_its_own_shell_can_still_be_stopped(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A command that kills the shell wrapping it ends the task's record while it runs
    on: the status says processes are still running, and ``kill_task`` stops them."""
    session = make_session()
    command = "kill -9 $PPID; echo $$ > pid; exec sleep 300"
    started = await session.call("bash", {"command": command, "is_background": True})
    task_id = started.output["task_id"]
    assert await _poll(lambda: len(_pids(workspace / "pid")) == 1)
    pids = _pids(workspace / "pid")
    waited = await session.call("wait_tasks", {"task_ids": [task_id], "timeout": 10_000})
    assert waited.error is None, waited.text
    assert waited.output["tasks"][0]["status"] == "failed"
    assert waited.output["tasks"][0]["processes_running"] is True
    assert "processes it started are still running" in waited.text
    assert process_alive(pids[0])
    killed = await session.call("kill_task", {"task_id": task_id})
    assert killed.error is None, killed.text
    assert "were still running: they were stopped" in killed.text
    assert killed.output["task"]["processes_running"] is False
    assert [p for p in pids if process_alive(p)] == []
    again = await session.call("kill_task", {"task_id": task_id})
    assert again.text.startswith(f"{task_id} had already ended:")


async def test_unknown_task_is_not_found(make_session: SessionFactory) -> None:
    """An unknown task id is ``not_found`` and names the tasks that exist."""
    session = make_session()
    await session.call("bash", {"command": "true", "is_background": True})
    result = await session.call("task_output", {"task_id": "task-9"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND
    assert "task-1" in result.text


async def test_background_can_be_turned_off(make_session: SessionFactory) -> None:
    """With ``enabled_background`` off, ``is_background`` is refused, and the task tools
    cannot be configured (their dependency on background-capable bash fails)."""
    off = {"id": "bash", "params": {"enabled_background": False}}
    session = make_session({"tools": [off]})
    result = await session.call("bash", {"command": "true", "is_background": True})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "turned off" in result.text
    with pytest.raises(ConfigError) as caught:
        make_session({"tools": [off, "task_output"]})
    assert any(issue.tool_id.endswith("task_output") for issue in caught.value.issues)


# -- restarts ----------------------------------------------------------------------------

_HOST = textwrap.dedent(
    """
    import sys, time, anyio
    from pathlib import Path
    from toolweave import PackManager, Resources
    from toolweave_shell import BackgroundTasks, pack

    workspace, root, session_id, command, linger = sys.argv[1:6]

    async def main() -> None:
        packs = PackManager(strict=True)
        packs.add("shell", pack)
        host = Resources()
        host.insert(BackgroundTasks(root=Path(root)))
        session = packs.build().session(
            workspace=workspace, session_id=session_id, resources=host
        )
        result = await session.call("bash", {"command": command, "is_background": True})
        print(result.output["task_id"], flush=True)
        time.sleep(float(linger))

    anyio.run(main)
    """
)


def _run_host(workspace: Path, root: Path, command: str, linger: float = 0.0) -> str:
    """Start a task from another host process that then exits; returns the task id."""
    done = subprocess.run(
        [sys.executable, "-c", _HOST, str(workspace), str(root), "s1", command, str(linger)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def _new_host(tmp_path: Path) -> Resources:
    host = Resources()
    host.insert(LocalTerminal(kill_grace=0.5), Terminal)
    host.insert(BackgroundTasks(root=tmp_path / "task-output"))
    return host


async def test_restart_reports_a_vanished_task_as_lost(
    make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """A task started by a host that exited is still listed by the next host: running
    while its process lives, ``lost`` once the process is gone, its output readable."""
    task_id = _run_host(workspace, tmp_path / "task-output", "echo hello; sleep 60")
    session = make_session(session_id="s1", resources=_new_host(tmp_path))
    pid = session.state.get(ShellTasks).tasks[task_id].pid
    try:
        with anyio.fail_after(10):
            while True:
                first = await session.call("task_output", {"task_id": task_id})
                assert first.error is None, first.text
                assert first.output["task"]["status"] == "running"
                if first.output["output"]:
                    break
                await anyio.sleep(0.02)
        assert first.output["output"] == "hello\n"
    finally:
        os.killpg(pid, signal.SIGKILL)
    assert await _poll(lambda: not process_alive(pid))
    after = await session.call("task_output", {"task_id": task_id})
    assert after.output["task"]["status"] == "lost"
    assert after.output["task"]["exit_code"] is None
    assert "lost" in after.text
    assert "how it ended was not recorded" in after.text

    later = make_session(session_id="s1", resources=_new_host(tmp_path))
    listed = await later.call("wait_tasks", {"task_ids": [task_id], "timeout": 0})
    assert listed.output["tasks"][0]["status"] == "lost"


async def test_an_end_after_the_starting_host_exited_is_known(
    make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """A task that ends after the host process that started it has exited is reported
    by another process with its exit code (its shell records it), not as lost; also
    when the command ends with ``exit`` or replaces its shell with ``exec``."""
    root = tmp_path / "task-output"
    commands = {
        "echo late; sleep 0.5; exit 5": ("failed", 5, "late\n"),
        "sleep 0.5; echo done": ("completed", 0, "done\n"),
        "sleep 0.5; exec sh -c 'echo swapped; exit 3'": ("failed", 3, "swapped\n"),
    }
    started = {
        _run_host(workspace, root, command): expected for command, expected in commands.items()
    }
    session = make_session(session_id="s1", resources=_new_host(tmp_path))
    pids = [record.pid for record in session.state.get(ShellTasks).tasks.values()]
    assert await _poll(lambda: not any(process_alive(pid) for pid in pids))
    for task_id, (status, code, output) in started.items():
        result = await session.call("task_output", {"task_id": task_id})
        assert result.error is None, result.text
        task = result.output["task"]
        assert (task["status"], task["exit_code"]) == (status, code), result.text
        assert result.output["output"] == output
        assert "not recorded" not in result.text


async def test_restart_keeps_a_living_task_killable(
    make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """The next host finds a still-running task again and can stop its process group."""
    task_id = _run_host(workspace, tmp_path / "task-output", "sleep 60 & wait")
    session = make_session(session_id="s1", resources=_new_host(tmp_path))
    pid = session.state.get(ShellTasks).tasks[task_id].pid
    assert process_alive(pid)
    killed = await session.call("kill_task", {"task_id": task_id})
    assert killed.output["task"]["status"] == "killed"
    assert await _poll(lambda: not process_alive(pid))


async def test_restart_keeps_an_end_the_old_host_saw(
    make_session: SessionFactory, workspace: Path, tmp_path: Path
) -> None:
    """A task that ended while the old host still ran is reported with its exit code."""
    task_id = _run_host(workspace, tmp_path / "task-output", "echo bye; exit 7", linger=0.5)
    session = make_session(session_id="s1", resources=_new_host(tmp_path))
    result = await session.call("task_output", {"task_id": task_id})
    assert result.output["task"]["status"] == "failed"
    assert result.output["task"]["exit_code"] == 7
    assert result.output["output"] == "bye\n"


def _host_with(tasks: BackgroundTasks) -> Resources:
    host = Resources()
    host.insert(LocalTerminal(kill_grace=0.5), Terminal)
    host.insert(tasks)
    return host


async def test_the_default_task_folders_are_made_private(
    make_session: SessionFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the shared temp folder, ``toolweave-<uid>`` made earlier with a mode that
    lets others in is tightened to 0o700 before a task writes its output there."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tasks = BackgroundTasks()
    top = tasks.root.parent
    assert top == tmp_path / "tmp" / f"toolweave-{os.getuid()}"
    top.mkdir(mode=0o777)
    os.chmod(top, 0o777)
    session = make_session(session_id="s1", resources=_host_with(tasks))
    started = await session.call("bash", {"command": "echo secret", "is_background": True})
    assert started.error is None, started.text
    for folder in (top, tasks.root, tasks.folder("s1")):
        assert os.lstat(folder).st_mode & 0o777 == 0o700, folder


async def test_a_task_folder_that_is_a_link_is_refused(
    make_session: SessionFactory, tmp_path: Path
) -> None:
    """A link where the session's task folder goes (planted to send the output
    elsewhere) is refused; nothing is written where it points."""
    tasks = BackgroundTasks(root=tmp_path / "task-output")
    tasks.root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tasks.folder("s1").symlink_to(elsewhere)
    session = make_session(session_id="s1", resources=_host_with(tasks))
    result = await session.call("bash", {"command": "echo secret", "is_background": True})
    assert result.error is not None
    assert result.error.kind == ErrorKind.EXECUTION_ERROR
    assert "is not a folder" in result.text
    assert list(elsewhere.iterdir()) == []
    assert session.state.get(ShellTasks).next_number == 1  # the number was not used


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="chown needs root")
async def test_a_task_folder_of_another_user_is_refused(
    make_session: SessionFactory, tmp_path: Path
) -> None:
    """A session task folder another user made first (to read what commands print) is
    refused with a message naming it, and no output is written into it."""
    tasks = BackgroundTasks(root=tmp_path / "task-output")
    tasks.root.mkdir()
    theirs = tasks.folder("s1")
    theirs.mkdir(mode=0o777)
    os.chown(theirs, 65534, 65534)
    session = make_session(session_id="s1", resources=_host_with(tasks))
    result = await session.call("bash", {"command": "echo secret", "is_background": True})
    assert result.error is not None
    assert "belongs to another user" in result.text
    assert str(theirs) in result.text
    assert list(theirs.iterdir()) == []
