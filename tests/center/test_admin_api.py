"""The admin HTTP API over both stores: every endpoint's success and its problems (RFC
9457 bodies, 4xx, never a 500), writes audited with the token's name, the exposure
check, and the change feed over a real uvicorn server."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import anyio
import httpx2 as httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from toolweave import ToolSet
from toolweave.center import BreakerSettings, Center, CenterError
from toolweave.center._admin import (
    MAX_BODY,
    admin_app,
    check_exposure,
    parse_tokens,
    serve_admin,
)

SECRET = "ci-secret-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {SECRET}"}
JSON_BODY = {"Content-Type": "application/json"}
PUSHED = {
    "name": "weather",
    "description": "The weather in a city, now.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    "endpoint": {"url": "https://weather.example.com/now"},
}


@pytest.fixture
def api(center: Center, toolset: ToolSet) -> Iterator[TestClient]:
    """The API over a center that knows the conftest's tools, with one token ("ci")."""
    center.attach(toolset.session(), role="agent", groups={"write": ["ops"], "boom": ["ops"]})
    with TestClient(admin_app(center, tokens={"ci": SECRET}), headers=AUTH) as client:
        yield client


def problem(answer: httpx.Response, status: int) -> dict[str, Any]:
    """The answer's problem document, checked to be one."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    body = answer.json()
    assert body["status"] == status
    assert body["title"]
    assert body["detail"]
    assert body["instance"] == answer.request.url.path
    return dict(body)


def last_change(center: Center) -> Any:
    (entry,) = center.audit(type="change", limit=1)
    return entry


# -- reads -------------------------------------------------------------------------------


def test_reads(api: TestClient, center: Center) -> None:
    """Health, tools, one tool, breakers, MCP servers and the audit answer JSON."""
    health = api.get("/api/health").json()
    assert health["tools"] == 4
    assert health["degraded"] == ""
    tools = api.get("/api/tools").json()
    assert [t["name"] for t in tools] == ["boom", "echo", "look", "write"]
    echo = api.get("/api/tools/echo").json()
    assert (echo["status"], echo["versions"], echo["source"]) == ("enabled", ["1", "2"], "host")
    assert api.get("/api/breakers").json() == {}
    assert api.get("/api/mcp-servers").json() == {}
    audit = api.get("/api/audit", params={"type": "change", "limit": "2"}).json()
    assert len(audit) == 2
    assert {e["outcome"] for e in audit} == {"register"}
    assert api.get("/api/audit", params={"tool": "nothing"}).json() == []


def test_audit_query_problems(api: TestClient) -> None:
    """Numbers in the audit query that are not numbers are a 400."""
    for params in ({"limit": "ten"}, {"since": "yesterday"}, {"until": "1e"}):
        assert "must be a number" in problem(api.get("/api/audit", params=params), 400)["detail"]


def test_audit_query_numbers_no_float_holds_are_refused(api: TestClient) -> None:
    """``since`` and ``until`` that are NaN, an infinity or out of a float's range are a
    400, on every store (a Redis store would turn them into stream ids)."""
    client = TestClient(api.app, headers=AUTH, raise_server_exceptions=False)
    for value in ("nan", "inf", "-Infinity", "1e999", "1" + "0" * 400):
        for name in ("since", "until"):
            answer = client.get("/api/audit", params={name: value})
            assert "must be a number" in problem(answer, 400)["detail"], (name, value)


# -- lifecycle, each write audited with the token's name ---------------------------------


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/tools/echo/disable", "disabled"),
        ("/api/tools/echo/quarantine", "quarantined"),
        ("/api/tools/echo/offline", "offline"),
        ("/api/groups/ops/disable", "enabled"),  # echo is in no group
        ("/api/sources/host/disable", "disabled"),
    ],
)
def test_status_operations(api: TestClient, center: Center, path: str, status: str) -> None:
    """Switching a tool, a group or a source is audited with the token's name and its
    reason; switching back reports whether anything changed."""
    answer = api.post(path, json={"reason": "incident 42"})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"changed": True, "version": center.version}
    assert center.tool("echo").status.value == status
    change = last_change(center)
    assert (change.actor, change.reason) == ("ci", "incident 42")
    back = path.rsplit("/", 1)[0] + "/enable"
    assert api.post(back).json()["changed"] is True
    assert api.post(back).json()["changed"] is False
    assert center.tool("echo").status.value == "enabled"


def test_pin_rollback_rollout_roles_groups(api: TestClient, center: Center) -> None:
    """Every version and membership operation succeeds and is audited as "ci"."""
    assert api.post("/api/tools/echo/pin", json={"version": "2"}).json()["changed"] is True
    assert center.tool("echo").pins == {"*": "2"}
    assert (
        api.post("/api/tools/echo/pin", json={"version": "1", "cohort": "beta"}).status_code == 200
    )
    assert api.post("/api/tools/echo/rollback", json={"cohort": "beta"}).json()["pinned"] is None
    assert api.post("/api/tools/echo/rollback").json()["pinned"] is None
    assert center.tool("echo").pins == {}

    answer = api.post("/api/tools/echo/rollout", json={"version": "2", "percent": 12.5})
    assert answer.json()["changed"] is True
    assert center.tool("echo").rollout == ("2", 12.5)
    assert api.delete("/api/tools/echo/rollout").json()["changed"] is True
    assert center.tool("echo").rollout is None

    assert api.put("/api/tools/echo/roles", json={"roles": ["ops", "admin"]}).status_code == 200
    assert center.tool("echo").roles == ("admin", "ops")
    assert api.put("/api/tools/echo/roles", json={"roles": None}).status_code == 200
    assert center.tool("echo").roles is None
    assert api.put("/api/tools/echo/groups", json={"groups": ["ops"]}).status_code == 200
    assert center.tool("echo").groups == ("ops",)

    changes = center.audit(type="change", tool="echo", limit=20)
    ours = [e for e in changes if e.outcome != "register"]
    assert [e.outcome for e in ours] == [
        "groups", "roles", "roles", "abort", "rollout", "rollback", "rollback", "pin", "pin",
    ]  # fmt: skip
    assert {e.actor for e in ours} == {"ci"}


def test_breaker_settings(api: TestClient, center: Center) -> None:
    """A breaker's own settings are set, shown, and given back to the defaults."""
    answer = api.put("/api/breakers/echo", json={"failures": 3, "window": 60, "cooldown": 5})
    assert answer.json()["changed"] is True
    assert center.settings_for("echo") == BreakerSettings(failures=3, window=60, cooldown=5)
    shown = api.get("/api/breakers").json()["echo"]
    assert shown["state"] == "closed"
    assert shown["settings"]["failures"] == 3
    assert last_change(center).actor == "ci"
    assert api.put("/api/breakers/mcp:github", json={"slow_ms": 900}).status_code == 200
    assert api.delete("/api/breakers/echo").json()["changed"] is True
    assert "echo" not in api.get("/api/breakers").json()
    detail = problem(api.put("/api/breakers/echo", json={"failures": 0}), 422)["detail"]
    assert "failures >= 1" in detail


