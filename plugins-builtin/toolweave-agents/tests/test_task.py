"""The task tool end to end: a scripted sub-agent driving real fs and shell tools through
a real session."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import CallHook, CallResult, ErrorKind, HookCall, Progress, Session
from toolweave.processes import process_alive
from toolweave.testing import ScriptedModel, step
from toolweave_agents import ScriptedRunner

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]

READ = step("read_file", {"path": "notes.txt"})
EDIT = step("edit_file", {"path": "notes.txt", "old_string": "red", "new_string": "blue"})


def config(**params: Any) -> dict[str, Any]:
    """A set of fs and shell tools and the task tool with ``params``."""
    tools: list[Any] = ["read_file", "edit_file", "write_file", "bash"]
    return {"tools": [*tools, {"id": "task", "params": params}]}


async def stream(
    session: Session, arguments: dict[str, Any], call_id: str | None = None
) -> tuple[CallResult, list[Progress]]:
    """Call ``task`` in streaming mode: its result and its progress items."""
    progress: list[Progress] = []
    result: CallResult | None = None
    async with session.stream("task", arguments, call_id) as items:
        async for item in items:
            if isinstance(item, CallResult):
                result = item
            else:
                progress.append(item)
    assert result is not None
    return result, progress


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
async def test_sub_agent_reads_and_edits_a_file(
    make_session: SessionFactory, workspace: Path, provider: str
) -> None:
    """A sub-agent reads a file and edits it with the fs tools; the file changes, the
    answer comes back with a summary of the calls, and each step streams as progress."""
    runner = ScriptedRunner(ScriptedModel([READ, EDIT], provider=provider), "colour is blue now")
    session = make_session(runner, config())
    result, progress = await stream(session, {"prompt": "Make the colour blue in notes.txt."})
    assert result.error is None, result.text
    assert (workspace / "notes.txt").read_text() == "colour: blue\nsize: large\n"
    assert result.output["answer"] == "colour is blue now"
    assert result.output["steps"] == 3
    assert [c["tool"] for c in result.output["calls"]] == ["read_file", "edit_file"]
    assert "sub-agent: 3 steps, 2 tool calls: read_file, edit_file" in result.text
    assert [p.message for p in progress] == [
        "step 1: read_file",
        "  read_file: ok",
        "step 2: edit_file",
        "  edit_file: ok",
        "step 3: answered",
    ]
    # The runner saw the task first, then each reply with the read file's text.
    assert runner.offered[0] == ["read_file", "edit_file", "write_file", "bash"]
    assert "colour: red" in str(runner.conversations[1][-1])


async def test_tools_outside_the_subset_are_refused_and_reported(
    make_session: SessionFactory, workspace: Path
) -> None:
    """With ``tools = ["read_file"]`` the sub-agent is offered read_file alone; its
    edit_file call is refused without running and the refusal is what it reads next."""
    runner = ScriptedRunner(ScriptedModel([READ, EDIT]))
    session = make_session(runner, config(tools=["read_file", "no_such_tool"]))
    result, _ = await stream(session, {"prompt": "Make the colour blue."})
    assert result.error is None, result.text
    assert runner.offered == [["read_file"]] * 3
    assert (workspace / "notes.txt").read_text().startswith("colour: red")
    assert result.output["calls"][1] == {
        "step": 2,
        "tool": "edit_file",
        "error": "permission_denied",
    }
    told = str(runner.conversations[2][-1])
    assert "edit_file is not one of your tools; you may use: read_file" in told


async def test_arguments_narrow_the_subset_and_never_widen_it(make_session: SessionFactory) -> None:
    """``tools`` in the arguments narrows the configured set; a name outside it is
    ``invalid_params`` naming what the sub-agent may use, and nothing runs."""
    runner = ScriptedRunner(ScriptedModel([READ]))
    session = make_session(runner, config(tools=["read_file", "edit_file"]))
    narrowed, _ = await stream(session, {"prompt": "Read.", "tools": ["read_file"]})
    assert narrowed.error is None, narrowed.text
    assert runner.offered[0] == ["read_file"]
    wider = await session.call("task", {"prompt": "Run.", "tools": ["read_file", "bash"]})
    assert wider.error is not None
    assert wider.error.kind is ErrorKind.INVALID_PARAMS
    assert "bash" in wider.text
    assert "it may use: read_file, edit_file" in wider.text
    assert runner.turns == 2  # the refused call never reached the runner


async def test_the_task_tool_is_not_offered_unless_configured(
    make_session: SessionFactory,
) -> None:
    """By default a sub-agent gets every tool but task, and its task call is refused;
    named in the params, task is offered and nests up to ``max_depth``."""
    inner = step("task", {"prompt": "Go deeper."})
    runner = ScriptedRunner(ScriptedModel([inner]))
    session = make_session(runner, config())
    result, _ = await stream(session, {"prompt": "Delegate."})
    assert "task" not in runner.offered[0]
    assert result.output["calls"] == [{"step": 1, "tool": "task", "error": "permission_denied"}]

    runner = ScriptedRunner(ScriptedModel([inner]))
    session = make_session(runner, config(tools=["task", "read_file"], max_depth=1))
    result, _ = await stream(session, {"prompt": "Delegate."})
    assert runner.offered[0] == ["read_file", "task"]  # in listing order
    assert result.output["calls"] == [{"step": 1, "tool": "task", "error": "permission_denied"}]
    assert "may nest at most 1 deep" in str(runner.conversations[1][-1])


class Counting(CallHook):
    """Counts every call it sees, with its depth, and refuses bash."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def admit(self, call: HookCall) -> None:
        self.seen.append((call.name, call.depth))

    def before(self, call: HookCall) -> str | None:
        return None

    async def on_error(self, call: HookCall, result: CallResult) -> str:
        return "(seen by the host's hook)"


