"""A built tool set is immutable in fact: its attributes and entries refuse changes, and
a host that edits or extends a listing changes no later listing of any session."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from toolweave import ToolSetBuilder, tool


@tool(blocking=False)
def echo(text: str) -> str:
    """Say the text back.

    Args:
        text: What to say.
    """
    return text


def _toolset() -> Any:
    builder = ToolSetBuilder()
    builder.add(echo)
    return builder.build()


def test_the_set_and_its_entries_refuse_changes() -> None:
    """Setting or deleting a public attribute of a ToolSet or a ToolEntry raises."""
    toolset = _toolset()
    with pytest.raises(AttributeError, match="immutable"):
        toolset.entries = ()
    with pytest.raises(AttributeError, match="immutable"):
        del toolset.config
    (entry,) = toolset.entries
    with pytest.raises(AttributeError, match="immutable"):
        entry.name = "x"
    with pytest.raises(TypeError):
        toolset.options["mode"] = "read_only"  # type: ignore[index]
    assert toolset.names == ["echo"]


@pytest.mark.parametrize("format", ["openai", "anthropic", "neutral", "mcp"])
def test_a_listing_edited_by_a_host_changes_no_later_listing(format: str) -> None:
    """Appending to a listing is the host's own list; editing a definition raises; a deep
    copy is plain and editable; every later listing, of every session, is unchanged."""
    toolset = _toolset()
    first, other = toolset.session(), toolset.session()
    listing = first.definitions(format)
    before = json.dumps(listing, sort_keys=True)
    listing.append({"name": "extra"})
    with pytest.raises(TypeError, match="read-only"):
        listing[0]["description"] = "changed"
    with pytest.raises(TypeError, match="read-only"):
        next(v for v in listing[0].values() if isinstance(v, dict))["x"] = 1
    mine = copy.deepcopy(listing[0])
    mine["description"] = "changed"
    for session in (first, other):
        assert json.dumps(session.definitions(format), sort_keys=True) == before


def test_serialised_listing_follows_external_tools() -> None:
    """definitions_json is the listing's JSON, cached, and re-encoded when the session's
    external tools change."""
    from toolweave import external_tool

    toolset = _toolset()
    session = toolset.session()
    first = session.definitions_json("openai")
    assert json.loads(first) == json.loads(json.dumps(session.definitions("openai")))
    assert session.definitions_json("openai") is first

    async def found(ctx: Any, arguments: dict[str, Any]) -> str:
        return "found"

    lookup = external_tool(
        id="lookup",
        namespace="ext",
        description="Look something up.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        call=found,
    )
    session.register_external(lookup, prefix="ext__")
    extended = json.loads(session.definitions_json("openai"))
    assert [d["function"]["name"] for d in extended] == ["echo", "ext__lookup"]
