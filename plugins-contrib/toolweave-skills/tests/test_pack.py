"""The skills pack as a host sees it: discovery, kind, the reminder."""

from __future__ import annotations

from toolweave import Kind, load_packs


def test_entry_point_registers_the_skill_tool_and_reminder() -> None:
    """``load_packs(include=["skills"])`` finds ``skill`` (read-only, kind skill) and
    registers the new-skill reminder."""
    packs = load_packs(include=["skills"], strict=True)
    info = packs.packs["skills"]
    assert (info.status, info.dist, info.target) == (
        "loaded",
        "toolweave-skills",
        "toolweave_skills:pack",
    )
    toolset = packs.build()
    assert toolset.names == ["skill"]
    (entry,) = toolset
    assert entry.definition.kind == Kind.SKILL.value
    assert entry.definition.read_only is True
    assert [r.id for r in toolset.reminders] == ["skills.available"]
