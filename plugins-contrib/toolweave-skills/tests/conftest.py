"""Fixtures of the skills pack's tests: a workspace and a home folder with skills."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

WriteSkill = Callable[..., Path]


def write_skill(root: Path, name: str, description: str, body: str = "", **files: str) -> Path:
    """A skill folder ``root/name`` with its SKILL.md and resource ``files``."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n\n{body}\n",
        encoding="utf-8",
    )
    for rel, text in files.items():
        path = folder / rel.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of its own (``~`` in the default folders), holding no skills yet."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.fixture
def workspace(tmp_path: Path, home: Path) -> Path:
    """An empty workspace folder; the home folder is the test's own."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def skill_writer() -> WriteSkill:
    """:func:`write_skill`, for tests (a fixture, so no test imports conftest)."""
    return write_skill
