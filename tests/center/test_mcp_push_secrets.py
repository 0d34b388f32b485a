"""Pushed MCP server entries keep their secrets out of listings, the audit and the
change feed (shown as ``***``), while hosts still get the real values to connect."""

from __future__ import annotations

from typing import Any

import pytest
from toolweave.center import Center, CenterError
from toolweave.center._model import ChangeEvent

ENTRY = {
    "url": "https://bot:hunter2-pass@mcp.example.com/mcp",
    "headers": {"Authorization": "Bearer tok-SECRET-1234"},
}
STDIO = {"command": "server", "args": ["--verbose"], "env": {"API_KEY": "sk-live-SECRET-777"}}
SECRETS = ("hunter2-pass", "bot:", "tok-SECRET-1234", "sk-live-SECRET-777")


def _clean(value: object) -> bool:
    return not any(secret in repr(value) for secret in SECRETS)


def test_pushed_secrets_are_masked_in_listings_audit_and_feed(center: Center) -> None:
    events: list[ChangeEvent] = []
    unsubscribe = center.subscribe(events.append)
    try:
        center.push_mcp_server("docs", ENTRY, actor="ops")
        center.push_mcp_server("local", STDIO, actor="ops")
        center.push_mcp_server("local", {**STDIO, "args": []}, actor="ops")
        center.remove_mcp_server("docs", actor="ops")
        center.push_mcp_server("docs", ENTRY, actor="ops")
    finally:
        unsubscribe()

    listed = center.mcp_servers()
    assert listed["docs"] == {
        "url": "https://***@mcp.example.com/mcp",
        "headers": {"Authorization": "***"},
    }
    assert listed["local"] == {"command": "server", "args": [], "env": {"API_KEY": "***"}}

    audit = center.audit(type="change")
    pushes = [e for e in audit if e.outcome in ("push_mcp", "remove_mcp")]
    assert len(pushes) == 5
    assert all(_clean((e.before, e.after)) for e in pushes)
    assert pushes[0].after == listed["docs"]
    flags = [e for e in events if e.kind == "flag"]
    assert flags
    assert all(_clean(e.detail) for e in flags)

    # What hosts connect with keeps the real values.
    assert center.mcp_servers(reveal=True) == {"docs": ENTRY, "local": {**STDIO, "args": []}}


def test_the_store_keeps_no_pushed_secret_in_its_audit_or_feed(center: Center) -> None:
    """What the audit and the change feed keep is masked when written: a secret
    removed from the configuration does not live on in the history; the flag that
    hosts connect with keeps it."""
    center.push_mcp_server("docs", ENTRY, actor="ops")
    center.push_mcp_server("local", STDIO, actor="ops")
    center.remove_mcp_server("docs", actor="ops")

    stored = center.store.query_audit(type="change", limit=100)
    assert sum(e.outcome in ("push_mcp", "remove_mcp") for e in stored) == 3
    assert _clean([(e.before, e.after) for e in stored])
    changes = center.store.changes_since(0)
    assert [e.target for e in changes if e.kind == "flag"] == ["mcp:docs", "mcp:local", "mcp:docs"]
    assert _clean([e.detail for e in changes])
    assert center.mcp_servers(reveal=True) == {"local": STDIO}


def test_events_read_back_are_masked_even_when_stored_in_clear(center: Center) -> None:
    """Events a store kept in clear (as written before masking at rest) are masked when
    a reader catches up with :meth:`Center.changes_since` (the feed's resume)."""
    center.store.update_flag(
        "mcp", "old", "config", lambda _: dict(STDIO), actor="ops", reason="", action="push_mcp"
    )
    assert not _clean(center.store.changes_since(0)[-1].detail)
    replayed = center.changes_since(0)
    assert replayed[-1].detail["value"] == {**STDIO, "env": {"API_KEY": "***"}}
    assert _clean([e.detail for e in replayed])


