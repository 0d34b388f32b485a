"""edit_file: exact, unique replacements; clear failures that change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave import ErrorKind, Session

pytestmark = pytest.mark.anyio


async def test_replaces_unique_text(session: Session, workspace: Path) -> None:
    """A unique old_string is replaced once and the line of the change is reported."""
    (workspace / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    result = await session.call(
        "edit_file", {"path": "m.py", "old_string": "b = 2", "new_string": "b = 20"}
    )
    assert result.error is None
    assert (workspace / "m.py").read_text() == "a = 1\nb = 20\nc = 3\n"
    assert result.output == {"path": "m.py", "replacements": 1, "first_line": 2}
    assert result.text == "Replaced 1 occurrence in `m.py` (first at line 2)."


async def test_missing_old_string_is_not_found(session: Session, workspace: Path) -> None:
    """old_string absent from the file: not_found, advice to re-read, file unchanged."""
    (workspace / "m.py").write_text("x = 1\n")
    result = await session.call(
        "edit_file", {"path": "m.py", "old_string": "y = 1", "new_string": "y = 2"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND
    assert "was not found in `m.py`" in result.text
    assert "read the file again" in result.text
    assert (workspace / "m.py").read_text() == "x = 1\n"


async def test_ambiguous_old_string_is_invalid_params(session: Session, workspace: Path) -> None:
    """old_string found several times without replace_all: invalid_params with the count."""
    (workspace / "m.py").write_text("x\nx\nx\n")
    result = await session.call("edit_file", {"path": "m.py", "old_string": "x", "new_string": "y"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "occurs 3 times" in result.text
    assert "replace_all" in result.text
    assert (workspace / "m.py").read_text() == "x\nx\nx\n"


async def test_replace_all_replaces_every_occurrence(session: Session, workspace: Path) -> None:
    """replace_all replaces each occurrence and reports how many."""
    (workspace / "m.py").write_text("foo foo\nbar foo\n")
    result = await session.call(
        "edit_file",
        {"path": "m.py", "old_string": "foo", "new_string": "baz", "replace_all": True},
    )
    assert result.output["replacements"] == 3
    assert (workspace / "m.py").read_text() == "baz baz\nbar baz\n"
    assert result.text.startswith("Replaced 3 occurrences")


async def test_identical_strings_are_invalid_params(session: Session, workspace: Path) -> None:
    """Replacing text with itself is refused before the file is read."""
    result = await session.call(
        "edit_file", {"path": "nowhere.py", "old_string": "a", "new_string": "a"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "the same" in result.text


async def test_empty_old_string_is_invalid_params(session: Session, workspace: Path) -> None:
    """An empty old_string is rejected by the schema, naming the field."""
    (workspace / "m.py").write_text("x\n")
    result = await session.call("edit_file", {"path": "m.py", "old_string": "", "new_string": "y"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "`old_string`" in result.text


async def test_missing_file_is_not_found(session: Session) -> None:
    """Editing a file that does not exist is not_found naming the file."""
    result = await session.call(
        "edit_file", {"path": "ghost.py", "old_string": "a", "new_string": "b"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND
    assert "`ghost.py` does not exist" in result.text


async def test_crlf_file_matches_lf_old_string(session: Session, workspace: Path) -> None:
    """A model writing \\n line ends can edit a \\r\\n file, which keeps its \\r\\n ends."""
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await session.call(
        "edit_file", {"path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}
    )
    assert result.error is None
    assert (workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_binary_file_is_refused(session: Session, workspace: Path) -> None:
    """A binary file cannot be edited as text."""
    (workspace / "b.bin").write_bytes(b"ab\x00cd")
    result = await session.call(
        "edit_file", {"path": "b.bin", "old_string": "ab", "new_string": "xy"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert (workspace / "b.bin").read_bytes() == b"ab\x00cd"


async def test_concurrent_edits_of_one_file_lose_no_change(
    session: Session, workspace: Path
) -> None:
    """Calls made at once (an MCP client's parallel requests, a host's own tasks) each
    read, change and write the file back: every change survives, whichever order they
    ran in. Reads that raced each other used to write back stale text over each other."""
    import anyio

    count = 40
    path = workspace / "m.txt"
    path.write_text("".join(f"line {i}\n" for i in range(count)) * 50)
    failures: list[object] = []

    async def edit(i: int) -> None:
        result = await session.call(
            "edit_file",
            {
                "path": "m.txt",
                "old_string": f"line {i}\n",
                "new_string": f"LINE {i}\n",
                "replace_all": True,
            },
        )
        if result.error is not None:
            failures.append(result.error)

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(edit, i)
    assert failures == []
    assert path.read_text() == "".join(f"LINE {i}\n" for i in range(count)) * 50
