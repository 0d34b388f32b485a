"""Renamed tools and parameters reach every message the fs tools write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from toolweave import Session

pytestmark = pytest.mark.anyio

CONFIG = {
    "tools": [
        {"id": "read_file", "name": "Read", "rename": {"offset": "start_line"}},
        {
            "id": "edit_file",
            "name": "Edit",
            "rename": {"old_string": "find", "new_string": "put", "replace_all": "every"},
        },
        {"id": "write_file", "name": "Write", "rename": {"content": "body"}},
        {"id": "delete", "name": "Remove", "rename": {"recursive": "force"}},
        {"id": "move", "name": "Rename", "rename": {"overwrite": "clobber", "destination": "to"}},
        {
            "id": "list_dir",
            "name": "LS",
            "rename": {"depth": "levels"},
            "params": {"max_entries": 2},
        },
    ]
}
CANONICAL = (
    "offset",
    "old_string",
    "new_string",
    "replace_all",
    "content",
    "recursive",
    "overwrite",
    "depth",
    "read_file",
    "list_dir",
)


@pytest.fixture
def renamed(make_session: Callable[..., Session], workspace: Path) -> Session:
    """A session where every fs tool and every parameter its messages name is renamed."""
    (workspace / "three.txt").write_text("a\nb\nc\n")
    (workspace / "twice.txt").write_text("x\nx\n")
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    (workspace / "full").mkdir()
    (workspace / "full" / "one").write_text("1")
    (workspace / "full" / "two").write_text("2")
    (workspace / "full" / "three").write_text("3")
    return make_session(workspace, CONFIG)


CALLS = [
    ("Read", {"path": "three.txt", "limit": 1}, "Read on with start_line=1."),
    ("Read", {"path": "three.txt", "start_line": 9}, "start_line 9 is past the end"),
    ("Read", {"path": "full"}, "list it with LS instead"),
    ("Read", {"path": "blob.bin"}, "Read only reads text files"),
    ("Edit", {"path": "three.txt", "find": "zzz", "put": "y"}, "`find` was not found"),
    ("Edit", {"path": "three.txt", "find": "zzz", "put": "y"}, "read the file again with Read"),
    ("Edit", {"path": "three.txt", "find": "a", "put": "a"}, "`find` and `put` are the same"),
    ("Edit", {"path": "twice.txt", "find": "x", "put": "y"}, "set `every` to true"),
    ("Edit", {"path": "three.txt", "find": "a", "put": "\ud800"}, "`put` holds a character"),
    ("Write", {"path": "new.txt", "body": "\ud800"}, "`body` holds a character"),
    ("Remove", {"path": "full"}, "set `force` to true"),
    ("Rename", {"source": "three.txt", "to": "twice.txt"}, "set `clobber` to true"),
    ("Rename", {"source": "three.txt", "to": "."}, "`to` is the full new path"),
    ("LS", {"path": "."}, "give a smaller `levels`"),
    ("LS", {"path": "three.txt"}, "read it with Read instead"),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), CALLS)
async def test_messages_use_client_names(
    renamed: Session, tool: str, arguments: dict[str, object], expected: str
) -> None:
    """Each message that names a parameter or another tool names it as the model does,
    never by its canonical name."""
    result = await renamed.call(tool, arguments)
    assert expected in result.text
    assert not [word for word in CANONICAL if word in result.text]


async def test_without_the_other_tool_the_message_reads_on(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """A message that would name an absent tool says the same without the name."""
    (workspace / "folder").mkdir()
    session = make_session(workspace, {"tools": ["read_file"]})
    result = await session.call("read_file", {"path": "folder"})
    assert "is a directory; list it instead of reading it" in result.text


async def test_descriptions_name_the_other_tools_as_configured(
    make_session: Callable[..., Session], workspace: Path
) -> None:
    """Descriptions name the renamed tools of the set, and read on without absent ones."""
    toolset = make_session(workspace, CONFIG).toolset
    assert "read the file again with Read" in toolset["Edit"].description
    assert "write the whole file with Write instead" in toolset["Edit"].description
    assert "list them with LS instead" in toolset["Read"].description
    assert "(with Edit)" in toolset["Read"].description
    assert "with Edit is cheaper" in toolset["Write"].description
    assert "use Read or a search tool for that" in toolset["LS"].description
    alone = make_session(workspace, {"tools": ["read_file", "edit_file"]}).toolset
    assert "write the whole file with a tool that writes files" in alone["edit_file"].description
    assert "list them with a directory listing instead" in alone["read_file"].description
    for entry in toolset:
        assert "{" not in entry.description
