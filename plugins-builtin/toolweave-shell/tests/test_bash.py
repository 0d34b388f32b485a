"""Unit tests of the ``bash`` tool: streaming, exit codes, output cap, timeouts, cancel."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolweave import CallResult, Environment, ErrorKind, Progress, Session
from toolweave.processes import process_alive
from toolweave.runtime import Notification

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]


def _pids(path: Path) -> list[int]:
    """The process ids written to ``path``, one per line (none while it does not exist)."""
    try:
        return [int(line) for line in path.read_text().split()]
    except FileNotFoundError:
        return []


def _touch(path: Path) -> None:
    path.touch()


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if process_alive(p)]


async def _poll(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Check ``predicate`` until it holds (``True``) or ``seconds`` pass (``False``)."""
    deadline = time.monotonic() + seconds
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.01)


async def test_progress_arrives_before_the_command_ends(
    make_session: SessionFactory, workspace: Path
) -> None:
    """The first line streams out while the command still waits for a file only the test
    writes after seeing that line, so progress cannot have been buffered until the end."""
    session = make_session()
    command = "echo first; while [ ! -f go ]; do sleep 0.02; done; echo second"
    items: list[Progress | CallResult] = []
    async with session.stream("bash", {"command": command}, "c1") as stream:
        async for item in stream:
            items.append(item)
            if isinstance(item, Progress) and "first" in item.message:
                assert not any(isinstance(i, CallResult) for i in items)
                _touch(workspace / "go")
    result = items[-1]
    assert isinstance(result, CallResult)
    assert result.error is None, result.text
    assert result.output["output"] == "first\nsecond\n"
    assert result.output["exit_code"] == 0
    messages = [i.message for i in items if isinstance(i, Progress)]
    assert messages == ["first", "second"]


async def test_exit_codes_are_reported(make_session: SessionFactory) -> None:
    """A zero exit is plain output; other exits and signals are named in the model text."""
    session = make_session()
    ok = await session.call("bash", {"command": "echo fine"})
    assert ok.error is None
    assert ok.output["exit_code"] == 0
    assert ok.text == "fine"
    failed = await session.call("bash", {"command": "echo oops >&2; exit 3"})
    assert failed.error is None
    assert failed.output["exit_code"] == 3
    assert failed.text == "oops\n[exit code 3]"
    signalled = await session.call("bash", {"command": "kill -TERM $$"})
    assert signalled.output["exit_code"] == -15
    assert "killed by SIGTERM" in signalled.text
    silent = await session.call("bash", {"command": "true"})
    assert silent.text == "(no output; exit code 0)"


async def test_stdout_and_stderr_are_combined_in_order(make_session: SessionFactory) -> None:
    """Both streams end up in one text in the order the command wrote them."""
    session = make_session()
    result = await session.call(
        "bash", {"command": "echo one; echo two >&2; echo three; echo four >&2"}
    )
    assert result.output["output"] == "one\ntwo\nthree\nfour\n"


async def test_characters_split_across_reads_stay_whole(make_session: SessionFactory) -> None:
    """A UTF-8 character written in two pieces arrives whole; invalid bytes are replaced."""
    session = make_session()
    result = await session.call(
        "bash", {"command": r"printf '\xc3'; sleep 0.1; printf '\xa9\n'; printf 'bad \xff\n'"}
    )
    assert result.output["output"] == "\u00e9\nbad \ufffd\n"


async def test_output_beyond_the_cap_keeps_head_and_tail(make_session: SessionFactory) -> None:
    """With a 1000-character cap, 20000 lines keep their start and end around a marker."""
    session = make_session({"tools": [{"id": "bash", "params": {"max_output_chars": 1000}}]})
    result = await session.call("bash", {"command": "seq 1 20000"})
    assert result.error is None
    out = result.output["output"]
    assert result.output["truncated"] is True
    assert out.startswith("1\n2\n3\n")
    assert out.rstrip().endswith("19999\n20000")
    assert "of output omitted here" in out
    assert len(out) < 1200
    small = await session.call("bash", {"command": "seq 1 10"})
    assert small.output["truncated"] is False


