"""Plan mode: ``enter_plan`` / ``exit_plan``, and the guard that holds back changes.

While plan mode is on, the session refuses every tool that is not read-only with
``permission_denied`` and a message that says to finish the plan first. The flag is
persisted session state (:class:`PlanModeState`), so a restarted host keeps it.
"""

from __future__ import annotations

import time
from typing import ClassVar, final

from pydantic import BaseModel, Field
from toolweave import (
    CallHook,
    Capabilities,
    Context,
    ErrorKind,
    HookCall,
    Kind,
    Session,
    Tool,
    ToolEntry,
    ToolError,
    ToolOutput,
)

from toolweave_plan._entries import entry_of

__all__ = [
    "MAX_PLAN_CHARS",
    "MAX_REASON_CHARS",
    "EnterPlan",
    "EnterPlanArgs",
    "ExitPlan",
    "ExitPlanArgs",
    "PlanModeHook",
    "PlanModeResult",
    "PlanModeState",
    "plan_mode_guard",
    "set_plan_mode",
]


MAX_PLAN_CHARS = 20_000
"""The longest plan ``exit_plan`` takes, in characters: a concise plan of many steps is
a few thousand; the plan is kept in the session's state."""

MAX_REASON_CHARS = 500
"""The longest reason ``enter_plan`` takes (one sentence), in characters."""


class PlanModeState(BaseModel):
    """Whether the session is planning, and the last plan presented (persisted)."""

    state_key: ClassVar[str] = "plan.mode"

    active: bool = False
    """Whether plan mode is on."""

    entered_at: float | None = None
    """When plan mode was last turned on (seconds since the epoch)."""

    plan: str | None = None
    """The plan presented when plan mode was last left."""


def _client_name(session: Session, fqid: str, fallback: str) -> str:
    entry = entry_of(session.toolset, fqid)
    return fallback if entry is None else entry.name


def plan_mode_guard(session: Session, entry: ToolEntry) -> ToolError | None:
    """The call guard of plan mode: refuses tools that are not read-only while it is on.

    :class:`PlanModeHook` runs it (a host may also ``session.add_guard`` it).
    """
    if entry.read_only or not session.state.get(PlanModeState).active:
        return None
    exit_name = _client_name(session, f"{ExitPlan.namespace}:{ExitPlan.id}", ExitPlan.id)
    return ToolError(
        ErrorKind.PERMISSION_DENIED,
        f"Plan mode is on: {entry.name} may change files or run commands, so it cannot "
        f"run yet. Finish planning first: keep exploring with read-only tools, then "
        f"present your plan with {exit_name}; once plan mode is off, carry it out.",
    )


@final
class PlanModeHook(CallHook):
    """Plan mode as a call hook of one session: :func:`plan_mode_guard` as its ``admit``
    step, compiled only for tools that are not read-only and only while plan mode is on,
    so calls cost nothing for plan mode while it is off.

    Whatever turns the mode on or off (``enter_plan``, ``exit_plan``,
    :func:`set_plan_mode`) calls ``session.refresh_hooks()``.
    """

    name = "plan_mode"

    def __init__(self, session: Session) -> None:
        self._session = session

    def applies_to(self, entry: ToolEntry) -> bool:
        """Tools that are not read-only, while plan mode is on."""
        return not entry.read_only and self._session.state.get(PlanModeState).active

    def admit(self, call: HookCall) -> ToolError | None:
        """Refuse the call while plan mode is on."""
        return plan_mode_guard(call.session, call.entry)


async def set_plan_mode(session: Session, active: bool) -> None:
    """Turn plan mode on or off from the host (e.g. a "plan first" switch) and save it."""
    state = session.state.get(PlanModeState)
    state.active = active
    state.entered_at = time.time() if active else state.entered_at
    session.refresh_hooks()
    await session.save_state()


class PlanModeResult(ToolOutput):
    """What ``enter_plan`` and ``exit_plan`` return."""

    active: bool
    """Whether plan mode is on after the call."""

    changed: bool
    """Whether the call changed the mode."""

    message: str
    """What the model should do now."""

    def to_model(self) -> str:
        """The message."""
        return self.message


class EnterPlanArgs(BaseModel):
    """Arguments of ``enter_plan``."""

    reason: str | None = Field(
        default=None,
        max_length=MAX_REASON_CHARS,
        description="Why planning first is needed, in one sentence (optional).",
    )
    """Why planning first is needed."""


class EnterPlan(Tool[EnterPlanArgs, PlanModeResult]):
    """Turn plan mode on: only read-only tools run until the plan is presented."""

    id = "enter_plan"
    namespace = "plan"
    kind = Kind.PLAN
    description = """\
Switch to plan mode before a large or risky change: until you leave it with \
{name:exit_plan}, only read-only tools run (reading, searching, listing, asking the \
user); anything that edits files or runs commands is refused.

Use it when the task touches many files, when there are several reasonable \
approaches, or when the user asked for a plan first. Do not use it for small, clear \
changes, or for pure research and questions (those change nothing anyway)."""
    capabilities = Capabilities(read_only=True, scope="none", blocking=False)
    state = PlanModeState
    requires = "tool:exit_plan"

    def run(self, ctx: Context, args: EnterPlanArgs) -> PlanModeResult:
        """Turn plan mode on (a no-op when it is on already)."""
        state = ctx.state(PlanModeState)
        exit_name = _client_name(ctx.session, f"{ExitPlan.namespace}:{ExitPlan.id}", "exit_plan")
        if state.active:
            return PlanModeResult(
                active=True,
                changed=False,
                message=f"Plan mode is already on. Present your plan with {exit_name}.",
            )
        state.active = True
        state.entered_at = time.time()
        ctx.session.refresh_hooks()
        return PlanModeResult(
            active=True,
            changed=True,
            message=(
                "Plan mode is on. Explore with read-only tools only: read and search the "
                "code, ask the user about open questions. Do not edit files or run "
                f"commands. When the plan is ready, present it with {exit_name}."
            ),
        )


class ExitPlanArgs(BaseModel):
    """Arguments of ``exit_plan``."""

    plan: str = Field(
        min_length=1,
        max_length=MAX_PLAN_CHARS,
        description=(
            "The plan, in Markdown: the steps in order, the files each one changes, and "
            "how you will check the result."
        ),
    )
    """The plan."""


class ExitPlan(Tool[ExitPlanArgs, PlanModeResult]):
    """Present the plan and turn plan mode off."""

    id = "exit_plan"
    namespace = "plan"
    kind = Kind.PLAN
    description = """\
Present your finished plan and leave plan mode, so that tools that change files and \
run commands work again. Give the plan as concise Markdown: the steps in order, the \
files each one touches, and how you will verify the result.

Use it only when plan mode is on and you know what to do; if questions remain, ask \
the user first. Do not use it to report research results or to ask for permission \
on a task that was not planned."""
    capabilities = Capabilities(read_only=True, scope="none", blocking=False)
    state = PlanModeState

    def run(self, ctx: Context, args: ExitPlanArgs) -> PlanModeResult:
        """Record the plan and turn plan mode off."""
        state = ctx.state(PlanModeState)
        state.plan = args.plan
        if not state.active:
            return PlanModeResult(
                active=False,
                changed=False,
                message="Plan mode was not on; the plan was recorded. Go ahead with it.",
            )
        state.active = False
        ctx.session.refresh_hooks()
        return PlanModeResult(
            active=False,
            changed=True,
            message=(
                "Plan mode is off; every tool is available again. Carry out the plan step "
                "by step, and keep the user informed."
            ),
        )
