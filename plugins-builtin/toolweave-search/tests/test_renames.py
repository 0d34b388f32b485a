"""Renamed tools and parameters reach every message the search tools write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolweave import PackManager, Session
from toolweave_search import pack

pytestmark = pytest.mark.anyio

CONFIG: dict[str, Any] = {
    "tools": [
        {
            "id": "grep",
            "name": "Search",
            "rename": {"pattern": "regex", "path": "where", "glob": "files", "head_limit": "most"},
            "params": {"engine": "python"},
        },
        {
            "id": "glob",
            "name": "Find",
            "rename": {"pattern": "shape", "path": "folder"},
            "params": {"engine": "python"},
        },
    ]
}
CANONICAL = ("`path`", "`glob`", "`head_limit`", "`pattern`")
MANY = "{a,b}" * 9
"""A glob that expands to 512 alternatives, over the limit."""


@pytest.fixture
def session(tree: Path) -> Session:
    """A session of renamed search tools over the sample tree."""
    packs = PackManager(strict=True)
    packs.add("search", pack)
    return packs.builder().build(CONFIG).session(workspace=tree, debug=True)


CALLS = [
    (
        "Search",
        {"regex": "e", "most": 1},
        "Narrow the search with `where`, `files` or a more specific pattern, or raise `most`.",
    ),
    ("Search", {"regex": "e", "files": MANY}, "`files` expands to too many alternatives"),
    ("Search", {"regex": "a\x00"}, "`regex` contains a NUL character"),
    ("Search", {"regex": "e", "files": "*\x00"}, "`files` contains a NUL character"),
    ("Find", {"shape": MANY}, "`shape` expands to too many alternatives"),
    ("Find", {"shape": "*.py\x00"}, "`shape` contains a NUL character"),
    ("Find", {"shape": "*", "folder": "a.py"}, "give the folder to search in as `folder`."),
]


@pytest.mark.parametrize(("tool", "arguments", "expected"), CALLS)
async def test_messages_use_client_names(
    session: Session, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    """Each message that names a parameter names it as the model does."""
    result = await session.call(tool, arguments)
    assert expected in result.text
    assert [word for word in CANONICAL if word in result.text] == []


def test_descriptions_name_the_other_tools_as_configured(session: Session) -> None:
    """grep and glob name each other by their client names, and tools of other packs
    (absent here) by their fallback words."""
    grep, glob = session.toolset["Search"].description, session.toolset["Find"].description
    assert "use Find for that" in grep
    assert "use the file reader" in grep
    assert "search their contents with Search instead" in glob
    assert "listing it with a directory listing is enough" in glob
