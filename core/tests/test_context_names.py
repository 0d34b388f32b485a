"""Context.param_name and Context.tool_name: names as the model sees them."""

from __future__ import annotations

import pytest
from toolweave import Context, Kind, Session, ToolSetBuilder, tool


@tool(kind=Kind.READ, blocking=False)
def reader(ctx: Context, offset: int = 0) -> str:
    """Read; report the names the context gives. Not for writing."""
    names = [
        ctx.param_name("offset"),
        ctx.param_name("other"),
        ctx.tool_name(),
        ctx.tool_name(Kind.READ),
        ctx.tool_name("edit"),
        ctx.tool_name(id="writer"),
        ctx.tool_name(id="main:writer"),
        ctx.tool_name(id="nothing"),
    ]
    return " ".join(str(name) for name in names)


@tool(kind=Kind.WRITE, blocking=False)
def writer(ctx: Context, kind: str = "", id: str = "") -> str:
    """Ask the context for a tool by ``kind`` or ``id`` (both when both are given).
    Not for reading."""
    return str(ctx.tool_name(kind or None, id=id or None))


def _session(config: dict[str, object]) -> Session:
    builder = ToolSetBuilder()
    builder.add_all([reader, writer])
    return builder.build(config).session()


def test_names_follow_the_configuration() -> None:
    """Renamed parameters and tools come back renamed; absent ones as None."""
    config = {
        "tools": [
            {"id": "reader", "name": "Read", "rename": {"offset": "start_line"}},
            {"id": "writer", "name": "Write"},
        ]
    }
    with _session(config).sync() as s:
        text = s.call("Read", {}).text
    assert text == "start_line other Read Read None Write Write None"


def test_without_renames_the_canonical_names() -> None:
    """Nothing renamed: the canonical names."""
    with _session({"tools": ["reader"]}).sync() as s:
        assert s.call("reader", {}).text == "offset other reader reader None None None None"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"kind": "reading"}, "'reading' is not a tool kind"),
        ({"id": "a b"}, "'a b' is not a tool id"),
        ({"id": "{tool:read}"}, "is not a tool id"),
        ({"kind": "read", "id": "reader"}, "a kind or an id, not both"),
    ],
)
def test_misuse_is_a_usage_error(arguments: dict[str, str], message: str) -> None:
    """An unknown kind, a malformed id or both at once are misuse (the call fails)."""
    with _session({"tools": ["reader", "writer"]}).sync() as s:
        result = s.call("writer", arguments)
    assert result.error is not None
    assert message in result.text
