"""toolweave-skills: Agent Skills (folders with a ``SKILL.md``) for toolweave.

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``skills``); ``load_packs(include=["skills"])`` loads it
alone. Skills are found in the workspace's ``.skills`` folder and in
``~/.config/toolweave/skills`` (the ``skill`` tool's ``folders`` param), looked at
anew on every call, so skills added while a session runs are announced and loadable.
"""

from __future__ import annotations

from toolweave_skills import _pack as pack
from toolweave_skills._index import (
    DEFAULT_FOLDERS,
    Skill,
    SkillIndex,
    SkillScan,
    parse_skill,
    resolve_folders,
)
from toolweave_skills._reminder import SkillsReminder, SkillsState
from toolweave_skills._skill import (
    SkillArgs,
    SkillFile,
    SkillInfo,
    SkillList,
    SkillLoaded,
    SkillResult,
    SkillsParams,
    SkillTool,
    index_for,
)

__all__ = [
    "DEFAULT_FOLDERS",
    "Skill",
    "SkillArgs",
    "SkillFile",
    "SkillIndex",
    "SkillInfo",
    "SkillList",
    "SkillLoaded",
    "SkillResult",
    "SkillScan",
    "SkillTool",
    "SkillsParams",
    "SkillsReminder",
    "SkillsState",
    "index_for",
    "pack",
    "parse_skill",
    "resolve_folders",
]