def test_breaker_reset(api: TestClient, center: Center) -> None:
    """Resetting an open breaker closes it."""
    center.configure_breaker("boom", BreakerSettings(failures=1, window=60, cooldown=60))
    center.outcome("boom", failed=True, trial=False)
    assert center.breakers()["boom"]["state"] == "open"
    answer = api.post("/api/breakers/boom/reset")
    assert answer.status_code == 200, answer.text
    assert center.breakers()["boom"]["state"] == "closed"
    assert last_change(center).actor == "ci"


def test_push_and_remove(api: TestClient, center: Center) -> None:
    """A pushed tool is a 201 with its state, DELETE is a 204; a name another source
    holds is a 409; pushed MCP entries are put and removed."""
    created = api.post("/api/tools", json=PUSHED)
    assert created.status_code == 201, created.text
    assert (created.json()["name"], created.json()["source"]) == ("weather", "api")
    assert last_change(center).actor == "ci"
    clash = problem(api.post("/api/tools", json={**PUSHED, "name": "echo"}), 409)
    assert "already registered by host" in clash["detail"]
    assert api.delete("/api/tools/weather").status_code == 204
    assert "weather" not in [t["name"] for t in api.get("/api/tools").json()]
    problem(api.delete("/api/tools/weather"), 404)

    entry = {"command": "uvx", "args": ["mcp-server-time"]}
    assert api.put("/api/mcp-servers/time", json={"config": entry}).json()["changed"] is True
    assert api.get("/api/mcp-servers").json() == {"time": entry}
    assert last_change(center).actor == "ci"
    assert api.delete("/api/mcp-servers/time").json()["changed"] is True
    assert api.get("/api/mcp-servers").json() == {}
    problem(api.put("/api/mcp-servers/time", json={"config": {"nothing": 1}}), 400)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"command": 5}, "command"),
        ({"command": "uvx", "args": "mcp-server-time"}, "args"),
        ({"url": 5}, "url"),
        ({"url": "https://mcp.example.com/mcp", "headers": ["Authorization"]}, "headers"),
        ({"command": "uvx", "cmd": "typo"}, "cmd"),
    ],
)
def test_malformed_mcp_entries_are_a_400(
    api: TestClient, center: Center, loader_check: None, entry: dict[str, Any], field: str
) -> None:
    """``PUT /api/mcp-servers/{id}`` refuses an entry the MCP configuration loader would
    refuse, with a problem naming the field; nothing is stored."""
    version = center.version
    answer = api.put("/api/mcp-servers/bad", json={"config": entry})
    detail = problem(answer, 400)["detail"]
    assert detail.startswith("the entry of MCP server 'bad' is refused: ")
    assert field in detail
    assert api.get("/api/mcp-servers").json() == {}
    assert center.version == version


