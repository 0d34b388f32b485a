"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import ToolSetBuilder, hookimpl

from toolweave_skills._reminder import SkillsReminder
from toolweave_skills._skill import SkillTool


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register ``skill``."""
    builder.add(SkillTool)


@hookimpl
def register_reminders(builder: ToolSetBuilder) -> None:
    """Register the reminder that announces new skills."""
    builder.add_reminder(SkillsReminder)
