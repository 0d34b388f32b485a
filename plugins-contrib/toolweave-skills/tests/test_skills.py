"""Skill discovery, loading, files, the new-skill reminder and hot discovery, on real
folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, Kind, PackManager, Session, tool
from toolweave_skills import SkillIndex, pack, parse_skill

pytestmark = pytest.mark.anyio


@tool(kind=Kind.READ, blocking=False)
def peek() -> str:
    """Look at something (a stand-in for any other tool of the session)."""
    return "looked"


def session_for(workspace: Path, session_id: str = "s1", **params: Any) -> Session:
    """A session with ``skill`` (default folders unless ``params`` say) and ``peek``."""
    packs = PackManager(strict=True)
    packs.add("skills", pack)
    builder = packs.builder()
    builder.add(peek)
    config = {"tools": [{"id": "skill", "params": params}, "peek"]}
    return builder.build(config).session(workspace=workspace, session_id=session_id, debug=True)


def reminder_of(text: str) -> str:
    return text.partition("<system-reminder>")[2]


async def test_default_folders_workspace_first(
    skill_writer: Any, workspace: Path, home: Path
) -> None:
    """Skills come from ./.skills and ~/.config/toolweave/skills; a name in both is the
    workspace's, and the other is reported."""
    skill_writer(workspace / ".skills", "release", "Cut a release of this project.")
    user = home / ".config" / "toolweave" / "skills"
    skill_writer(user, "pdf-forms", "Fill in PDF forms.")
    skill_writer(user, "release", "The user's generic release steps.")
    result = await session_for(workspace).call("skill", {})
    assert result.error is None, result.text
    listed = {s["name"]: s for s in result.output["listing"]["skills"]}
    assert sorted(listed) == ["pdf-forms", "release"]
    assert listed["release"]["description"] == "Cut a release of this project."
    assert listed["release"]["folder"] == str(workspace / ".skills" / "release")
    assert result.text.startswith("Available skills (load one with its name):\n- pdf-forms: ")
    (problem,) = result.output["listing"]["problems"]
    assert "is taken by" in problem


async def test_load_instructions_and_files(skill_writer: Any, workspace: Path) -> None:
    """Loading gives the body without its front matter and the folder's files (hidden
    files and caches left out); ``file`` reads one, and only inside the folder."""
    skill_writer(
        workspace / ".skills",
        "pdf-forms",
        "Fill in PDF forms.",
        "# Filling forms\n\nRun scripts/fill.py, see reference.md.",
        **{"reference.md": "Field names...", "scripts__fill.py": "print('fill')", ".hidden": "x"},
    )
    (workspace / "secret.txt").write_text("not for skills")
    session = session_for(workspace)
    loaded = await session.call("skill", {"name": "pdf-forms"})
    assert loaded.error is None, loaded.text
    assert (
        loaded.output["loaded"]["instructions"]
        == "# Filling forms\n\nRun scripts/fill.py, see reference.md."
    )
    assert loaded.output["loaded"]["files"] == ["reference.md", "scripts/fill.py"]
    assert "---" not in loaded.output["loaded"]["instructions"]
    assert "- scripts/fill.py" in loaded.text
    read = await session.call("skill", {"name": "pdf-forms", "file": "scripts/fill.py"})
    assert read.error is None, read.text
    assert read.output["file"]["content"] == "print('fill')"
    outside = await session.call("skill", {"name": "pdf-forms", "file": "../../secret.txt"})
    assert outside.error is not None
    assert outside.error.kind is ErrorKind.PERMISSION_DENIED
    missing = await session.call("skill", {"name": "pdf-forms", "file": "nope.md"})
    assert missing.error is not None
    assert missing.error.kind is ErrorKind.NOT_FOUND