def test_a_huge_endpoint_timeout_is_a_400(api: TestClient, center: Center) -> None:
    """An endpoint timeout no float can hold (an int of 401 digits) is refused with a
    problem naming it, never a 500; nothing is stored."""
    client = TestClient(api.app, headers=AUTH, raise_server_exceptions=False)
    version = center.version
    for timeout in (b"1" + b"0" * 400, b"-1" + b"0" * 400):
        endpoint = {"url": "https://weather.example.com/now", "timeout": "T"}
        body = json.dumps({**PUSHED, "endpoint": endpoint}).encode().replace(b'"T"', timeout)
        answer = client.post("/api/tools", content=body, headers=JSON_BODY)
        detail = problem(answer, 400)["detail"]
        assert "endpoint timeout must be a number of seconds" in detail
        assert len(detail) < 200
    with pytest.raises(CenterError, match="endpoint timeout"):
        center.push_tool(
            "weather", description="The weather.", input_schema=PUSHED["input_schema"],
            endpoint={"url": "https://weather.example.com/now", "timeout": 10**5000},
        )  # fmt: skip
    assert center.version == version
    assert "weather" not in [t["name"] for t in client.get("/api/tools").json()]


def test_the_status_follows_the_failure_not_words_in_a_name(
    api: TestClient, center: Center
) -> None:
    """A tool or group whose name holds words of store failures ("busy", "closed",
    "read-only", "unreachable") gets the status of what went wrong, never a 503; a
    store that cannot be read is a 503 whatever its message says."""
    for name in ("busy", "closed_tickets", "unreachable"):
        assert api.post("/api/tools", json={**PUSHED, "name": name}).status_code == 201
        bad = {**PUSHED, "name": name, "input_schema": {"type": "string"}}
        problem(api.post("/api/tools", json=bad), 400)
        problem(api.post(f"/api/groups/read-only-{name}/disable"), 404)
    problem(api.post("/api/tools", json={**PUSHED, "name": "echo"}), 409)
    center.store.close()
    assert "is closed" in problem(api.post("/api/tools/echo/disable"), 503)["detail"]


def test_no_flag_outlives_its_tool(center_url: str, toolset: ToolSet) -> None:
    """A change to a tool another client has just unregistered (this center's view
    still lists it) is refused by the store with a 404, instead of leaving a flag that
    a tool registered later under the name would inherit."""
    stale = Center.open(center_url, poll_interval=3600)  # no thread: its view stays
    try:
        stale.register_toolset(toolset)
        with Center.open(center_url) as other:
            other.unregister("echo", actor="ops")
        assert "echo" in [t.name for t in stale.tools()]  # the stale view
        with pytest.raises(CenterError, match="holds no tool"):
            stale.set_roles("echo", ["admin"], actor="ops")
        api = TestClient(admin_app(stale, tokens={"ci": SECRET}), headers=AUTH)
        problem(api.post("/api/tools/echo/disable", json={"reason": "race"}), 404)
        problem(api.put("/api/tools/echo/roles", json={"roles": ["admin"]}), 404)
        problem(api.post("/api/tools/echo/pin", json={"version": "2"}), 404)
        _, _, flags = stale.store.load()
        assert [key for key in flags if key[:2] == ("tool", "echo")] == []
        with Center.open(center_url) as other:
            other.register_toolset(toolset)
            fresh = other.tool("echo")
            assert (fresh.status.value, fresh.roles, fresh.pins) == ("enabled", None, {})
    finally:
        stale.close()


