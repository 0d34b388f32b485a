"""Counts in the fs tools' messages agree with their nouns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from toolweave import Session

pytestmark = pytest.mark.anyio


async def test_one_of_a_kind_is_singular(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """One byte written, a file of one line, a listing stopped at one entry."""
    (workspace / "one.txt").write_text("only\n")
    (workspace / "d").mkdir()
    (workspace / "d" / "a").write_text("")
    (workspace / "d" / "b").write_text("")
    config = {
        "tools": ["write_file", {"id": "list_dir", "params": {"max_entries": 1}}, "read_file"]
    }
    session = make_session(workspace, config)
    written = await session.call("write_file", {"path": "x.txt", "content": "x"})
    assert written.text == "Created `x.txt` (1 byte)."
    past = await session.call("read_file", {"path": "one.txt", "offset": 5})
    assert past.text == "(`one.txt` has 1 line; offset 5 is past the end)"
    listed = await session.call("list_dir", {"path": "d"})
    assert "[Listing stopped at 1 entry." in listed.text
