"""Counts in the search tools' messages agree with their nouns."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave import PackManager
from toolweave_search import pack

pytestmark = pytest.mark.anyio


async def test_one_more_is_singular(tmp_path: Path) -> None:
    """One file left out of a glob and one character cut from a grep line read singular."""
    (tmp_path / "a.txt").write_text("needle" + "x" * 45 + "\n")
    (tmp_path / "b.txt").write_text("")
    packs = PackManager(strict=True)
    packs.add("search", pack)
    config = {
        "tools": [
            {"id": "glob", "params": {"engine": "python", "max_results": 1}},
            {"id": "grep", "params": {"engine": "python", "max_line_chars": 50}},
        ]
    }
    session = packs.builder().build(config).session(workspace=tmp_path, debug=True)
    found = await session.call("glob", {"pattern": "*.txt"})
    assert "[1 more matching file not shown (older)." in found.text
    grepped = await session.call(
        "grep", {"pattern": "needle", "output_mode": "content", "line_numbers": False}
    )
    assert grepped.text.endswith("... [1 more character]")
