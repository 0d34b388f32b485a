"""toolweave-plan: a todo list, plan mode, and questions to the user.

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``plan``); ``load_packs(include=["plan"])`` loads it alone.
``ask_user`` needs the host to provide an :class:`AskUserHandler` resource.
"""

from __future__ import annotations

from toolweave_plan import _pack as pack
from toolweave_plan._ask_user import (
    Answer,
    AskUser,
    AskUserArgs,
    AskUserHandler,
    AskUserOutput,
    Question,
    ScriptedAskUser,
)
from toolweave_plan._plan_mode import (
    EnterPlan,
    EnterPlanArgs,
    ExitPlan,
    ExitPlanArgs,
    PlanModeHook,
    PlanModeResult,
    PlanModeState,
    plan_mode_guard,
    set_plan_mode,
)
from toolweave_plan._reminder import TodoReminder
from toolweave_plan._todos import (
    TodoItem,
    TodoList,
    TodoParams,
    TodoRead,
    TodoReadArgs,
    TodoState,
    TodoStatus,
    TodoWrite,
    TodoWriteArgs,
)

__all__ = [
    "Answer",
    "AskUser",
    "AskUserArgs",
    "AskUserHandler",
    "AskUserOutput",
    "EnterPlan",
    "EnterPlanArgs",
    "ExitPlan",
    "ExitPlanArgs",
    "PlanModeHook",
    "PlanModeResult",
    "PlanModeState",
    "Question",
    "ScriptedAskUser",
    "TodoItem",
    "TodoList",
    "TodoParams",
    "TodoRead",
    "TodoReadArgs",
    "TodoReminder",
    "TodoState",
    "TodoStatus",
    "TodoWrite",
    "TodoWriteArgs",
    "pack",
    "plan_mode_guard",
    "set_plan_mode",
]