async def test_unknown_skill_names_the_available_ones(skill_writer: Any, workspace: Path) -> None:
    """An unknown name is not_found and lists what exists; a file without a name is
    invalid_params."""
    skill_writer(workspace / ".skills", "release", "Cut a release.")
    session = session_for(workspace)
    result = await session.call("skill", {"name": "deploy"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND
    assert "available: release" in result.text
    bad = await session.call("skill", {"file": "x.md"})
    assert bad.error is not None
    assert bad.error.kind is ErrorKind.INVALID_PARAMS


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("no front matter\n", "does not start with YAML front matter"),
        ("---\nname: x\ndescription: y\n", "not closed"),
        ("---\nname: [x\n---\n", "not valid YAML"),
        ("---\n- a\n---\n", "not a mapping"),
        ("---\nname: Bad Name\ndescription: y\n---\n", "is not 1 to 64 lower-case"),
        ("---\nname: ok\n---\n", "no description"),
        ('---\nname: "deploy\\n"\ndescription: y\n---\n', "is not 1 to 64 lower-case"),
        ("---\nname: x\ndescription: y\nwhen: 2024-13-01\n---\n", "not valid YAML"),
        (
            "---\nname: x\ndescription: y\nx: " + "[" * 20_000 + "]" * 20_000 + "\n---\n",
            "nests deeper than 64 levels",
        ),
        ("---\nname: x\ndescription: y\nx:\n" + "- " * 20_000 + "z\n---\n", "nests deeper"),
        ("---\nname: x\ndescription: y\nx: &a [1, *a]\n---\n", "inside its own anchor"),
        (
            "---\nname: x\ndescription: y\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol]\n"
            + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]\n" for i in range(1, 10))
            + "---\n",
            "aliases repeat more than 10000 values",
        ),
        (
            "---\nname: x\ndescription: y\na0: &a0 " + "[" * 40 + "]" * 40 + "\n"
            "a1: &a1 " + "[" * 30 + "*a0" + "]" * 30 + "\n---\n",
            "deeper than 64 levels once its aliases are followed",
        ),
    ],
)
def test_broken_skill_files_say_why(tmp_path: Path, text: str, why: str) -> None:
    """Each way a SKILL.md can be broken is reported with its reason."""
    path = tmp_path / "s" / "SKILL.md"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ValueError, match=why):
        parse_skill(path)
    scan = SkillIndex((tmp_path,)).scan()
    assert scan.skills == {}
    assert why in scan.problems[0]


async def test_reminder_lists_skills_after_the_first_call(
    skill_writer: Any, workspace: Path
) -> None:
    """The first call of a session is followed by the list of skills; later calls are
    quiet while nothing changes."""
    skill_writer(workspace / ".skills", "release", "Cut a release.")
    session = session_for(workspace)
    first = await session.call("peek", {})
    assert first.output == "looked"
    note = reminder_of(first.text)
    assert "Skills available in this session (load one with skill" in note
    assert "- release: Cut a release." in note
    second = await session.call("peek", {})
    assert "<system-reminder>" not in second.text


async def test_hot_discovery_announces_a_new_skill_once(skill_writer: Any, workspace: Path) -> None:
    """A skill added while the session runs is announced after the next call, once, and
    loads at once; an edited description is picked up without a restart."""
    skills = workspace / ".skills"
    skill_writer(skills, "release", "Cut a release.")
    session = session_for(workspace)
    await session.call("peek", {})
    skill_writer(skills, "db-migrate", "Write and check a database migration.")
    after = await session.call("peek", {})
    note = reminder_of(after.text)
    assert note.startswith("\nA new skill is available (load with skill when a task matches):")
    assert "- db-migrate: Write and check a database migration." in note
    assert "release" not in note
    assert "<system-reminder>" not in (await session.call("peek", {})).text
    loaded = await session.call("skill", {"name": "db-migrate"})
    assert loaded.error is None, loaded.text
    (skills / "db-migrate" / "SKILL.md").write_text(
        "---\nname: db-migrate\ndescription: Migrations, revised.\n---\nNew body, longer.\n"
    )
    listed = await session.call("skill", {})
    assert any(
        s["description"] == "Migrations, revised." for s in listed.output["listing"]["skills"]
    )


async def test_listing_counts_as_told_and_state_survives(
    skill_writer: Any, workspace: Path
) -> None:
    """A session that listed the skills hears nothing more about them; a new session
    with the same id (a restart) remembers what was announced; another id is told."""
    skill_writer(workspace / ".skills", "release", "Cut a release.")
    session = session_for(workspace, "one")
    listed = await session.call("skill", {})
    assert "<system-reminder>" not in listed.text
    await session.aclose()  # saves the session's state
    again = session_for(workspace, "one")
    assert "<system-reminder>" not in (await again.call("peek", {})).text
    other = session_for(workspace, "two")
    assert "- release" in reminder_of((await other.call("peek", {})).text)


