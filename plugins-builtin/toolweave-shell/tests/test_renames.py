"""Renamed tools and parameters reach every message the shell tools write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from toolweave import Session

pytestmark = pytest.mark.anyio

BASH = {
    "id": "bash",
    "name": "Shell",
    "rename": {"is_background": "detach", "timeout": "limit_ms"},
}
TASK_TOOLS = [
    {"id": "task_output", "name": "TaskRead"},
    {"id": "wait_tasks", "name": "TaskWait"},
    {"id": "kill_task", "name": "TaskStop"},
]
CANONICAL = ("is_background", "`timeout`", "task_output", "wait_tasks", "kill_task", "bash ")


def _canonical_in(text: str) -> list[str]:
    return [word for word in CANONICAL if word in text]


async def test_bash_messages_use_client_names(make_session: Callable[..., Session]) -> None:
    """Timeouts, leftover processes and background starts name the renamed parameters
    and the renamed task tools."""
    session = make_session({"tools": [BASH, *TASK_TOOLS]})
    timed_out = await session.call("Shell", {"command": "sleep 30", "limit_ms": 300})
    assert timed_out.text.startswith("Shell timed out after 0.3 s")
    assert "give a longer `limit_ms`" in timed_out.text
    leftover = await session.call("Shell", {"command": "sleep 30 & echo done"})
    assert "(use `detach` for servers and watchers)" in leftover.text
    started = await session.call("Shell", {"command": "echo hi; sleep 30", "detach": True})
    assert (
        "read its new output with TaskRead, wait for it with TaskWait or stop it with "
        "TaskStop, using this task id." in started.text
    )
    task_id = started.output["task_id"]
    waited = await session.call("TaskWait", {"task_ids": [task_id], "timeout": 300})
    assert "Read unread output with TaskRead." in waited.text
    for result in (timed_out, leftover, started, waited):
        assert _canonical_in(result.text) == []


async def test_background_turned_off_names_client_parameters(
    make_session: Callable[..., Session],
) -> None:
    """The refusal of a background command names the renamed parameters."""
    off: dict[str, Any] = {**BASH, "params": {"enabled_background": False}}
    session = make_session({"tools": [off]})
    result = await session.call("Shell", {"command": "true", "detach": True})
    assert "without `detach` (with a `limit_ms` if it takes long)" in result.text
    assert _canonical_in(result.text) == []


async def test_only_the_configured_task_tools_are_offered(
    make_session: Callable[..., Session],
) -> None:
    """Actions whose tool the set lacks are left out of the background note, and with no
    task tool at all the note offers none."""
    some = make_session({"tools": [BASH, TASK_TOOLS[2]]})
    started = await some.call("Shell", {"command": "sleep 30", "detach": True})
    assert "after this call; stop it with TaskStop, using this task id." in started.text
    alone = make_session({"tools": [BASH]})
    started = await alone.call("Shell", {"command": "sleep 30", "detach": True})
    assert started.text.endswith("It keeps running after this call.")


async def test_descriptions_name_the_task_tools_as_configured(
    make_session: Callable[..., Session],
) -> None:
    """bash and wait_tasks name the renamed task tools; without them, bash says what
    they do."""
    toolset = make_session({"tools": [BASH, *TASK_TOOLS]}).toolset
    assert (
        "read its new output with TaskRead, wait for it with TaskWait or stop it with TaskStop."
        in toolset["Shell"].description
    )
    assert "cheaper than calling TaskRead in a loop" in toolset["TaskWait"].description
    alone = make_session({"tools": [BASH]}).toolset
    assert "with the task output tool" in alone["Shell"].description