def test_masked_values_sent_back_keep_the_stored_secrets(center: Center) -> None:
    """An operator who edits the masked entry a listing showed and pushes it back keeps
    the real secrets: a ``***`` value or userinfo stands for the stored one; an entry
    sent back unchanged changes nothing."""
    center.push_mcp_server("docs", ENTRY, actor="ops")
    center.push_mcp_server("local", STDIO, actor="ops")
    shown = center.mcp_servers()

    assert center.push_mcp_server("docs", shown["docs"], actor="ops") is False
    edited = {**shown["docs"], "headers": {**shown["docs"]["headers"], "X-Trace": "on"}}
    assert center.push_mcp_server("docs", edited, actor="ops") is True
    more_env = {**shown["local"], "env": {**shown["local"]["env"], "DEBUG": "1"}}
    assert center.push_mcp_server("local", more_env, actor="ops") is True
    assert center.mcp_servers(reveal=True) == {
        "docs": {**ENTRY, "headers": {**ENTRY["headers"], "X-Trace": "on"}},
        "local": {**STDIO, "env": {**STDIO["env"], "DEBUG": "1"}},
    }
    # The path may change; the host may not (the secret never follows it elsewhere).
    moved = {**shown["docs"], "url": "https://***@mcp.example.com/v2/mcp"}
    center.push_mcp_server("docs", moved, actor="ops")
    revealed = center.mcp_servers(reveal=True)["docs"]
    assert revealed["url"] == "https://bot:hunter2-pass@mcp.example.com/v2/mcp"
    assert _clean(center.audit(type="change"))


@pytest.mark.parametrize(
    ("server_id", "entry", "message"),
    [
        ("new", {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "***"}},
         "none is stored under that name"),
        ("docs", {**ENTRY, "headers": {"X-Other": "***"}}, "none is stored under that name"),
        ("docs", {**ENTRY, "url": "https://***@evil.example.com/mcp"}, "another scheme, host"),
        ("docs", {**ENTRY, "url": "http://***@mcp.example.com/mcp"}, "another scheme, host"),
        ("local", {**STDIO, "env": {"OTHER": "***"}}, "none is stored under that name"),
        ("new", {"url": "https://***@mcp.example.com/mcp"}, "the stored url has none"),
        # A stored secret never follows the entry to another host or program.
        ("docs", {"url": "https://evil.example.com/mcp", "headers": {"Authorization": "***"}},
         "another host or program"),
        ("docs", {**ENTRY, "url": "https://***@mcp.example.com:8443/mcp"}, "another"),
        ("local", {**STDIO, "command": "printenv", "env": {"API_KEY": "***"}},
         "another host or program"),
        ("local", {**STDIO, "args": ["-c", "curl"], "env": {"API_KEY": "***"}},
         "another host or program"),
    ],
)  # fmt: skip
def test_a_mask_standing_for_nothing_stored_is_refused(
    center: Center, server_id: str, entry: dict[str, Any], message: str
) -> None:
    """A ``***`` with no stored value behind it (a new server, a new name, another host)
    is refused: it would otherwise become the secret itself."""
    center.push_mcp_server("docs", ENTRY, actor="ops")
    center.push_mcp_server("local", STDIO, actor="ops")
    before = center.mcp_servers(reveal=True)
    with pytest.raises(CenterError, match=message) as caught:
        center.push_mcp_server(server_id, entry, actor="ops")
    assert caught.value.problem == "invalid"
    assert center.mcp_servers(reveal=True) == before


BAD_ENTRIES = [
    ({"command": 5}, "command"),
    ({"command": "uvx", "args": "mcp-server-time"}, "args"),
    ({"command": "x", "args": ["a"], "env": [1]}, "env"),
    ({"url": 5}, "url"),
    ({"url": "ftp://bot:hunter2-pass@mcp.example.com/mcp"}, "url"),
    ({"url": "https://mcp.example.com/mcp", "headers": {"Authorization": 5}}, "headers"),
    ({"command": "x", "url": "https://mcp.example.com/mcp"}, "url"),
    ({"command": "x", "type": "sse"}, "type"),
    ({"command": "x", "timeout": 5}, "timeout"),
]


@pytest.mark.parametrize(("entry", "field"), BAD_ENTRIES)
def test_malformed_entries_are_refused_with_the_loaders_rules(
    center: Center, loader_check: None, entry: dict[str, Any], field: str
) -> None:
    """With the MCP layer's check installed, an entry its configuration loader would
    refuse (so a following pool could never connect it) is refused when pushed, with
    a CenterError naming the field; nothing is stored, no secret is repeated."""
    version = center.version
    with pytest.raises(CenterError) as caught:
        center.push_mcp_server("bad", entry, actor="ops")
    assert caught.value.problem == "invalid"
    message = str(caught.value)
    assert message.startswith("the entry of MCP server 'bad' is refused: ")
    assert field in message
    assert _clean(message)
    assert center.mcp_servers() == {}
    assert center.version == version
    # A good entry still goes through the same check.
    assert center.push_mcp_server("good", STDIO, actor="ops") is True