async def test_announcing_existing_skills_can_be_turned_off(
    skill_writer: Any, workspace: Path
) -> None:
    """With ``announce_existing`` off, only skills that appear later are announced."""
    skill_writer(workspace / ".skills", "release", "Cut a release.")
    session = session_for(workspace, announce_existing=False, folders=[".skills"])
    assert "<system-reminder>" not in (await session.call("peek", {})).text
    skill_writer(workspace / ".skills", "hotfix", "Ship a hotfix.")
    note = reminder_of((await session.call("peek", {})).text)
    assert "- hotfix: Ship a hotfix." in note
    assert "release" not in note


async def test_configured_folders(skill_writer: Any, workspace: Path, tmp_path: Path) -> None:
    """``folders`` replaces the defaults: absolute, relative to the workspace, ``~``."""
    skill_writer(tmp_path / "shared-skills", "lint", "Fix lint errors.")
    skill_writer(workspace / "team" / "skills", "review", "Review a change.")
    skill_writer(workspace / ".skills", "ignored", "Not in the configured folders.")
    session = session_for(workspace, folders=[str(tmp_path / "shared-skills"), "team/skills"])
    result = await session.call("skill", {})
    assert [s["name"] for s in result.output["listing"]["skills"]] == ["lint", "review"]


def count_scandirs(patch: pytest.MonkeyPatch, below: Path) -> list[str]:
    """Record each ``os.scandir`` of a folder inside ``below`` (made while the test
    runs)."""
    import os

    real = os.scandir
    seen: list[str] = []

    def counting(path: Any = ".") -> Any:
        if Path(os.fsdecode(path)).is_relative_to(below):
            seen.append(os.fsdecode(path))
        return real(path)

    patch.setattr(os, "scandir", counting)
    return seen


async def test_listing_a_huge_skill_folder_stops_at_max_files(
    skill_writer: Any, workspace: Path
) -> None:
    """A skill folder holding far more files than ``max_files`` is not walked whole: the
    walk stops at the first file past the limit, and the listing says it was cut."""
    folder = skill_writer(workspace / ".skills", "big", "Many files.")
    for d in range(40):
        sub = folder / f"d{d:02}"
        sub.mkdir()
        for f in range(10):
            (sub / f"f{f}.txt").write_text("x")
    session = session_for(workspace, max_files=5)
    with pytest.MonkeyPatch.context() as patch:
        walked = count_scandirs(patch, folder)
        loaded = await session.call("skill", {"name": "big"})
    assert loaded.error is None, loaded.text
    assert len(walked) <= 2, walked  # the skill's folder and d00, not the 40 folders
    assert loaded.output["loaded"]["files"] == [f"d00/f{f}.txt" for f in range(5)]
    assert loaded.output["loaded"]["files_cut"] is True
    assert "- ... [cut: the folder holds more]" in loaded.text


