"""Pushed MCP server entries keep their secrets out of listings, the audit and the
change feed (shown as ``***``), while hosts still get the real values to connect."""

from __future__ import annotations

from toolweave.center import Center
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
