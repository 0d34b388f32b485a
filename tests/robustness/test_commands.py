"""Shell commands through the host path: what they see, how much they say, what they leave.

The built-in packs are loaded through their entry points, as a host loads them, and
``bash`` is called through every public path a host uses: ``Session.call``,
``stream``, ``call_many``, ``run_tool_calls`` and background tasks. The shell pack's
own tests prove each mechanism on one path; this battery holds the guarantees on all
of them:

- a command's environment is an allow-list: the host's API keys and tokens never reach
  it, whatever the path;
- output floods (stdout, stderr, one huge line) are capped, in bounded memory;
- a grandchild that keeps the output pipe open does not hold the call;
- after a timeout, a cancel or the session's close, no process of the command is left,
  not even those that left its group and session with ``setsid``;
- a command too long for the kernel is ``invalid_params`` with its limit in the schema.

Leftovers are found by a marker (a fresh id in the command line and the environment of
every process the command starts), scanning ``/proc``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import CallResult, ErrorKind, Session, ToolSet, load_packs
from toolweave.processes import process_alive

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

PACKS = ("fs", "search", "shell", "plan")
"""The built-in packs, loaded by name through their entry points."""

PATHS = ("call", "stream", "call_many", "run_tool_calls")
"""The ways a host runs one foreground call."""

SECRETS = {
    "OPENAI_API_KEY": "sk-robust-openai-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-robust-0123456789",
    "AWS_SECRET_ACCESS_KEY": "aws-robust-secret-0123456789",
    "AWS_SESSION_TOKEN": "aws-robust-session-0123456789",
    "GITHUB_TOKEN": "ghp_robust0123456789",
    "HF_TOKEN": "hf_robust0123456789",
    "DATABASE_URL": "postgres://user:robust-password@db/x",
}
"""Credentials a host process typically holds."""

FLOOD_BYTES = 32 * 1024 * 1024
"""How much a flooding command writes: far over the output cap (30,000 characters)."""

MEMORY_BOUND = FLOOD_BYTES // 2
"""The most the host may allocate at a time while a flood passes (tracemalloc's peak):
half the flood, so that keeping the output (or even its bytes) fails."""

DRAIN_BOUND = 10.0
"""Seconds a call whose grandchild holds its output open may take (the grandchild sleeps
60 s; the shell's drain is half a second, the kill grace two)."""


@pytest.fixture(scope="module")
def toolset() -> ToolSet:
    """The built-in packs as a host loads them: discovered through entry points."""
    return load_packs(include=PACKS, strict=True).build()


@pytest.fixture
async def session(toolset: ToolSet, tmp_path: Path) -> AsyncIterator[Session]:
    """A session over an empty workspace; closed at the end (which stops its tasks)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = toolset.session(workspace=workspace)
    yield session
    await session.aclose()


@pytest.fixture
def marker() -> str:
    """A fresh id that every process of the test's command carries."""
    return f"twrobust{uuid.uuid4().hex}"


def _holding(marker: str) -> list[int]:
    """Running processes (zombies left out) whose command line or environment holds
    ``marker``."""
    needle = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if (needle in cmdline or needle in environ) and process_alive(int(name)):
            found.append(int(name))
    return found


async def _poll(predicate: Callable[[], bool], seconds: float = 15.0) -> bool:
    """Check ``predicate`` until it holds (``True``) or ``seconds`` pass (``False``)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.02)
    return True


def _escaping(marker: str, tail: str = "sleep 300") -> str:
    """A command that starts processes outside its group and session (``setsid``, a
    re-parented ``setsid``, a daemon-style double fork), then runs ``tail``; every one
    of them carries ``marker`` in its environment."""
    return (
        f"export TW_ROBUST_MARK={marker}; "
        "setsid sleep 300 & "
        "(setsid sleep 301 &) ; "
        "(setsid sh -c 'sleep 302 & wait' &) ; "
        f"{tail}"
    )


ESCAPED = 5
"""Processes of :func:`_escaping` once all started: the shell, three sleeps, the daemon."""


def _message(name: str, arguments: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    """An OpenAI assistant message with one tool call."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


async def _run(
    session: Session, path: str, arguments: Mapping[str, Any], call_id: str = "c1"
) -> tuple[ErrorKind | None, str]:
    """Run ``bash`` through ``path``; the error kind (``None`` on success) and the text
    the model gets."""
    if path == "run_tool_calls":
        [message] = await session.run_tool_calls(_message("bash", arguments, call_id))
        content: str = message["content"]
        prefix = content.partition(":")[0]
        kinds = {kind.value: kind for kind in ErrorKind}
        return kinds.get(prefix), content
    result: CallResult
    if path == "call":
        result = await session.call("bash", arguments, call_id)
    elif path == "stream":
        async with session.stream("bash", arguments, call_id) as items:
            got = [item async for item in items]
        last = got[-1]
        assert isinstance(last, CallResult)
        result = last
    else:
        [result] = await session.call_many([("bash", arguments, call_id)])
    return (result.error.kind if result.error is not None else None), result.text


# -- the environment --------------------------------------------------------------------


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host process holds API keys, tokens and a database password."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def _leaks(text: str) -> list[str]:
    """The secrets (by name or value) that ``text`` shows."""
    return [name for name, value in SECRETS.items() if name in text or value in text]


@pytest.mark.parametrize("path", PATHS)
async def test_no_foreground_path_passes_the_hosts_secrets(
    secrets: None, session: Session, path: str
) -> None:
    """``env`` run by the shell and by a grandchild shows none of the host's credentials,
    through call, stream, call_many and run_tool_calls; ``PATH`` is there."""
    kind, text = await _run(session, path, {"command": "env; echo ---; sh -c env"})
    assert kind is None, text
    assert _leaks(text) == []
    assert text.count("PATH=") >= 2


async def test_a_background_task_gets_no_secrets(
    secrets: None, session: Session, tmp_path: Path
) -> None:
    """A background task, and a process it starts with ``setsid``, see none of the
    host's credentials, in their environment or in the output the model reads."""
    command = "env; setsid sh -c 'env > escaped.txt'"
    started = await session.call("bash", {"command": command, "is_background": True})
    assert started.error is None, started.text
    task = started.output["task_id"]
    read = await session.call("task_output", {"task_id": task, "block": True, "timeout": 20_000})
    assert read.error is None, read.text
    assert "PATH=" in read.text
    assert _leaks(read.text) == []
    escaped = tmp_path / "ws" / "escaped.txt"
    assert await _poll(lambda: escaped.exists() and "PATH=" in escaped.read_text())
    assert _leaks(escaped.read_text()) == []


# -- output floods ----------------------------------------------------------------------

FLOODS = {
    "stdout lines": f"yes 'a line of output' | head -c {FLOOD_BYTES}",
    "stderr lines": f"yes 'an error line' | head -c {FLOOD_BYTES} >&2",
    "one huge line": f"head -c {FLOOD_BYTES} /dev/zero | tr '\\0' x",
    "both at once": (
        f"yes out | head -c {FLOOD_BYTES // 2} & yes err | head -c {FLOOD_BYTES // 2} >&2; wait"
    ),
}
"""Commands that write :data:`FLOOD_BYTES` in all."""


@pytest.mark.parametrize("path", ["call", "stream"])
@pytest.mark.parametrize("flood", sorted(FLOODS))
async def test_output_floods_are_capped_in_bounded_memory(
    session: Session, path: str, flood: str
) -> None:
    """32 MiB on stdout, on stderr, on both, or as one line without a newline: the reply
    keeps head and tail within the cap (30,000 characters and a marker), and the host's
    allocations peak under half the flood."""
    tracemalloc.start()
    try:
        kind, text = await _run(session, path, {"command": FLOODS[flood] + "; echo THE-END"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert kind is None, text[:300]
    assert len(text) <= 30_000 + 200
    assert "of output omitted here" in text
    assert text.rstrip().endswith("THE-END")
    assert peak < MEMORY_BOUND, f"peak {peak / 2**20:.1f} MiB"


async def test_a_background_flood_is_read_capped(session: Session) -> None:
    """A background task that writes 32 MiB: reading its output gives head and tail
    within the cap, in bounded memory, and the next read has nothing new."""
    command = FLOODS["one huge line"] + "; echo; echo THE-END"
    started = await session.call("bash", {"command": command, "is_background": True})
    task = started.output["task_id"]
    waited = await session.call("wait_tasks", {"task_ids": [task], "timeout": 60_000})
    assert waited.output["timed_out"] is False, waited.text
    tracemalloc.start()
    try:
        read = await session.call("task_output", {"task_id": task})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read.error is None, read.text[:300]
    assert read.output["truncated"] is True
    assert len(read.output["output"]) <= 30_000 + 200
    assert read.output["output"].rstrip().endswith("THE-END")
    assert peak < MEMORY_BOUND, f"peak {peak / 2**20:.1f} MiB"
    again = await session.call("task_output", {"task_id": task})
    assert again.output["output"] == ""


# -- grandchildren holding the output open ----------------------------------------------

HOLDERS = {
    "sleeping": "(sleep 60 &) ; echo done",
    "ignoring SIGTERM": "(trap '' TERM; exec sleep 60) & echo done",
    "in a new session": "setsid sleep 60 & echo done",
    "still writing": "echo done; (yes holder &)",
}
"""Commands whose shell ends at once while a grandchild keeps the output pipe open."""


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("holder", sorted(HOLDERS))
async def test_a_grandchild_holding_the_pipe_does_not_hold_the_call(
    session: Session, marker: str, path: str, holder: str
) -> None:
    """The call returns within 10 s of the shell's end (the grandchild would run 60 s),
    with the command's output and a note; the grandchild is gone."""
    command = f"export TW_ROBUST_MARK={marker}; {HOLDERS[holder]}"
    started = time.monotonic()
    kind, text = await _run(session, path, {"command": command})
    elapsed = time.monotonic() - started
    assert kind is None, text[:300]
    assert "done" in text
    assert "they were stopped" in text
    assert elapsed < DRAIN_BOUND
    assert await _poll(lambda: _holding(marker) == [], 5.0), _holding(marker)


# -- nothing left after timeout, cancel and close ---------------------------------------


async def _started(marker: str) -> None:
    assert await _poll(lambda: len(_holding(marker)) >= ESCAPED), _holding(marker)


async def _gone(marker: str) -> None:
    assert await _poll(lambda: _holding(marker) == [], 5.0), _holding(marker)


@pytest.mark.parametrize("path", PATHS)
async def test_a_timeout_leaves_no_process(session: Session, marker: str, path: str) -> None:
    """A command that times out (with processes that escaped its group) is ``timeout``
    on every path, and none of its processes runs afterwards."""
    arguments = {"command": _escaping(marker), "timeout": 3_000}
    kind, text = await _run(session, path, arguments)
    assert kind is ErrorKind.TIMEOUT, text
    await _gone(marker)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("how", ["cancel", "close"])
async def test_cancel_and_close_leave_no_process(
    session: Session, marker: str, path: str, how: str
) -> None:
    """Cancelling the call by its id, or closing the session while it runs, ends it as
    ``cancelled`` on every path; none of its processes (escaped ones included) runs."""
    got: list[tuple[ErrorKind | None, str]] = []

    async def run() -> None:
        got.append(await _run(session, path, {"command": _escaping(marker)}, "c1"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await _started(marker)
        if how == "cancel":
            assert session.cancel("c1")
        else:
            await session.aclose()
    [(kind, text)] = got
    assert kind is ErrorKind.CANCELLED, text
    await _gone(marker)


@pytest.mark.parametrize("path", ["call", "stream"])
async def test_closing_a_session_stops_calls_made_without_an_id(
    session: Session, marker: str, path: str
) -> None:
    """A call made without a call id cannot be cancelled by id, but the session's close
    still stops it and every process it started."""
    got: list[tuple[ErrorKind | None, str]] = []

    async def run() -> None:
        if path == "call":
            result = await session.call("bash", {"command": _escaping(marker)})
        else:
            async with session.stream("bash", {"command": _escaping(marker)}) as items:
                last = [item async for item in items][-1]
            assert isinstance(last, CallResult)
            result = last
        got.append((result.error.kind if result.error else None, result.text))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await _started(marker)
        await session.aclose()
    [(kind, text)] = got
    assert kind is ErrorKind.CANCELLED, text
    await _gone(marker)


async def test_closing_a_stream_early_leaves_no_process(session: Session, marker: str) -> None:
    """A host that stops reading a stream after the first progress item leaves none of
    the command's processes running."""
    command = _escaping(marker, "echo first; sleep 300")
    async with session.stream("bash", {"command": command}, "c1") as items:
        async for _ in items:
            break
    await _gone(marker)


@pytest.mark.parametrize(
    ("how", "tail"),
    [("kill_task", "sleep 300"), ("close", "sleep 300"), ("close", "true")],
    ids=["kill_task", "close", "close after the shell exited"],
)
async def test_a_background_task_leaves_no_process(
    session: Session, marker: str, how: str, tail: str
) -> None:
    """A background task with escaped processes: ``kill_task`` or the session's close
    stops all of them, also when the task's own shell has exited already."""
    started = await session.call(
        "bash", {"command": _escaping(marker, tail), "is_background": True}
    )
    assert started.error is None, started.text
    assert await _poll(lambda: len(_holding(marker)) >= ESCAPED - 1), _holding(marker)
    if how == "kill_task":
        killed = await session.call("kill_task", {"task_id": started.output["task_id"]})
        assert killed.error is None, killed.text
    else:
        await session.aclose()
    await _gone(marker)


async def test_a_batch_stops_on_cancel_and_on_close(session: Session, marker: str) -> None:
    """Three commands in one ``call_many`` (one after the other, since bash writes):
    cancelling the running one by id ends it ``cancelled`` and the next starts; closing
    the session ends the running one and starts none after it (``cancelled``, "not
    run"); no process of any of them is left."""
    calls = [("bash", {"command": _escaping(f"{marker}n{i}")}, f"b{i}") for i in range(3)]
    got: list[list[CallResult]] = []

    async def run() -> None:
        got.append(await session.call_many(calls))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await _started(f"{marker}n0")
        assert session.cancel("b0")
        await _started(f"{marker}n1")
        await session.aclose()
    [results] = got
    assert [r.error.kind if r.error else None for r in results] == [ErrorKind.CANCELLED] * 3
    assert "not run" in results[2].text
    for i in range(3):
        await _gone(f"{marker}n{i}")


# -- commands too long for the kernel ---------------------------------------------------


async def test_the_command_length_is_in_the_schema(session: Session) -> None:
    """The listed schema bounds ``command`` (``maxLength``), so the model sees the limit."""
    [bash] = [d for d in session.definitions("openai") if d["function"]["name"] == "bash"]
    limit = bash["function"]["parameters"]["properties"]["command"]["maxLength"]
    assert 10_000 <= limit <= 128 * 1024


@pytest.mark.parametrize("path", PATHS)
async def test_a_command_too_long_is_invalid_params(
    session: Session, tmp_path: Path, path: str
) -> None:
    """A command over the schema's limit, or within it in characters but over the
    kernel's 128 KiB in UTF-8, is ``invalid_params`` naming the limit (never
    "Argument list too long"), in the foreground and in the background; nothing runs.
    A command at the limit runs."""
    [bash] = [d for d in session.definitions("openai") if d["function"]["name"] == "bash"]
    limit = bash["function"]["parameters"]["properties"]["command"]["maxLength"]
    ran = tmp_path / "ws" / "ran"
    too_long = "touch ran; : " + "x" * limit
    wide = "touch ran; : " + "\U0001f600" * (limit // 3)  # 4 bytes each
    for command in (too_long, wide):
        for background in (False, True):
            arguments = {"command": command, "is_background": background}
            kind, text = await _run(session, path, arguments)
            assert kind is ErrorKind.INVALID_PARAMS, text[:300]
            assert "command" in text
            assert "Argument list too long" not in text
            assert len(text) < 2_000
    assert not ran.exists()
    at_limit = "echo ok; : " + "x" * (limit - len("echo ok; : "))
    kind, text = await _run(session, path, {"command": at_limit})
    assert kind is None, text[:300]
    assert text.strip() == "ok"