async def test_timeout_kills_the_whole_process_tree(
    make_session: SessionFactory, workspace: Path
) -> None:
    """On timeout the shell, a sleeping grandchild and one that ignores SIGTERM are all
    gone when the call returns, and the call fails as `timeout`, showing the output."""
    session = make_session()
    command = (
        "sleep 60 & echo $! >> pids; "
        "(trap '' TERM; exec sleep 61) & echo $! >> pids; "
        "echo started; wait"
    )
    started = time.monotonic()
    result = await session.call("bash", {"command": command, "timeout": 500})
    elapsed = time.monotonic() - started
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert result.output is None
    assert result.text.startswith("bash timed out after 0.5 s")
    assert result.text.endswith("Its output until then:\nstarted")
    pids = _pids(workspace / "pids")
    assert len(pids) == 2
    assert _alive(pids) == []
    assert elapsed < 30  # generous: without the timeout it would run 60 s


async def test_requested_timeout_is_clamped_to_the_maximum(
    make_session: SessionFactory,
) -> None:
    """A timeout above ``max_timeout_ms`` is lowered to it."""
    session = make_session(
        {"tools": [{"id": "bash", "params": {"max_timeout_ms": 1000, "default_timeout_ms": 1000}}]}
    )
    started = time.monotonic()
    result = await session.call("bash", {"command": "sleep 30", "timeout": 100_000})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    assert "timed out after 1 s" in result.text
    assert result.text.endswith("It printed nothing.")
    assert time.monotonic() - started < 25  # generous: unclamped it would run 30 s


