"""The new-skill reminder: after a call, tell the model about skills it has not heard of."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field
from toolweave import CallInfo, Context, Reminder, ToolSet

from toolweave_skills._index import Skill
from toolweave_skills._skill import SkillArgs, SkillsParams, SkillTool, index_for

__all__ = ["SkillsReminder", "SkillsState"]

_SKILL = f"{SkillTool.namespace}:{SkillTool.id}"


class SkillsState(BaseModel):
    """The skills a session's model has been told about (persisted session state)."""

    state_key: ClassVar[str] = "skills.announced"

    announced: list[str] = Field(default_factory=list)
    """Names of the skills announced (or listed) so far."""

    started: bool = False
    """Whether the skills present at the session's first call were dealt with."""


def _lines(skills: list[Skill]) -> str:
    return "\n".join(f"- {s.name}: {s.description}" for s in skills)


class SkillsReminder(Reminder):
    """Announces skills that became available, after the call that follows.

    At a session's first call it lists the skills that exist (unless the ``skill``
    tool's ``announce_existing`` param is off); after that, each skill that appears in
    a watched folder while the session runs is announced once, after the next call.
    Listing the skills with ``skill`` counts as being told.
    """

    id = "skills.available"
    requires = f"tool:{_SKILL}"

    def __init__(self) -> None:
        self._last: tuple[ToolSet, str, SkillsParams] | None = None
        """The skill tool's name and params in the set of the last call."""

    def _target(self, toolset: ToolSet) -> tuple[str, SkillsParams]:
        last = self._last
        if last is not None and last[0] is toolset:
            return last[1], last[2]
        entry = next((e for e in toolset.entries if e.tool.fqid == _SKILL), None)
        name = entry.name if entry is not None else SkillTool.id
        params = entry.params if entry is not None else None
        if not isinstance(params, SkillsParams):
            params = SkillsParams()
        self._last = (toolset, name, params)
        return name, params

    def collect(self, ctx: Context, call: CallInfo) -> str | None:
        """Look at the folders; name the skills the model has not heard of."""
        session = ctx.session
        name, params = self._target(session.toolset)
        skills = index_for(session, params).scan().skills
        state = session.state.get(SkillsState)
        known = set(state.announced)
        fresh = [skill for key, skill in sorted(skills.items()) if key not in known]
        first = not state.started
        state.started = True
        state.announced = sorted(skills)  # a removed skill is announced again if it returns
        listed = (
            call.tool == _SKILL
            and call.result.error is None
            and isinstance(call.args, SkillArgs)
            and not call.args.name
        )
        if not fresh or listed or (first and not params.announce_existing):
            return None
        if first:
            return (
                f"Skills available in this session (load one with {name} when a task "
                f"matches its description):\n{_lines(fresh)}"
            )
        noun = "skill is" if len(fresh) == 1 else "skills are"
        return f"A new {noun} available (load with {name} when a task matches):\n{_lines(fresh)}"