# -- problems ----------------------------------------------------------------------------


def test_tokens(center: Center, toolset: ToolSet) -> None:
    """Without a token, or with a wrong one, every /api route is a 401; the feed takes
    the token as ?token= too."""
    center.attach(toolset.session())
    client = TestClient(admin_app(center, tokens={"ci": SECRET}))
    for method, path in [("GET", "/api/tools"), ("POST", "/api/tools/echo/disable"),
                         ("GET", "/api/feed"), ("GET", "/fragments/tools")]:  # fmt: skip
        problem(client.request(method, path), 401)
        for header in (f"Bearer {SECRET[:-1]}", f"Basic {SECRET}", "Bearer", SECRET):
            problem(client.request(method, path, headers={"Authorization": header}), 401)
    problem(client.get("/api/tools", params={"token": SECRET}), 401)  # only the feed
    assert center.tool("echo").status.value == "enabled"
    assert client.get("/").status_code == 200  # the page shell holds no data
    # Without tokens only loopback names are served: a rebinding page's Host is not.
    rebound = TestClient(admin_app(center), base_url="http://attacker.example:8770")
    problem(rebound.get("/api/tools"), 403)
    problem(rebound.post("/api/tools/echo/disable", json={}), 403)
    open_ = TestClient(admin_app(center), base_url="http://127.0.0.1:8770")
    assert open_.post("/api/tools/echo/disable").status_code == 200
    assert last_change(center).actor == "admin-api"


@pytest.mark.parametrize(
    "host",
    ["127.attacker.example:8770", "127.0.0.1.nip.io:8770", "localhost.attacker.example",
     "[::2]:8770", "127.0.0.1:80x", "[::1]8770"],
)  # fmt: skip
def test_rebound_hosts_are_refused(center: Center, toolset: ToolSet, host: str) -> None:
    """Without tokens, a Host that only starts like a loopback address (what a DNS-
    rebinding page sends) can neither read nor change anything."""
    center.attach(toolset.session())
    client = TestClient(admin_app(center), base_url="http://127.0.0.1:8770")
    headers = {"Host": host}
    problem(client.get("/api/tools", headers=headers), 403)
    problem(client.get("/fragments/tools", headers=headers), 403)
    write = {**headers, "Origin": f"http://{host}"}
    problem(client.post("/api/tools/echo/disable", json={}, headers=write), 403)
    assert center.tool("echo").status.value == "enabled"


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:8770", "127.4.5.6:1", "localhost:8770", "[::1]:8770",
             "[::1]", "LOCALHOST"],
)  # fmt: skip
def test_loopback_hosts_are_served(center: Center, toolset: ToolSet, host: str) -> None:
    """Without tokens, loopback names and addresses, with or without a port, are served."""
    center.attach(toolset.session())
    client = TestClient(admin_app(center), base_url="http://127.0.0.1:8770")
    assert client.get("/api/tools", headers={"Host": host}).status_code == 200


def test_not_found_and_method_not_allowed(api: TestClient) -> None:
    """Unknown tools, operations, collections and routes are 404s; a wrong method on a
    known route is a 405; each with a problem body."""
    assert "holds no tool" in problem(api.get("/api/tools/nothing"), 404)["detail"]
    problem(api.post("/api/tools/nothing/disable"), 404)
    problem(api.post("/api/tools/nothing/pin", json={"version": "1"}), 404)
    problem(api.post("/api/tools/echo/explode"), 404)
    problem(api.post("/api/planets/mars/disable"), 404)
    problem(api.get("/api/nothing"), 404)
    problem(api.get("/nothing/at/all"), 404)
    problem(api.get("/api/tools/echo/pin"), 405)
    problem(api.patch("/api/tools"), 405)
    problem(api.delete("/api/health"), 405)


