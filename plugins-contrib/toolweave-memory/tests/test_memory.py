"""``memory_save``, ``memory_search`` and ``memory_delete`` on a real SQLite file: BM25
ranking, highlighted snippets, tags, scopes, restarts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from toolweave import CallResult, ErrorKind, PackManager, Session
from toolweave_memory import fts_query, pack

pytestmark = pytest.mark.anyio


def session_for(workspace: Path, session_id: str = "s1", **search_params: Any) -> Session:
    """A fresh host (pack manager, tool set, session) on ``workspace``: what a restart gives."""
    packs = PackManager(strict=True)
    packs.add("memory", pack)
    config = {
        "tools": ["memory_save", {"id": "memory_search", "params": search_params}, "memory_delete"]
    }
    return (
        packs.builder()
        .build(config)
        .session(workspace=workspace, session_id=session_id, debug=True)
    )


async def ok(session: Session, name: str, args: dict[str, Any]) -> CallResult:
    result = await session.call(name, args)
    assert result.error is None, result.text
    return result


MEMORIES = [
    {
        "title": "Python testing setup",
        "content": "Run the Python tests with nox -s tests; pytest options live in pyproject.",
        "tags": ["build", "Testing"],
    },
    {
        "title": "Release checklist",
        "content": "Before a release, bump the version and run the tests once more.",
        "tags": ["release"],
    },
    {
        "title": "Editor preference",
        "content": "The user prefers four-space indentation and no tabs in Python files.",
        "tags": ["#preference"],
    },
    {
        "title": "Database",
        "content": "Production runs PostgreSQL 17; tests use SQLite in memory.",
        "tags": ["build", "database"],
    },
]


async def save_all(session: Session) -> list[int]:
    return [(await ok(session, "memory_save", m)).output["id"] for m in MEMORIES]


def test_queries_quote_every_word() -> None:
    """Free text never reaches FTS5 as syntax: each word is quoted."""
    assert fts_query('python AND "tests" NOT -x (y*') == (
        '"python" OR "AND" OR "tests" OR "NOT" OR "x" OR "y"'
    )
    assert fts_query("a b", match_all=True) == '"a" AND "b"'
    assert fts_query("  ?!  ") is None


async def test_bm25_ranks_and_snippets_highlight(workspace: Path) -> None:
    """The memory with both words, one of them in its title, ranks first; stems match
    (``test`` finds ``tests``); snippets mark the matching words."""
    session = session_for(workspace)
    ids = await save_all(session)
    for n in range(6):  # words in most memories say little: give the index a background
        await ok(session, "memory_save", {"content": f"Unrelated note number {n} about lunch"})
    result = await ok(session, "memory_search", {"query": "python test"})
    found = result.output["memories"]
    assert found[0]["id"] == ids[0]
    assert {m["id"] for m in found} == set(ids)  # every memory mentions python or tests
    scores = [m["score"] for m in found]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[-1] > 0
    assert "**Python** **tests**" in found[0]["snippet"]
    assert result.text.startswith("4 memories (matching 'python test'):\n[")
    assert "Python testing setup (build, testing, shared, " in result.text


async def test_match_all_tags_and_listing(workspace: Path) -> None:
    """``match: all`` needs every word; tags filter (normalised: lower case, no #); no
    query lists the newest first."""
    session = session_for(workspace)
    ids = await save_all(session)
    both = await ok(session, "memory_search", {"query": "tests release", "match": "all"})
    assert [m["id"] for m in both.output["memories"]] == [ids[1]]
    tagged = await ok(session, "memory_search", {"query": "tests", "tags": ["BUILD"]})
    assert {m["id"] for m in tagged.output["memories"]} == {ids[0], ids[3]}
    two_tags = await ok(session, "memory_search", {"tags": ["build", "database"]})
    assert [m["id"] for m in two_tags.output["memories"]] == [ids[3]]
    pref = await ok(session, "memory_search", {"tags": ["preference"]})
    assert [m["id"] for m in pref.output["memories"]] == [ids[2]]
    newest = await ok(session, "memory_search", {"limit": 2})
    assert [m["id"] for m in newest.output["memories"]] == [ids[3], ids[2]]
    assert newest.output["memories"][0]["score"] == 0.0
    full = await ok(session, "memory_search", {"query": "postgresql", "include_content": True})
    assert full.output["memories"][0]["snippet"] == MEMORIES[3]["content"]


async def test_highlight_marks_come_from_params(workspace: Path) -> None:
    """The host chooses the highlight marks."""
    session = session_for(workspace, highlight_start="<b>", highlight_end="</b>")
    await save_all(session)
    result = await ok(session, "memory_search", {"query": "postgresql"})
    assert "<b>PostgreSQL</b>" in result.output["memories"][0]["snippet"]


async def test_scopes_and_restarts(workspace: Path) -> None:
    """Shared memories survive a restart and reach every session; session memories only
    the same session id, also after a restart."""
    first = session_for(workspace, "alice")
    shared = (await ok(first, "memory_save", {"content": "The API key lives in vault"})).output
    own = (
        await ok(first, "memory_save", {"content": "Alice wants terse answers", "scope": "session"})
    ).output
    assert (shared["scope"], own["scope"]) == ("shared", "session")

    again = session_for(workspace, "alice")  # a new process, the same session id
    found = await ok(again, "memory_search", {"query": "vault terse"})
    assert {m["id"] for m in found.output["memories"]} == {shared["id"], own["id"]}
    only_own = await ok(again, "memory_search", {"query": "vault terse", "scope": "session"})
    assert [m["id"] for m in only_own.output["memories"]] == [own["id"]]

    other = session_for(workspace, "bob")
    seen = await ok(other, "memory_search", {"query": "vault terse"})
    assert [m["id"] for m in seen.output["memories"]] == [shared["id"]]
    denied = await other.call("memory_delete", {"ids": [own["id"]]})
    assert denied.error is not None
    assert denied.error.kind is ErrorKind.NOT_FOUND
    overwrite = await other.call("memory_save", {"content": "x", "replace_id": own["id"]})
    assert overwrite.error is not None
    assert overwrite.error.kind is ErrorKind.NOT_FOUND


async def test_duplicates_update_and_replace_corrects(workspace: Path) -> None:
    """The same text saved twice is one memory (its tags updated); replace_id rewrites a
    memory and the index follows."""
    session = session_for(workspace)
    first = (await ok(session, "memory_save", {"content": "Deploys run on Fridays"})).output
    again = await ok(session, "memory_save", {"content": "Deploys run on Fridays", "tags": ["ops"]})
    assert again.output["id"] == first["id"]
    assert again.output["new"] is False
    assert again.text == f"Updated memory {first['id']} (shared, tags: ops)."
    fixed = await ok(
        session,
        "memory_save",
        {"content": "Deploys run on Tuesdays", "replace_id": first["id"], "tags": ["ops"]},
    )
    assert fixed.output["id"] == first["id"]
    assert (await ok(session, "memory_search", {"query": "fridays"})).output["memories"] == []
    tuesday = await ok(session, "memory_search", {"query": "tuesdays"})
    assert [m["id"] for m in tuesday.output["memories"]] == [first["id"]]


async def test_delete(workspace: Path) -> None:
    """Deleting removes memories from searches and tag filters; unknown ids are reported
    as missing, or as not_found when nothing was deleted."""
    session = session_for(workspace)
    ids = await save_all(session)
    result = await ok(session, "memory_delete", {"ids": [ids[0], ids[3], 999]})
    assert result.output == {"deleted": [ids[0], ids[3]], "missing": [999]}
    assert result.text == f"Deleted 2 memories: {ids[0]}, {ids[3]}. Not found: 999."
    build = await ok(session, "memory_search", {"tags": ["build"]})
    assert build.output["memories"] == []
    gone = await session.call("memory_delete", {"ids": [ids[0]]})
    assert gone.error is not None
    assert gone.error.kind is ErrorKind.NOT_FOUND


@pytest.mark.parametrize(
    "args",
    [
        {"content": ""},
        {"content": "   "},
        {"content": "x", "tags": ["two words"]},
        {"content": "x", "scope": "everyone"},
        {"content": "x" * 9_000},
    ],
)
async def test_bad_saves_are_invalid(workspace: Path, args: dict[str, Any]) -> None:
    """Blank or oversized content, malformed tags and unknown scopes are invalid_params."""
    result = await session_for(workspace).call("memory_save", args)
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("memory_delete", {"ids": [2**70]}),
        ("memory_delete", {"ids": [1, 2**63]}),
        ("memory_delete", {"ids": [0]}),
        ("memory_save", {"content": "x", "replace_id": 2**70}),
        ("memory_save", {"content": "x", "replace_id": 2**63}),
    ],
)
async def test_ids_out_of_range_are_invalid(
    workspace: Path, name: str, args: dict[str, Any]
) -> None:
    """Ids below 1 or beyond SQLite's integers are invalid_params, not a crash; the
    largest id SQLite holds is accepted (and simply not found)."""
    session = session_for(workspace)
    result = await session.call(name, args)
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text
    largest = await session.call("memory_delete", {"ids": [2**63 - 1]})
    assert largest.error is not None
    assert largest.error.kind is ErrorKind.NOT_FOUND, largest.text


async def test_a_corrupt_file_is_unavailable_and_left_alone(workspace: Path) -> None:
    """A memory file that is not a database makes every tool answer unavailable, naming
    the file; the file is not changed."""
    path = workspace / ".toolweave" / "memory.db"
    path.parent.mkdir()
    garbage = b"garbage" * 100
    path.write_bytes(garbage)
    session = session_for(workspace)
    for name, args in (
        ("memory_search", {"query": "x"}),
        ("memory_save", {"content": "x"}),
        ("memory_delete", {"ids": [1]}),
    ):
        result = await session.call(name, args)
        assert result.error is not None
        assert result.error.kind is ErrorKind.UNAVAILABLE, result.text
        assert str(path) in result.text
    assert path.read_bytes() == garbage


@pytest.mark.parametrize("query", ["!!!", "🚀", '"', "\0", "  ?!  "])
async def test_a_query_without_words_says_so(workspace: Path, query: str) -> None:
    """A query with no letters or digits searches nothing: the newest memories come
    back, said to be that (not "matching" the query), with a hint to use words."""
    session = session_for(workspace)
    ids = await save_all(session)
    result = await ok(session, "memory_search", {"query": query, "limit": 2})
    assert [m["id"] for m in result.output["memories"]] == [ids[3], ids[2]]
    assert result.output["query_has_words"] is False
    assert "matching" not in result.text
    first = result.text.splitlines()[0]
    assert first == (
        f"The query {query.strip()!r} has no words to search for (only letters and digits "
        "are searched), so nothing was searched; search again with words. The most recent "
        "memories instead (2 memories):"
    )
    tagged = await ok(session, "memory_search", {"query": query, "tags": ["nowhere"]})
    assert tagged.text == (
        f"The query {query.strip()!r} has no words to search for (only letters and digits "
        "are searched), so nothing was searched; search again with words."
    )
    worded = await ok(session, "memory_search", {"query": "🚀 postgresql!"})
    assert worded.output["query_has_words"] is True
    assert worded.text.startswith("1 memory (matching '🚀 postgresql!'):")


async def test_a_directory_in_place_of_the_file_is_unavailable(workspace: Path) -> None:
    """A folder named memory.db makes every tool answer unavailable, naming it and
    saying it is a directory; nothing is created in it."""
    path = workspace / ".toolweave" / "memory.db"
    path.mkdir(parents=True)
    session = session_for(workspace)
    for name, args in (
        ("memory_search", {"query": "x"}),
        ("memory_search", {}),
        ("memory_save", {"content": "x"}),
        ("memory_delete", {"ids": [1]}),
    ):
        result = await session.call(name, args)
        assert result.error is not None, name
        assert result.error.kind is ErrorKind.UNAVAILABLE, result.text
        assert result.error.message == (
            f"the memory file {path} cannot be opened: it is a directory, not a database "
            "file; it is left as it is: fix it, or move it away to start with no memories"
        )
    assert list(path.iterdir()) == []


async def test_a_store_that_cannot_be_written_still_serves_searches(workspace: Path) -> None:
    """When SQLite cannot open the file for writing (here its ``-shm`` file beside it is
    a folder), searches read it read-only; saving and deleting answer unavailable,
    naming the file and why, and say that searching still works."""
    session = session_for(workspace)
    ids = await save_all(session)
    await session.aclose()
    path = workspace / ".toolweave" / "memory.db"
    wal, shm = path.with_name("memory.db-wal"), path.with_name("memory.db-shm")
    assert not wal.exists()  # the last connection checkpointed and removed it
    shm.mkdir()
    again = session_for(workspace)
    found = await ok(again, "memory_search", {"query": "postgresql"})
    assert [m["id"] for m in found.output["memories"]] == [ids[3]]
    for name, args in (
        ("memory_save", {"content": "more"}),
        ("memory_delete", {"ids": [ids[0]]}),
    ):
        result = await again.call(name, args)
        assert result.error is not None, name
        assert result.error.kind is ErrorKind.UNAVAILABLE, result.text
        assert result.error.message == (
            f"the memory file {path} cannot be written: memory.db-shm beside it is not a "
            "regular file; nothing was saved or deleted (searching it still works)"
        )
    assert len((await ok(again, "memory_search", {})).output["memories"]) == len(ids)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
async def test_a_read_only_folder_is_searched_and_named(workspace: Path) -> None:
    """A ``.toolweave`` folder this user may not write to (SQLite cannot make its
    ``-wal`` and ``-shm`` files) is still searched; a save names the read-only folder."""
    session = session_for(workspace)
    ids = await save_all(session)
    await session.aclose()
    folder = workspace / ".toolweave"
    folder.chmod(0o555)
    try:
        again = session_for(workspace)
        found = await ok(again, "memory_search", {"query": "postgresql"})
        assert [m["id"] for m in found.output["memories"]] == [ids[3]]
        saved = await again.call("memory_save", {"content": "more"})
        assert saved.error is not None
        assert saved.error.kind is ErrorKind.UNAVAILABLE, saved.text
        assert f"its folder {folder} is read-only" in saved.error.message
        assert "searching it still works" in saved.error.message
    finally:
        folder.chmod(0o755)
