"""Counts in the shell tools' messages agree with their nouns."""

from __future__ import annotations

from toolweave_shell import TaskSummary
from toolweave_shell._output import omission_marker


def test_one_of_a_kind_is_singular() -> None:
    """One character or line left out, one byte of unread output, read singular."""
    assert "[... 1 character, 1 line of output omitted here ...]" in omission_marker(1, 1)
    assert "[... 2 characters, 3 lines of output" in omission_marker(2, 3)
    task = TaskSummary(task_id="task-1", command="make", status="running", unread_bytes=1)
    assert task.line() == "task-1 `make`: still running; 1 byte of unread output"