def test_unknown_groups_and_sources_are_not_found(api: TestClient, center: Center) -> None:
    """A status change on a group or source the center does not know is a 404 naming
    the close ones (a mistyped emergency brake never reports success); a group known
    only by the status set on it before can still be switched back."""
    version = center.version
    for path, close in (("/api/groups/opps/disable", "ops"), ("/api/sources/hots/disable", "host")):
        detail = problem(api.post(path, json={"reason": "incident"}), 404)["detail"]
        assert f"did you mean {close}" in detail, detail
    with pytest.raises(CenterError, match="holds no group named 'opps'"):
        center.disable(group="opps")
    with pytest.raises(CenterError, match="holds no source named 'hots'"):
        center.disable(source="hots")
    assert center.version == version
    assert api.post("/api/groups/ops/disable").json()["changed"] is True
    for name in ("boom", "write"):
        center.set_groups(name, [])
    assert api.post("/api/groups/ops/enable").json()["changed"] is True
    problem(api.post("/api/groups/ops/disable"), 404)  # no tool and no status left


def test_versions_a_tool_does_not_have_are_refused(api: TestClient, center: Center) -> None:
    """A pin or a rollout to a version the tool does not have is a 400 naming the known
    ones, or saying there are none (a pushed tool has none); nothing is stored."""
    assert api.post("/api/tools", json=PUSHED).status_code == 201
    assert center.tool("weather").record.versions == ()
    version = center.version
    for path, body in (("pin", {"version": "does-not-exist"}),
                       ("rollout", {"version": "does-not-exist", "percent": 10})):  # fmt: skip
        detail = problem(api.post(f"/api/tools/weather/{path}", json=body), 400)["detail"]
        assert "known: none" in detail, detail
    with pytest.raises(CenterError, match="known: none"):
        center.pin("weather", "1")
    detail = problem(api.post("/api/tools/echo/pin", json={"version": "9"}), 400)["detail"]
    assert "known: 1, 2" in detail
    assert center.version == version
    assert center.tool("weather").pins == {}


def test_bad_bodies(api: TestClient, center: Center) -> None:
    """Malformed JSON is a 400, a body over the limit a 413, a body that is not an
    object or has fields of the wrong type a 422; nothing changes."""
    version = center.version
    path = "/api/tools/echo/rollout"
    problem(api.post(path, content=b'{"version": "2",', headers=JSON_BODY), 400)
    problem(api.post(path, content=b"\xff\xfe", headers=JSON_BODY), 400)
    problem(api.post(path, content=b"[1, 2]", headers=JSON_BODY), 422)
    big = b'{"version": "2", "percent": "%s"}' % (b"x" * MAX_BODY)
    problem(api.post(path, content=big, headers=JSON_BODY), 413)
    # What a web page could send without asking first: a form, or another origin.
    problem(api.post(path, content=b'{"version": "2", "percent": 5}'), 415)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    problem(api.post(path, content=b"version=2&percent=5", headers=form), 415)
    problem(api.post(path, json={"version": "2", "percent": 5},
                     headers={"Origin": "http://evil.example"}), 403)  # fmt: skip
    for body in ({"version": 2, "percent": 10}, {"version": "2", "percent": "10"},
                 {"version": "2", "percent": True}, {"version": "2"}):  # fmt: skip
        problem(api.post(path, json=body), 422)
    problem(api.post("/api/tools/echo/disable", json={"reason": 42}), 422)
    problem(api.put("/api/tools/echo/roles", json={}), 422)
    problem(api.put("/api/tools/echo/roles", json={"roles": "admin"}), 422)
    problem(api.put("/api/tools/echo/groups", json={"groups": [1]}), 422)
    problem(api.put("/api/breakers/echo", json={"window": "long"}), 422)
    problem(api.post("/api/tools", json={**PUSHED, "input_schema": []}), 422)
    problem(api.post("/api/tools", json={**PUSHED, "read_only": "yes"}), 422)
    problem(api.post("/api/tools", json={k: v for k, v in PUSHED.items() if k != "name"}), 422)
    assert "0-100" in problem(api.post(path, json={"version": "2", "percent": 101}), 400)["detail"]
    assert (
        "known: 1, 2" in problem(api.post(path, json={"version": "9", "percent": 5}), 400)["detail"]
    )
    problem(api.post("/api/tools/echo/rollback"), 400)  # nothing to roll back
    assert center.version == version


