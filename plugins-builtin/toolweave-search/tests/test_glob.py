"""Unit tests of ``glob``: pattern semantics, newest-first order, cap, both engines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, PackManager, Session
from toolweave_search import find_ripgrep, pack

pytestmark = pytest.mark.anyio

needs_rg = pytest.mark.skipif(
    find_ripgrep() is None,
    reason="ripgrep is not installed (pip install 'toolweave-search[rg]')",
)

ENGINES = [
    pytest.param("python", id="python"),
    pytest.param("ripgrep", id="ripgrep", marks=needs_rg),
]


def session_for(root: Path, engine: str, **params: Any) -> Session:
    """A session with ``glob`` on ``engine``."""
    packs = PackManager(strict=True)
    packs.add("search", pack)
    config = {"tools": [{"id": "glob", "params": {"engine": engine, **params}}]}
    return packs.builder().build(config).session(workspace=root, debug=True)


async def glob(root: Path, engine: str, args: dict[str, Any], **params: Any) -> dict[str, Any]:
    result = await session_for(root, engine, **params).call("glob", args)
    assert result.error is None, result.text
    assert isinstance(result.output, dict)
    return result.output


def _touch_at(path: Path, stamp: int) -> None:
    os.utime(path, (stamp, stamp))


@pytest.mark.parametrize("engine", ENGINES)
async def test_any_depth_newest_first(tree: Path, engine: str) -> None:
    """``**/*.py`` finds visited Python files at every depth, newest first; ignored
    files, links and .git stay out."""
    _touch_at(tree / "a/b.py", 1_800_000_000)
    out = await glob(tree, engine, {"pattern": "**/*.py"})
    assert out["files"] == [
        "a/b.py",
        "src/ünï.py",
        "src/util.py",
        "src/pkg/mod.py",
        "src/main.py",
        "a.py",
        ".config/settings.py",
    ]
    assert out["total"] == 7
    assert out["truncated"] is False


@pytest.mark.parametrize("engine", ENGINES)
async def test_patterns_match_the_whole_path(tree: Path, engine: str) -> None:
    """``*.md`` stays at the top; folders and braces narrow as written."""
    top = await glob(tree, engine, {"pattern": "*.md"})
    assert top["files"] == ["README.md"]
    docs = await glob(tree, engine, {"pattern": "docs/*.md"})
    assert docs["files"] == ["docs/guide.md"]
    both = await glob(tree, engine, {"pattern": "**/*.{log,md}"})
    assert sorted(both["files"]) == [
        "README.md",
        "docs/guide.md",
        "keep.log",
        "src/pkg/important.log",
    ]
    below = await glob(tree, engine, {"pattern": "**/*", "path": "src/pkg"})
    assert sorted(below["files"]) == [
        "src/pkg/.gitignore",
        "src/pkg/data.bin",
        "src/pkg/important.log",
        "src/pkg/mod.py",
    ]
    none = await glob(tree, engine, {"pattern": "nope/**/*.py"})
    assert none["files"] == []


@pytest.mark.parametrize("engine", ENGINES)
async def test_results_are_capped(tree: Path, engine: str) -> None:
    """Only the newest ``max_results`` are returned, with a note about the rest."""
    session = session_for(tree, engine, max_results=2)
    result = await session.call("glob", {"pattern": "**/*"})
    assert result.output["truncated"] is True
    assert len(result.output["files"]) == 2
    assert result.output["total"] > 2
    assert "more matching files not shown" in result.text


async def test_a_file_as_path_is_invalid(tree: Path) -> None:
    """``path`` must be a folder; outside the workspace is refused."""
    session = session_for(tree, "python")
    result = await session.call("glob", {"pattern": "*", "path": "a.py"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    outside = await session.call("glob", {"pattern": "*", "path": "../"})
    assert outside.error is not None
    assert outside.error.kind is ErrorKind.PERMISSION_DENIED


@pytest.mark.parametrize("engine", ENGINES)
async def test_names_with_a_newline_are_listed(tmp_path: Path, engine: str) -> None:
    """A file whose name holds a newline is listed by both engines (ripgrep's list is
    read NUL by NUL)."""
    (tmp_path / "a\nb.txt").write_text("x")
    (tmp_path / "plain.txt").write_text("x")
    _touch_at(tmp_path / "plain.txt", 1_700_000_000)
    _touch_at(tmp_path / "a\nb.txt", 1_700_000_100)
    out = await glob(tmp_path, engine, {"pattern": "**/*.txt"})
    assert out["files"] == ["a\nb.txt", "plain.txt"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bad", ["[", "a[b.txt", "**/[z-a]", "*.{md,txt", "*.md\\"])
async def test_a_malformed_pattern_is_invalid_params(tree: Path, engine: str, bad: str) -> None:
    """A malformed glob is invalid_params saying what is wrong, by the rules grep's
    `glob` follows, on both engines (it was read as literal text, matching nothing)."""
    result = await session_for(tree, engine).call("glob", {"pattern": bad})
    assert result.error is not None, result.text
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert result.text.startswith("`pattern` is not a valid glob"), result.text


@needs_rg
@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "**/*"},
        {"pattern": "**/*.py"},
        {"pattern": "*"},
        {"pattern": "src/**/*.py"},
        {"pattern": "**/*.{log,md,bin}"},
        {"pattern": "**/.*"},
        {"pattern": "**/*", "path": "src"},
        {"pattern": "*.py", "path": "src"},
        {"pattern": "**/*", "path": "build"},
        {"pattern": "a/?.py"},
    ],
    ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()),
)
async def test_ripgrep_and_python_agree(tree: Path, args: dict[str, Any]) -> None:
    """Listing files with ripgrep or in Python gives the same matches in the same order."""
    fast = await glob(tree, "ripgrep", args)
    slow = await glob(tree, "python", args)
    assert fast.pop("engine") == "ripgrep"
    assert slow.pop("engine") == "python"
    assert slow == fast
    assert fast["total"] > 0