async def test_listing_a_deep_or_crowded_skill_folder_is_bounded(
    skill_writer: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders nested deeper than are walked, and more entries than are read, cut the
    listing without being walked; a small folder is listed whole and not cut."""
    import toolweave_skills._skill as skill_module

    deep = skill_writer(workspace / ".skills", "deep", "Deep.", **{"top.md": "t"})
    bottom = deep.joinpath(*[f"n{i}" for i in range(60)])
    bottom.mkdir(parents=True)
    (bottom / "leaf.md").write_text("leaf")
    crowded = skill_writer(workspace / ".skills", "crowded", "Crowded.")
    for d in range(300):
        (crowded / f"empty{d:03}").mkdir()
    small = skill_writer(workspace / ".skills", "small", "Small.", **{"a.md": "a"})
    monkeypatch.setattr(skill_module, "_WALK_ENTRIES", 50, raising=False)
    session = session_for(workspace)
    with pytest.MonkeyPatch.context() as patch:
        walked = count_scandirs(patch, workspace / ".skills")
        loaded = {
            name: (await session.call("skill", {"name": name})).output["loaded"]
            for name in ("deep", "crowded", "small")
        }
    assert sum(p.startswith(str(deep)) for p in walked) <= 20
    assert sum(p.startswith(str(crowded)) for p in walked) <= 60
    assert sum(p.startswith(str(small)) for p in walked) == 1
    assert loaded["deep"]["files"] == ["top.md"]
    assert loaded["deep"]["files_cut"] is True
    assert loaded["crowded"]["files"] == []
    assert loaded["crowded"]["files_cut"] is True
    assert loaded["small"]["files"] == ["a.md"]
    assert loaded["small"]["files_cut"] is False


def test_front_matter_within_the_bounds_loads(tmp_path: Path) -> None:
    """Nesting, anchors, aliases and merge keys within the bounds are read as usual."""
    path = tmp_path / "s" / "SKILL.md"
    path.parent.mkdir()
    nested = "[" * 60 + "deep" + "]" * 60
    path.write_text(
        "---\nname: ok\ndescription: Fine.\n"
        f"nested: {nested}\nbase: &base {{os: linux, arch: [x86, arm]}}\n"
        "build: {<<: *base, arch: [arm]}\nagain: *base\n---\nbody\n"
    )
    skill = parse_skill(path)
    assert skill.metadata["build"] == {"os": "linux", "arch": ["arm"]}
    assert skill.metadata["again"] == {"os": "linux", "arch": ["x86", "arm"]}
    value = skill.metadata["nested"]
    for _ in range(60):
        (value,) = value
    assert value == "deep"


async def test_a_deeply_nested_skill_file_is_skipped_and_the_others_work(
    skill_writer: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SKILL.md nesting 20,000 levels (40 KB) is listed as skipped, with why; the other
    skills list and load, the reminder still names them, and the broken file is parsed
    once per version, not on every look."""
    from toolweave_skills import _index

    skills = workspace / ".skills"
    skill_writer(skills, "good", "A good skill.")
    bad = skills / "bad" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_text("---\nname: bad\ndescription: x\nx: " + "[" * 20_000 + "]" * 20_000 + "\n---\n")
    parsed: list[Path] = []
    real_parse = _index.parse_skill

    def counting_parse(path: Path) -> Any:
        parsed.append(path)
        return real_parse(path)

    monkeypatch.setattr(_index, "parse_skill", counting_parse)
    session = session_for(workspace)
    first = await session.call("peek", {})
    assert "- good: A good skill." in reminder_of(first.text)
    listed = await session.call("skill", {})
    assert listed.error is None, listed.text
    assert [s["name"] for s in listed.output["listing"]["skills"]] == ["good"]
    (problem,) = listed.output["listing"]["problems"]
    assert problem.startswith(f"{bad}: its front matter nests deeper than 64 levels")
    assert f"- {bad}: its front matter nests deeper" in listed.text
    loaded = await session.call("skill", {"name": "good"})
    assert loaded.error is None, loaded.text
    assert parsed.count(bad) == 1
    bad.write_text("---\nname: bad\ndescription: Fixed now.\n---\n")
    assert "- bad: Fixed now." in (await session.call("skill", {})).text
    assert parsed.count(bad) == 2


async def test_a_name_ending_in_a_newline_is_refused(skill_writer: Any, workspace: Path) -> None:
    """A name with a trailing newline is not a name: the skill is skipped with why,
    never listed under a name nobody can load."""
    skill_writer(workspace / ".skills", "release", "Cut a release.")
    folder = workspace / ".skills" / "nl"
    folder.mkdir()
    (folder / "SKILL.md").write_text('---\nname: "deploy\\n"\ndescription: Deploy things\n---\n')
    listed = await session_for(workspace).call("skill", {})
    assert listed.error is None, listed.text
    assert [s["name"] for s in listed.output["listing"]["skills"]] == ["release"]
    assert "deploy" not in listed.text.partition("Skipped")[0]
    (problem,) = listed.output["listing"]["problems"]
    assert "its name 'deploy\\n' is not 1 to 64 lower-case" in problem