def test_deeply_nested_bodies_are_malformed(api: TestClient, center: Center) -> None:
    """A body nested past what the center keeps, whether the JSON parser gives up on it
    or not, is a 400 malformed JSON, and nothing is stored."""
    client = TestClient(api.app, headers=AUTH, raise_server_exceptions=False)
    version = center.version
    deep = b"[" * 100_000 + b"]" * 100_000
    for path in ("/api/tools", "/api/tools/echo/pin", "/api/breakers/echo"):
        method = "PUT" if "breakers" in path else "POST"
        problem(client.request(method, path, content=deep, headers=JSON_BODY), 400)
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    inner = schema
    for _ in range(500):  # within the parser's reach, beyond what the center keeps
        inner["x"] = {}
        inner = inner["x"]
    answer = client.post("/api/tools", json={**PUSHED, "input_schema": schema})
    assert "nests deeper" in problem(answer, 400)["detail"]
    with pytest.raises(CenterError, match="nests deeper"):
        center.push_tool(
            "weather", description="The weather.", input_schema=schema,
            endpoint={"url": "https://weather.example.com/now"},
        )  # fmt: skip
    assert center.version == version
    assert client.get("/api/tools").status_code == 200


def test_audit_fragment_limits(api: TestClient, center: Center) -> None:
    """The dashboard's audit tail takes ASCII digits only (a 400 problem otherwise) and
    holds a limit of any length to 1000 entries."""
    client = TestClient(api.app, headers=AUTH, raise_server_exceptions=False)
    for bad in ("\u00b2", "\u0661", "-1", "ten"):
        answer = client.get("/fragments/audit", params={"limit": bad})
        assert "whole number" in problem(answer, 400)["detail"]
    rows = len(center.audit(limit=1000))
    for good, shown in (("1" * 5000, rows), ("0" * 40 + "2", 2), ("0", 1)):
        answer = client.get("/fragments/audit", params={"limit": good})
        assert answer.status_code == 200, answer.text
        assert answer.text.count("<tr") - 1 == min(shown, rows), good


def test_parse_tokens() -> None:
    """Tokens are name=secret items, as a list or one comma-separated string; two tokens
    with one name are an error (the first secret would stop working unnoticed)."""
    other = "another-secret-0123456789"
    assert parse_tokens([f"ci={SECRET}", f"ops={other}"]) == {"ci": SECRET, "ops": other}
    assert parse_tokens(f"ci={SECRET},ops={other}") == {"ci": SECRET, "ops": other}
    for twice in ([f"ci={SECRET}", f"ci={other}"], f"ci={SECRET}, ci={other}"):
        with pytest.raises(CenterError, match="two tokens are named 'ci'"):
            parse_tokens(twice)
    with pytest.raises(CenterError, match="too short"):
        parse_tokens(["ci=short"])


def test_check_exposure() -> None:
    """Serving off loopback needs a token; loopback never does."""
    with pytest.raises(CenterError, match="without a token"):
        check_exposure("0.0.0.0", {})
    with pytest.raises(CenterError, match="without a token"):
        check_exposure("192.168.1.5", {})
    check_exposure("0.0.0.0", {"ci": SECRET})
    for host in ("127.0.0.1", "::1", "localhost", "127.1.2.3"):
        check_exposure(host, {})


@pytest.mark.anyio
async def test_serve_refuses_an_open_exposed_address(center: Center) -> None:
    """serve_admin refuses 0.0.0.0 without a token before binding anything."""
    with pytest.raises(CenterError, match="without a token"):
        await serve_admin(center, "0.0.0.0", 0)


# -- the change feed over a real server ----------------------------------------------------