async def test_cancel_kills_the_whole_process_tree(
    make_session: SessionFactory, workspace: Path
) -> None:
    """Cancelling the call by id stops the command and its grandchildren before the
    cancelled result comes back."""
    session = make_session()
    command = "sleep 60 & echo $! >> pids; (trap '' TERM; exec sleep 61) & echo $! >> pids; wait"
    results: list[CallResult] = []

    async def run() -> None:
        results.append(await session.call("bash", {"command": command}, "call-1"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        assert await _poll(lambda: len(_pids(workspace / "pids")) == 2)
        assert session.cancel("call-1")
    [result] = results
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    pids = _pids(workspace / "pids")
    assert _alive(pids) == []


async def test_cancel_at_any_moment_leaves_nothing_running(
    make_session: SessionFactory, workspace: Path
) -> None:
    """Cancelled while starting, or soon after, the command's processes are all gone by
    the time the cancelled result comes back."""
    session = make_session()
    command = "echo $$ >> pids; sleep 60 & echo $! >> pids; wait"
    results: list[CallResult] = []

    async def run() -> None:
        results.append(await session.call("bash", {"command": command}, "c"))

    for delay in (0.0, 0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05):
        _unlink(workspace / "pids")
        results.clear()
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.sleep(delay)
            assert await _poll(lambda: session.cancel("c"))
        [result] = results
        assert result.error is not None
        assert result.error.kind is ErrorKind.CANCELLED
        await anyio.sleep(0.05)  # a shell that was still starting would write now
        pids = _pids(workspace / "pids")
        assert _alive(pids) == [], f"after {delay} s"


async def test_closing_a_stream_early_kills_the_command(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A host that stops reading a stream after the first line leaves nothing running."""
    session = make_session()
    command = "echo $$ > pid; echo ready; sleep 60"
    async with session.stream("bash", {"command": command}, "c2") as stream:
        async for item in stream:
            if isinstance(item, Progress):
                break
    pids = _pids(workspace / "pid")
    assert len(pids) == 1
    assert _alive(pids) == []


async def test_processes_left_holding_the_output_are_stopped(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A command that backgrounds a process with ``&`` returns soon after its shell ends;
    the leftover process is stopped and the model is told why."""
    session = make_session()
    started = time.monotonic()
    result = await session.call("bash", {"command": "sleep 30 & echo $! > pid; echo done"})
    assert time.monotonic() - started < 25  # generous: waiting for the leftover takes 30 s
    assert result.output["output"] == "done\n"
    assert result.output["exit_code"] == 0
    assert "left processes running" in result.text
    pids = _pids(workspace / "pid")
    assert len(pids) == 1
    assert await _poll(lambda: not _alive(pids), 3.0)


async def test_processes_left_running_after_a_normal_exit_are_stopped(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A process the command leaves in its group with its output redirected (so the pipe
    closes at once) is stopped when the command returns, every time, and the model is told."""
    session = make_session()
    command = "(sleep 30 >/dev/null 2>&1 & echo $! >> pid); echo hi"
    for _ in range(3):  # the shell's exit races the end of its output: never by luck
        result = await session.call("bash", {"command": command})
        assert result.output["output"] == "hi\n"
        assert result.output["exit_code"] == 0
        assert "left processes running after it ended; they were stopped" in result.text
    pids = _pids(workspace / "pid")
    assert len(pids) == 3
    assert _alive(pids) == []
    plain = await session.call("bash", {"command": "echo plain"})
    assert plain.text == "plain"


async def test_a_command_that_redirects_its_own_output_runs_to_its_end(
    make_session: SessionFactory, workspace: Path
) -> None:
    """``exec >build.log 2>&1`` ends the output while the shell works on: the call waits
    for the shell (up to its timeout), not just the kill grace, and stops nothing."""
    session = make_session()
    command = "exec >build.log 2>&1; echo compiling; sleep 3; echo build ok > result.txt; echo done"
    result = await session.call("bash", {"command": command, "timeout": 60_000})
    assert result.error is None, result.text
    assert (workspace / "result.txt").read_text() == "build ok\n"
    assert (workspace / "build.log").read_text() == "compiling\ndone\n"
    assert result.output["exit_code"] == 0
    assert "SIGTERM" not in result.text
    assert result.output["note"] is None


async def test_a_command_that_redirects_its_output_still_times_out(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A shell that closed its output and runs past the timeout is a timeout like any
    other: it and what it started are stopped."""
    session = make_session()
    command = "exec >/dev/null 2>&1; echo $$ > pid; sleep 60 & echo $! >> pid; wait"
    result = await session.call("bash", {"command": command, "timeout": 1000})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT
    pids = _pids(workspace / "pid")
    assert len(pids) == 2
    assert _alive(pids) == []


async def test_a_partial_line_streams_after_a_short_wait(make_session: SessionFactory) -> None:
    """Output without a newline ("waiting...") is shown within about a quarter second,
    long before the command ends, and the rest of the line follows as its own item."""
    session = make_session()
    started = time.monotonic()
    seen: list[tuple[float, str]] = []
    command = "printf waiting; sleep 1.5; echo ' done'"
    async with session.stream("bash", {"command": command}, "partial") as stream:
        async for item in stream:
            if isinstance(item, Progress):
                seen.append((time.monotonic() - started, item.message))
    # Two items: "waiting" was shown on its own, before the rest of its line existed.
    assert [message for _, message in seen] == ["waiting", " done"]


async def test_one_huge_line_streams_in_bounded_pieces_quickly(
    make_session: SessionFactory,
) -> None:
    """A 16 MB line without a newline comes as many progress items of bounded size, in
    linear time; the result keeps its head and tail."""
    from toolweave_shell._output import PROGRESS_MAX_CHARS

    session = make_session()
    started = time.monotonic()
    sizes: list[int] = []
    last: Progress | CallResult | None = None
    command = "head -c 16000000 /dev/zero | tr '\\0' a"
    async with session.stream("bash", {"command": command}, "huge") as stream:
        async for item in stream:
            last = item
            if isinstance(item, Progress):
                sizes.append(len(item.message))
    assert time.monotonic() - started < 30  # generous: quadratic work would take minutes
    assert isinstance(last, CallResult)
    assert last.output["truncated"] is True
    assert last.output["output"].startswith("a" * 1000)
    assert len(sizes) > 1
    assert max(sizes) <= PROGRESS_MAX_CHARS + 200  # the omission marker comes on top


def test_line_batcher_reports_long_partial_lines_and_keeps_the_rest() -> None:
    """Lines complete across chunks; a partial line past ``max_partial`` is reported at
    once; ``take_partial`` hands out what waits; nothing is lost or repeated."""
    from toolweave_shell._output import LineBatcher

    batcher = LineBatcher(max_partial=10)
    assert batcher.feed(b"ab") == ("ab", "")
    assert batcher.feed(b"c\nde") == ("c\nde", "abc")
    assert batcher.take_partial() == "de"
    assert batcher.feed(b"x" * 12) == ("x" * 12, "x" * 12)
    assert batcher.feed(b"1\n" + b"y" * 11) == ("1\n" + "y" * 11, "1\n" + "y" * 11)
    assert batcher.feed("é".encode()[:1]) == ("", "")
    assert batcher.feed("é".encode()[1:] + b"\n") == ("é\n", "é")
    assert batcher.feed(b"tail") == ("tail", "")
    assert batcher.flush() == ("", "tail")


async def test_runs_in_the_workspace_with_the_session_environment(
    make_session: SessionFactory, workspace: Path
) -> None:
    """The command starts in the workspace root and sees the ``Environment`` resource."""
    session = make_session()
    session.set_resource(Environment({"PATH": os.environ["PATH"], "TW_GREETING": "hello"}))
    result = await session.call(
        "bash", {"command": 'pwd; echo "$TW_GREETING"; echo "${HOME:-unset}"'}
    )
    assert result.output["output"] == f"{session.workspace}\nhello\nunset\n"


async def test_end_notifications(make_session: SessionFactory) -> None:
    """Each foreground command emits complete, failed or timeout when it ends."""
    session = make_session()
    seen: list[Notification] = []
    session.notifier.subscribe(seen.append)
    await session.call("bash", {"command": "true", "description": "succeed"})
    await session.call("bash", {"command": "false"})
    await session.call("bash", {"command": "sleep 10", "timeout": 200})
    assert [n.name for n in seen] == [
        "execution_complete",
        "execution_failed",
        "execution_timeout",
    ]
    assert seen[0].data["description"] == "succeed"
    assert seen[0].data["exit_code"] == 0
    assert seen[1].data["exit_code"] == 1
    assert seen[0].tool == "shell:bash"


async def test_bad_arguments_are_invalid_params(make_session: SessionFactory) -> None:
    """An empty command or a non-positive timeout is refused before anything runs."""
    session = make_session()
    empty = await session.call("bash", {"command": ""})
    assert empty.error is not None
    assert empty.error.kind is ErrorKind.INVALID_PARAMS
    zero = await session.call("bash", {"command": "true", "timeout": 0})
    assert zero.error is not None
    assert zero.error.kind is ErrorKind.INVALID_PARAMS


async def test_description_is_rendered_for_the_model(make_session: SessionFactory) -> None:
    """The model sees when to use bash and when not to."""
    session = make_session()
    [bash] = [d for d in session.definitions("neutral") if d["name"] == "bash"]
    assert "is_background" in bash["description"]
    assert "Do not use it" in bash["description"]
    assert set(bash["input_schema"]["properties"]) == {
        "command",
        "timeout",
        "description",
        "is_background",
    }


class _NoWait:
    """A running command of a terminal written before ``RunningCommand.wait``."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        if name == "wait":
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_a_terminal_without_wait_still_runs_commands(
    make_session: SessionFactory, host: object, workspace: Path
) -> None:
    """A third-party terminal whose commands lack ``wait()`` keeps the former behaviour
    (the command ends with its output) instead of failing every command."""
    from toolweave import Resources
    from toolweave_shell import LocalTerminal, Terminal

    class OldTerminal(LocalTerminal):
        async def run(self, command: str, *, cwd: Path, env: object) -> object:  # type: ignore[override]
            return _NoWait(await super().run(command, cwd=cwd, env=env))  # type: ignore[arg-type]

    assert isinstance(host, Resources)
    host.insert(OldTerminal(kill_grace=0.5), Terminal)
    session = make_session()
    result = await session.call("bash", {"command": "echo ok"})
    assert result.error is None
    assert "ok" in (result.text or "")
    redirected = await session.call("bash", {"command": "exec >/dev/null; sleep 1"})
    assert redirected.error is None
