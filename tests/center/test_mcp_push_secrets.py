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