@contextlib.asynccontextmanager
async def running(app: Any) -> AsyncIterator[str]:
    """``app`` served by uvicorn on a free port of 127.0.0.1: its base URL."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
                await anyio.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        finally:
            server.should_exit = True


@pytest.mark.anyio
async def test_the_feed_delivers_changes(center: Center, toolset: ToolSet) -> None:
    """A change made by another client arrives on the feed as a server-sent event with
    the center's version as its id; the token is taken from ?token=."""
    center.attach(toolset.session())
    app = admin_app(center, tokens={"ci": SECRET})
    async with running(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        refused = await client.get("/api/feed")
        assert refused.status_code == 401
        async with client.stream("GET", "/api/feed", params={"token": SECRET}) as feed:
            assert feed.headers["content-type"].startswith("text/event-stream")
            lines = feed.aiter_lines()
            assert (await anext(lines)).startswith("retry:")
            changed = await client.post("/api/tools/look/disable", headers=AUTH)
            assert changed.status_code == 200
            event: dict[str, str] = {}
            with anyio.fail_after(5):
                async for line in lines:
                    if not line and "data" in event:
                        break
                    if line and not line.startswith(":"):
                        key, _, value = line.partition(": ")
                        event[key] = value
    assert event["event"] == "flag"
    assert event["id"] == str(center.version)
    data = json.loads(event["data"])
    assert (data["target"], data["version"]) == ("look", center.version)


@pytest.mark.anyio
async def test_the_feed_refuses_a_bad_last_event_id(center: Center, toolset: ToolSet) -> None:
    """A resume point that is not a version SQLite or Redis can take (a digit that is
    not ASCII, a number of 2**63 or more, thousands of digits) is a 400 problem before
    the stream starts; a good one replays what was missed."""
    center.attach(toolset.session())
    center.disable("look")
    async with (
        running(admin_app(center, tokens={"ci": SECRET})) as url,
        httpx.AsyncClient(base_url=url, timeout=10, headers=AUTH) as client,
    ):
        for bad in ("\u00b2", "9" * 23, str(2**63), "1" * 5000, "-1", "1.5"):
            answer = await client.get("/api/feed", params={"since": bad})
            assert "a version" in problem(answer, 400)["detail"]
        for bad in ("99999999999999999999999", "1" * 5000):
            answer = await client.get("/api/feed", headers={"Last-Event-ID": bad})
            problem(answer, 400)
        async with client.stream("GET", "/api/feed", params={"since": "0"}) as feed:
            assert feed.status_code == 200
            with anyio.fail_after(5):
                async for line in feed.aiter_lines():
                    if line.startswith("data:"):
                        break
            assert json.loads(line[5:])["version"] == 1


@pytest.mark.anyio
async def test_a_resumed_feed_masks_pushed_secrets(center: Center, toolset: ToolSet) -> None:
    """The changes replayed from ``since`` (or Last-Event-ID) hide a pushed MCP server's
    secrets as the live feed does, also for events a store kept in clear."""
    center.attach(toolset.session())
    start = center.version
    center.store.update_flag(
        "mcp", "old", "config", lambda _: {"command": "s", "env": {"KEY": "sk-OLD-SECRET"}},
        actor="ops", reason="", action="push_mcp",
    )  # fmt: skip
    center.push_mcp_server("new", {"url": "https://u:pw-NEW-SECRET@h.example/mcp"})
    async with (
        running(admin_app(center, tokens={"ci": SECRET})) as url,
        httpx.AsyncClient(base_url=url, timeout=10, headers=AUTH) as client,
        client.stream("GET", "/api/feed", params={"since": str(start)}) as feed,
    ):
        data: list[dict[str, Any]] = []
        with anyio.fail_after(5):
            async for line in feed.aiter_lines():
                if line.startswith("data:"):
                    data.append(json.loads(line[5:]))
                if len(data) == 2:
                    break
    assert [d["target"] for d in data] == ["mcp:old", "mcp:new"]
    assert data[0]["detail"]["value"]["env"] == {"KEY": "***"}
    assert data[1]["detail"]["value"]["url"] == "https://***@h.example/mcp"
    assert "SECRET" not in json.dumps(data)


# -- never a 500 ---------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)
KEYS = ["version", "percent", "reason", "cohort", "roles", "groups", "failures", "window",
        "cooldown", "slow_ms", "config", "name", "description", "input_schema", "endpoint",
        "read_only"]  # fmt: skip
FIELDS = st.dictionaries(st.sampled_from(KEYS), JSON)
ROUTES = [("POST", "/api/tools/echo/rollout"), ("POST", "/api/tools/echo/pin"),
          ("POST", "/api/tools/echo/disable"), ("PUT", "/api/tools/echo/roles"),
          ("PUT", "/api/breakers/echo"), ("POST", "/api/tools"),
          ("PUT", "/api/mcp-servers/fuzz"), ("POST", "/api/tools/echo/rollback")]  # fmt: skip
SEGMENT = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="/?#%"), max_size=12
).filter(lambda s: s not in (".", "..", "feed"))
"""A path segment that cannot spell the endless feed (no dot segments, no escapes)."""


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(route=st.sampled_from(ROUTES), body=FIELDS | JSON)
def test_random_bodies_never_fail_the_server(
    api: TestClient, route: tuple[str, str], body: Any
) -> None:
    """Whatever JSON arrives, the answer is a success or a 4xx problem."""
    method, path = route
    client = TestClient(api.app, headers=AUTH, raise_server_exceptions=False)
    answer = client.request(method, path, content=json.dumps(body).encode())
    assert answer.status_code < 500, answer.text
    for read in ("/api/tools", "/api/breakers", "/api/mcp-servers", "/api/audit"):
        assert client.get(read).status_code == 200, read  # what was stored reads back


