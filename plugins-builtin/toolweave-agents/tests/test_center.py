"""A sub-agent of a session attached to a registry center: the session's role and the
center's switches hold for its calls."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, Session
from toolweave.center import Center
from toolweave.testing import ScriptedModel, step
from toolweave_agents import Message, Reply, ScriptedRunner

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]

READ = step("read_file", {"path": "notes.txt"}, expect=None)
EDIT = step("edit_file", {"path": "notes.txt", "old_string": "red", "new_string": "blue"})
CONFIG = {
    "tools": [
        "read_file",
        "edit_file",
        {"id": "task", "params": {"tools": ["read_file", "edit_file"]}},
    ]
}


@pytest.fixture
def center(tmp_path: Path) -> Iterator[Center]:
    """A registry center in a temporary store."""
    opened = Center.open(tmp_path / "center.db")
    yield opened
    opened.close()


class DisablingRunner(ScriptedRunner):
    """Disables read_file at the center once the first turn was answered."""

    def __init__(self, center: Center, model: ScriptedModel) -> None:
        super().__init__(model)
        self.center = center

    async def reply(self, messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
        if self.turns == 1:
            self.center.disable("read_file", reason="maintenance")
        return await super().reply(messages, tools)


async def test_the_sessions_role_holds_for_the_sub_agent(
    make_session: SessionFactory, center: Center, workspace: Path
) -> None:
    """A tool the session's role may not use is not offered to the sub-agent even when
    the params name it, and its call is refused without running."""
    runner = ScriptedRunner(ScriptedModel([EDIT]))
    session = make_session(runner, CONFIG)
    center.attach(session, role="reader")
    center.set_roles("edit_file", ["writer"])
    result = await session.call("task", {"prompt": "Make it blue."})
    assert result.error is None, result.text
    assert runner.offered[0] == ["read_file"]
    assert result.output["calls"] == [
        {"step": 1, "tool": "edit_file", "error": "permission_denied"}
    ]
    assert (workspace / "notes.txt").read_text().startswith("colour: red")


async def test_a_tool_disabled_meanwhile_is_refused_inside_the_sub_agent(
    make_session: SessionFactory, center: Center
) -> None:
    """A tool the center disables while the sub-agent runs answers its next call with
    the center's refusal (``unavailable`` with the operators' reason)."""
    runner = DisablingRunner(center, ScriptedModel([READ, READ]))
    session = make_session(runner, CONFIG)
    center.attach(session, role="reader")
    result = await session.call("task", {"prompt": "Read twice."})
    assert result.error is None, result.text
    assert runner.offered[0] == ["read_file", "edit_file"]
    errors = [c["error"] for c in result.output["calls"]]
    assert errors == [None, "unavailable"]
    assert "maintenance" in str(runner.conversations[2][-1])
    assert ErrorKind.UNAVAILABLE.value in result.text
