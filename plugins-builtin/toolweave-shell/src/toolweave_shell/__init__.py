"""toolweave-shell: run shell commands in the workspace, in the foreground or background.

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``shell``); ``load_packs(include=["shell"])`` loads it alone.
Commands run through the session's :class:`Terminal` resource (a
:class:`LocalTerminal` unless the host inserts its own).
"""

from __future__ import annotations

from toolweave_shell import _pack as pack
from toolweave_shell._bash import Bash, BashArgs, BashOutput, BashParams
from toolweave_shell._env import SAFE_VARIABLES
from toolweave_shell._notify import EXECUTION_NOTIFICATIONS
from toolweave_shell._task_tools import (
    KillTask,
    KillTaskArgs,
    KillTaskResult,
    TaskOutput,
    TaskOutputArgs,
    TaskOutputResult,
    TaskParams,
    TaskSummary,
    WaitTasks,
    WaitTasksArgs,
    WaitTasksResult,
)
from toolweave_shell._tasks import BackgroundTasks, ShellTasks, TaskOwner, TaskRecord, TaskStatus
from toolweave_shell._terminal import (
    BackgroundProcess,
    LocalTerminal,
    RunningCommand,
    Terminal,
)

__all__ = [
    "EXECUTION_NOTIFICATIONS",
    "SAFE_VARIABLES",
    "BackgroundProcess",
    "BackgroundTasks",
    "Bash",
    "BashArgs",
    "BashOutput",
    "BashParams",
    "KillTask",
    "KillTaskArgs",
    "KillTaskResult",
    "LocalTerminal",
    "RunningCommand",
    "ShellTasks",
    "TaskOutput",
    "TaskOutputArgs",
    "TaskOutputResult",
    "TaskOwner",
    "TaskParams",
    "TaskRecord",
    "TaskStatus",
    "TaskSummary",
    "Terminal",
    "WaitTasks",
    "WaitTasksArgs",
    "WaitTasksResult",
    "pack",
]
