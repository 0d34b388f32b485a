"""Every workspace member keeps the house layout (STYLE.md, rule 5 and rule 13)."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
PACK_FOLDERS = ("plugins-builtin", "plugins-contrib")
ENTRY_POINT_GROUP = "toolweave.packs"


def _load(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        return tomllib.load(f)


ROOT_PYPROJECT = _load(ROOT / "pyproject.toml")


def _members() -> list[Path]:
    found = [ROOT / "core"]
    for folder in PACK_FOLDERS:
        base = ROOT / folder
        if base.is_dir():
            found += sorted(p for p in base.iterdir() if p.is_dir() and p.name != "_template")
    return found


MEMBERS = _members()


def _requirement_names(requirements: list[str]) -> dict[str, Requirement]:
    parsed = [Requirement(r) for r in requirements]
    return {r.name.lower().replace("_", "-"): r for r in parsed}


def layout_problems(path: Path) -> list[str]:
    """Everything wrong with the member at ``path``; empty when it keeps the rules."""
    problems: list[str] = []
    pyproject_path = path / "pyproject.toml"
    if not pyproject_path.is_file():
        return [f"{path.name}: no pyproject.toml"]
    pyproject = _load(pyproject_path)
    project = pyproject.get("project", {})
    is_core = path.name == "core"
    if is_core:
        dist, module = "toolweave", "toolweave"
    elif path.name.startswith("toolweave-"):
        name = path.name.removeprefix("toolweave-")
        dist, module = f"toolweave-{name}", f"toolweave_{name}"
    else:
        return [f"{path.name}: a pack's folder is named toolweave-<name>"]

    if project.get("name") != dist:
        problems.append(f"distribution name is {project.get('name')!r}, expected {dist!r}")
    backend = pyproject.get("build-system", {})
    if backend.get("build-backend") != "hatchling.build":
        problems.append(f"build backend is {backend.get('build-backend')!r}, not hatchling")
    if not any(Requirement(r).name == "hatchling" for r in backend.get("requires", [])):
        problems.append("build-system.requires does not name hatchling")

    package = path / "src" / module
    if not (package / "__init__.py").is_file():
        problems.append(f"no import package src/{module}/")
    if not (package / "py.typed").is_file():
        problems.append(f"no src/{module}/py.typed")
    wheel = pyproject.get("tool", {}).get("hatch", {}).get("build", {}).get("targets", {})
    packages = wheel.get("wheel", {}).get("packages")
    if packages is not None and packages != [f"src/{module}"]:
        problems.append(f"the wheel ships {packages}, expected ['src/{module}']")

    readme = path / "README.md"
    if not readme.is_file() or not readme.read_text(encoding="utf-8").strip():
        problems.append("no README.md (or it is empty)")
    if project.get("readme") != "README.md":
        problems.append("project.readme is not README.md")

    specifier = SpecifierSet(project.get("requires-python", ""))
    if not specifier or "3.11" not in specifier or "3.10" in specifier:
        problems.append(f"requires-python is {str(specifier)!r}, expected '>=3.11'")

    entry_points = project.get("entry-points", {}).get(ENTRY_POINT_GROUP)
    if is_core:
        if entry_points:
            problems.append("core ships no tools, so it declares no pack")
    else:
        expected = {name: f"{module}:pack"}
        if entry_points != expected:
            problems.append(
                f"entry points in {ENTRY_POINT_GROUP} are {entry_points}, expected {expected}"
            )
        if "toolweave" not in _requirement_names(project.get("dependencies", [])):
            problems.append("a pack depends on toolweave")
        if not list((path / "tests").glob("test_*.py")):
            problems.append("no unit tests in tests/test_<tool>.py")

    extra_tools = set(pyproject.get("tool", {})) - {"hatch"}
    if extra_tools:
        problems.append(
            f"tool configuration {sorted(extra_tools)} belongs in the root pyproject.toml"
        )
    return problems


def test_members_were_found() -> None:
    """The member list is not empty: core is always there."""
    assert ROOT / "core" in MEMBERS


@pytest.mark.parametrize("member", MEMBERS, ids=lambda p: p.name)
def test_member_keeps_the_layout(member: Path) -> None:
    """Names, src layout, py.typed, README, hatchling, entry point, no tool config."""
    problems = layout_problems(member)
    assert problems == [], f"{member.name}: " + "; ".join(problems)


def test_workspace_globs_match_the_members() -> None:
    """The uv workspace holds exactly core and every pack folder, never the template."""
    workspace = ROOT_PYPROJECT["tool"]["uv"]["workspace"]
    members, excluded = workspace["members"], workspace.get("exclude", [])

    def included(path: Path) -> bool:
        rel = path.relative_to(ROOT).as_posix()
        hit = any(fnmatch.fnmatchcase(rel, g) for g in members)
        return hit and not any(fnmatch.fnmatchcase(rel, g) for g in excluded)

    assert all(included(m) for m in MEMBERS)
    assert not included(ROOT / "plugins-builtin" / "_template")


def test_root_project_pulls_in_the_cli_and_every_builtin_pack() -> None:
    """``uv run toolweave ...`` at the root gets the CLI and every built-in pack."""
    deps = _requirement_names(ROOT_PYPROJECT["project"]["dependencies"])
    sources = ROOT_PYPROJECT["tool"]["uv"]["sources"]
    assert "cli" in deps["toolweave"].extras
    for member in MEMBERS:
        dist = _load(member / "pyproject.toml")["project"]["name"]
        if member.parent.name == "plugins-builtin":
            assert dist in deps, f"{dist} is missing from the root dependencies"
        if dist in deps:
            assert sources.get(dist) == {"workspace": True}, f"{dist} is not a workspace source"


def test_root_is_not_published() -> None:
    """The workspace root is a virtual project: uv never builds or installs it."""
    assert ROOT_PYPROJECT["tool"]["uv"]["package"] is False
    assert "build-system" not in ROOT_PYPROJECT


def test_problems_are_reported(
    tmp_path: Path, template_renderer: Callable[[Path, str], Path]
) -> None:
    """The checker is not blind: each broken rule of a pack is reported."""
    pack = template_renderer(tmp_path, "broken")
    (pack / "src" / "toolweave_broken" / "py.typed").unlink()
    pyproject = pack / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    text = text.replace('broken = "toolweave_broken:pack"', 'broken = "toolweave_broken:main"')
    text = text.replace(">=3.11", ">=3.9")
    pyproject.write_text(text + "\n[tool.ruff]\nline-length = 80\n", encoding="utf-8")
    assert layout_problems(pack) == [
        "no src/toolweave_broken/py.typed",
        "requires-python is '>=3.9', expected '>=3.11'",
        "entry points in toolweave.packs are {'broken': 'toolweave_broken:main'}, "
        "expected {'broken': 'toolweave_broken:pack'}",
        "tool configuration ['ruff'] belongs in the root pyproject.toml",
    ]
    assert layout_problems(ROOT / "plugins-builtin" / "_template") == [
        "_template: a pack's folder is named toolweave-<name>"
    ]


def test_template_renders_into_a_valid_pack(
    tmp_path: Path,
    template_renderer: Callable[[Path, str], Path],
    pack_installer: Callable[[Path, Path], Path],
) -> None:
    """Replacing the placeholder gives a pack that keeps every rule and, installed, passes its
    tests (toolweave's conformance checks included)."""
    pack = template_renderer(tmp_path, "sample")
    assert layout_problems(pack) == []
    leftovers = [
        str(p.relative_to(pack))
        for p in pack.rglob("*")
        if "NAME" in p.name or (p.is_file() and "NAME" in p.read_text(encoding="utf-8"))
    ]
    assert leftovers == []
    assert (pack / "tests" / "test_conformance.py").is_file()
    env = {**os.environ, "PYTHONPATH": str(pack_installer(pack, tmp_path / "site"))}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "error",
            "--rootdir",
            str(pack),
            "tests",
        ],
        cwd=pack,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
