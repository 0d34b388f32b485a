"""The shell pack as a host sees it: discovery, kinds, resources."""

from __future__ import annotations

from pathlib import Path

from toolweave import Kind, Resources, load_packs
from toolweave_shell import BackgroundTasks, LocalTerminal, Terminal


def test_entry_point_registers_bash_and_the_task_tools(tmp_path: Path) -> None:
    """``load_packs(include=["shell"])`` finds the four tools with their kinds; only the
    readers are read-only; each session gets a local terminal and a task manager."""
    packs = load_packs(include=["shell"], strict=True)
    assert packs.packs["shell"].dist == "toolweave-shell"
    toolset = packs.build()
    kinds = {e.name: (e.definition.kind, e.definition.read_only) for e in toolset}
    assert kinds == {
        "bash": (Kind.EXECUTE.value, False),
        "task_output": (Kind.BACKGROUND_TASK_ACTION.value, True),
        "wait_tasks": (Kind.WAIT_TASKS_ACTION.value, True),
        "kill_task": (Kind.KILL_TASK_ACTION.value, False),
    }
    session = toolset.session(workspace=tmp_path)
    assert isinstance(session.resources.require(Terminal), LocalTerminal)
    assert isinstance(session.resources.require(BackgroundTasks), BackgroundTasks)


def test_a_host_terminal_is_kept(tmp_path: Path) -> None:
    """A terminal the host inserted under ``Terminal`` is the one sessions use."""
    host = Resources()
    mine = LocalTerminal(kill_grace=0.1)
    host.insert(mine, Terminal)
    session = (
        load_packs(include=["shell"], strict=True)
        .build()
        .session(workspace=tmp_path, resources=host)
    )
    assert session.resources.require(Terminal) is mine