async def test_the_parent_sessions_hooks_see_the_sub_agents_calls(
    make_session: SessionFactory,
) -> None:
    """A hook of the parent session sees the task call and each of its sub-agent's calls
    (one level deeper), and adds its text to the failures the sub-agent reads."""
    hook = Counting()
    bad = step("read_file", {"path": "missing.txt"}, expect="not_found")
    runner = ScriptedRunner(ScriptedModel([READ, bad]))
    session = make_session(runner, config(), hooks=[hook])
    result, _ = await stream(session, {"prompt": "Read two files."})
    assert result.error is None, result.text
    assert hook.seen == [("task", 0), ("read_file", 1), ("read_file", 1)]
    assert "(seen by the host's hook)" in str(runner.conversations[2][-1])


async def test_step_limit(make_session: SessionFactory) -> None:
    """A sub-agent still calling tools after ``max_steps`` turns fails the call with
    ``execution_error`` naming the limit and what it did."""
    runner = ScriptedRunner(ScriptedModel([READ, READ, READ]))
    session = make_session(runner, config(max_steps=2))
    result, progress = await stream(session, {"prompt": "Read forever."})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "did not finish within 2 steps (max_steps)" in result.text
    assert "partial progress: sub-agent: 2 steps, 2 tool calls: read_file, read_file" in result.text
    assert result.error.data["limit"] == "max_steps"
    assert runner.turns == 2
    assert len(progress) == 4


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


async def _gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while process_alive(pid):
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.02)
    return True


async def _written(path: Path, seconds: float = 30.0) -> int:
    """The process id in ``path``, once a command wrote it."""
    deadline = time.monotonic() + seconds
    while (pid := _pid(path)) is None:
        assert time.monotonic() < deadline, f"{path.name} was not written"
        await anyio.sleep(0.02)
    return pid


SLEEP = step("bash", {"command": "echo $$ > sleeper.pid; exec sleep 300"}, expect=None)


async def test_deadline_stops_the_sub_agent_and_its_call(
    make_session: SessionFactory, workspace: Path
) -> None:
    """When ``timeout_s`` passes during a tool call, the call is stopped (its process is
    gone) and the task fails with ``timeout`` and the progress made until then."""
    runner = ScriptedRunner(ScriptedModel([READ, SLEEP]))
    session = make_session(runner, config(timeout_s=2))
    result, _ = await stream(session, {"prompt": "Read, then wait."})
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT, result.text
    assert "did not finish within 2 s (timeout_s)" in result.text
    assert "read_file, bash failed: timeout" in result.text
    pid = _pid(workspace / "sleeper.pid")
    assert pid is not None
    assert await _gone(pid)


async def test_cancelling_the_parent_cancels_the_sub_agents_call(
    make_session: SessionFactory, workspace: Path
) -> None:
    """Cancelling the task call by id ends it as ``cancelled`` and kills the process
    of the shell call its sub-agent was waiting on; the session closes cleanly."""
    runner = ScriptedRunner(ScriptedModel([SLEEP, READ]))
    session = make_session(runner, config())
    pid_file = workspace / "sleeper.pid"
    outcome: list[CallResult] = []

    async def run() -> None:
        result, _ = await stream(session, {"prompt": "Wait."}, "t1")
        outcome.append(result)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        pid = await _written(pid_file)
        assert pid is not None
        assert process_alive(pid)
        assert session.cancel("t1")
    (result,) = outcome
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED, result.text
    assert await _gone(pid)
    assert runner.turns == 1  # the sub-agent went no further
    assert session.running == []
    await session.aclose()


async def test_without_a_runner_the_task_is_unavailable(make_session: SessionFactory) -> None:
    """A session whose host gave no model runner answers ``unavailable`` saying so."""
    session = make_session(None, config())
    result = await session.call("task", {"prompt": "Anything."})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "needs a model runner" in result.text