def test_nan_and_infinity_are_refused(api: TestClient) -> None:
    """Bodies with NaN or Infinity are malformed JSON (400), and nothing is stored."""
    client = TestClient(api.app, headers=AUTH, raise_server_exceptions=False)
    for body in (b'{"window": NaN}', b'{"cooldown": Infinity}', b'{"slow_ms": -Infinity}'):
        problem(client.put("/api/breakers/echo", content=body, headers=JSON_BODY), 400)
    assert client.get("/api/breakers").status_code == 200
    assert client.get("/api/audit").status_code == 200


def test_numbers_out_of_range_are_refused(api: TestClient, center: Center) -> None:
    """A number that overflows a float (1e999) is refused like Infinity, in breaker
    settings and in a pushed schema; nothing is stored and every read still answers."""
    client = TestClient(api.app, headers=AUTH, raise_server_exceptions=False)
    version = center.version
    for body in (b'{"cooldown": 1e999}', b'{"window": -1e999}', b'{"slow_ms": 1E400}'):
        problem(client.put("/api/breakers/echo", content=body, headers=JSON_BODY), 400)
    huge = b'{"cooldown": 1%s}' % (b"0" * 400)  # an int no float can hold
    problem(client.put("/api/breakers/echo", content=huge, headers=JSON_BODY), 422)
    schema = b'{"type": "object", "properties": {"n": {"type": "number", "maximum": 1e999}}}'
    pushed = json.dumps({**PUSHED, "input_schema": "SCHEMA"}).encode().replace(b'"SCHEMA"', schema)
    problem(client.post("/api/tools", content=pushed, headers=JSON_BODY), 400)
    assert center.version == version
    for read in ("/api/tools", "/api/breakers", "/api/audit"):
        assert client.get(read).status_code == 200, read
    assert "weather" not in [t["name"] for t in client.get("/api/tools").json()]


def test_the_center_never_stores_a_number_out_of_range(center: Center, toolset: ToolSet) -> None:
    """In Python too: breaker settings refuse infinities and NaN, and a pushed schema
    holding one is refused with a CenterError, before anything is stored."""
    center.attach(toolset.session())
    for bad in ({"cooldown": float("inf")}, {"window": float("nan")}, {"slow_ms": 10**400}):
        with pytest.raises(CenterError, match="finite"):
            BreakerSettings(**bad)  # type: ignore[arg-type]
    version = center.version
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("inf")}}}
    with pytest.raises(CenterError, match="not JSON"):
        center.push_tool(
            "weather", description="The weather.", input_schema=schema,
            endpoint={"url": "https://weather.example.com/now"},
        )  # fmt: skip
    with pytest.raises(CenterError, match="not JSON"):
        center.store.update_flag(
            "tool", "echo", "breaker", lambda _: {"cooldown": float("inf")},
            actor="test", reason="", action="breaker",
        )  # fmt: skip
    assert center.store.version() == version
    assert "weather" not in [t.name for t in center.tools()]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]),
    parts=st.lists(SEGMENT, min_size=1, max_size=4),
    query=st.dictionaries(st.sampled_from(["limit", "since", "until", "type", "tool"]), SEGMENT),
)
def test_random_paths_never_fail_the_server(
    api: TestClient, method: str, parts: list[str], query: dict[str, str]
) -> None:
    """Whatever path and query arrive under /api and /fragments, no 500."""
    client = TestClient(
        api.app, headers=AUTH, raise_server_exceptions=False, follow_redirects=False
    )
    for root in ("/api", "/fragments"):
        path = root + "/" + "/".join(quote(part, safe="") for part in parts)
        answer = client.request(method, path, params=query)
        assert answer.status_code < 500, (path, answer.text)
