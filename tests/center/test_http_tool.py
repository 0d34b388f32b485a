"""Pushed HTTP tools end to end: a real session forwards validated arguments as JSON to a
real server (Starlette under uvicorn on 127.0.0.1) and turns its answers into outputs
and errors; endpoints are validated before they are stored."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from toolweave import ErrorKind, Session, ToolSetBuilder
from toolweave.center._http_tool import http_tool, validate_endpoint
from toolweave.errors import CenterError

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city."}},
    "required": ["city"],
    "additionalProperties": False,
}


class Endpoint:
    """The weather service: what it answers on each path, and what it received."""

    def __init__(self) -> None:
        self.received: list[tuple[str, Any, dict[str, str]]] = []
        self.release = threading.Event()
        self.port = 0

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def handle(self, request: Request) -> Response:
        body: Any = await request.json() if await request.body() else None
        path = request.url.path
        self.received.append((path, body, dict(request.headers)))
        if path == "/weather":
            return JSONResponse({"city": body["city"], "temp_c": 21, "sky": "clear"})
        if path == "/refuse":
            return JSONResponse({"ok": False, "error": f"no forecast for {body['city']}"})
        if path == "/text":
            return PlainTextResponse(f"sunny in {body['city']}")
        if path == "/broken-json":
            return Response(b'{"temp": ', media_type="application/json")
        if path == "/big":
            return PlainTextResponse("x" * 5000)
        if path == "/slow":
            await anyio.to_thread.run_sync(self.release.wait, 30)  # set when the test ends
            return PlainTextResponse("late")
        if path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            if status == 503:
                return JSONResponse({"error": {"message": "down for maintenance"}}, status)
            return PlainTextResponse(f"database   is\n down (status {status})", status)
        return PlainTextResponse("no such endpoint", 404)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    """The weather service under uvicorn on a free port of 127.0.0.1."""
    service = Endpoint()
    app = Starlette(routes=[Route("/{path:path}", service.handle, methods=["POST"])])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        assert thread.is_alive(), "uvicorn stopped while starting"
        time.sleep(0.01)
    service.port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield service
    finally:
        service.release.set()
        server.should_exit = True
        thread.join(10)


def session_with(
    endpoint: Endpoint, path: str, host: str = "127.0.0.1", **settings: Any
) -> Session:
    """A session whose only tool, ``weather``, forwards to ``path`` (loopback allowed
    unless the settings say otherwise)."""
    spec = {"url": endpoint.url(path, host), "allow_loopback": True, **settings}
    tool = http_tool("weather", "The weather in a city, now.", SCHEMA, spec)
    return ToolSetBuilder().build(external={"weather": tool}).session()


async def test_json_answer_is_the_output(endpoint: Endpoint) -> None:
    """The validated arguments are POSTed as JSON with the endpoint's headers; the JSON
    answer is the output."""
    session = session_with(endpoint, "/weather", headers={"X-Api-Key": "k-123"})
    result = await session.call("weather", {"city": "Oslo"})
    assert result.error is None, result.text
    assert result.output == {"city": "Oslo", "temp_c": 21, "sky": "clear"}
    assert result.effective_tool == "api:weather"
    ((path, body, headers),) = endpoint.received
    assert (path, body) == ("/weather", {"city": "Oslo"})
    assert headers["x-api-key"] == "k-123"
    assert headers["content-type"] == "application/json"
    assert headers["host"] == f"127.0.0.1:{endpoint.port}"


async def test_ok_false_is_an_execution_error(endpoint: Endpoint) -> None:
    """An answer ``{"ok": false, "error": ...}`` fails the call with that message."""
    result = await session_with(endpoint, "/refuse").call("weather", {"city": "Atlantis"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert result.error.message == "no forecast for Atlantis"


@pytest.mark.parametrize(
    ("status", "kind", "excerpt"),
    [
        (500, ErrorKind.EXECUTION_ERROR, "database is down (status 500)"),
        (400, ErrorKind.EXECUTION_ERROR, "database is down (status 400)"),
        (429, ErrorKind.RATE_LIMITED, "database is down (status 429)"),
        (502, ErrorKind.UNAVAILABLE, "database is down (status 502)"),
        (503, ErrorKind.UNAVAILABLE, "down for maintenance"),
    ],
)
async def test_error_statuses(
    endpoint: Endpoint, status: int, kind: ErrorKind, excerpt: str
) -> None:
    """4xx and 5xx fail with the kind the status means and a one-line excerpt of the body
    (its error message when it is JSON)."""
    result = await session_with(endpoint, f"/status/{status}").call("weather", {"city": "Oslo"})
    assert result.error is not None
    assert result.error.kind is kind
    assert result.error.message == f"the endpoint answered HTTP {status}: {excerpt}"


async def test_text_answer_is_the_output(endpoint: Endpoint) -> None:
    """A 2xx answer that is not JSON is output as its text."""
    result = await session_with(endpoint, "/text").call("weather", {"city": "Rome"})
    assert result.error is None, result.text
    assert result.output == "sunny in Rome"
    assert result.text == "sunny in Rome"


async def test_broken_json_is_an_execution_error(endpoint: Endpoint) -> None:
    """An answer that says it is JSON and is not fails, showing its start."""
    result = await session_with(endpoint, "/broken-json").call("weather", {"city": "Oslo"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert 'invalid JSON: {"temp":' in result.error.message


async def test_bad_arguments_never_reach_the_endpoint(endpoint: Endpoint) -> None:
    """Arguments are validated against the pushed schema before anything is sent."""
    result = await session_with(endpoint, "/weather").call("weather", {"town": "Oslo"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert endpoint.received == []


async def test_loopback_endpoint_is_refused_unless_allowed(endpoint: Endpoint) -> None:
    """An endpoint whose name resolves to this machine is refused by default, at call
    time (an IP literal would already be refused when the endpoint is validated)."""
    session = session_with(endpoint, "/weather", host="localhost", allow_loopback=False)
    result = await session.call("weather", {"city": "Oslo"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert "loopback address" in result.error.message
    assert endpoint.received == []


async def test_timeout_and_size_limits(endpoint: Endpoint) -> None:
    """The endpoint's timeout and max_bytes bound each call."""
    slow = await session_with(endpoint, "/slow", timeout=0.3).call("weather", {"city": "Oslo"})
    assert slow.error is not None
    assert slow.error.kind is ErrorKind.TIMEOUT
    big = await session_with(endpoint, "/big", max_bytes=1000).call("weather", {"city": "Oslo"})
    assert big.error is not None
    assert big.error.kind is ErrorKind.EXECUTION_ERROR
    assert "larger than 1000 bytes" in big.error.message


def test_validate_endpoint_fills_defaults_and_is_stable() -> None:
    """Defaults are filled in, and a validated endpoint validates to itself."""
    checked = validate_endpoint({"url": "https://api.example.com/v1/weather"})
    assert checked == {
        "url": "https://api.example.com/v1/weather",
        "headers": {},
        "timeout": 10.0,
        "max_bytes": 1_000_000,
        "allow_private": False,
        "allow_loopback": False,
    }
    assert validate_endpoint(checked) == checked


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        ({}, "url must be a non-empty string"),
        ({"url": "ftp://example.com/x"}, "must be http or https"),
        ({"url": "https:///x"}, "names no host"),
        ({"url": "https://example.com:99999/"}, "malformed"),
        ({"url": "https://exa mple.com/"}, "must not contain spaces"),
        ({"url": "http://127.0.0.1:8080/"}, "loopback address; set allow_loopback"),
        ({"url": "http://0x7f.1/"}, "loopback address; set allow_loopback"),
        ({"url": "http://10.0.0.8/"}, "private address; set allow_private"),
        ({"url": "http://169.254.169.254/", "allow_private": True}, "can never be reached"),
        ({"url": "https://a.test/", "timeout": 0}, "timeout must be above 0"),
        ({"url": "https://a.test/", "timeout": 301}, "at most 300"),
        ({"url": "https://a.test/", "timeout": "5"}, "timeout must be a number"),
        ({"url": "https://a.test/", "timeout": float("nan")}, "timeout must be a number"),
        ({"url": "https://a.test/", "timeout": 10**400}, "timeout must be a number"),
        ({"url": "https://a.test/", "timeout": -(10**400)}, "timeout must be a number"),
        ({"url": "https://a.test/", "timeout": 10**5000}, "timeout must be a number"),
        ({"url": "https://a.test/", "timeout": True}, "timeout must be a number"),
        ({"url": "https://a.test/", "max_bytes": 0}, "max_bytes must be above 0"),
        ({"url": "https://a.test/", "max_bytes": 1.5}, "max_bytes must be a whole number"),
        ({"url": "https://a.test/", "max_bytes": True}, "max_bytes must be a whole number"),
        ({"url": "https://a.test/", "headers": {"X-Key": 5}}, "must be strings"),
        ({"url": "https://a.test/", "headers": {"X-Key": "a\nb"}}, "line break"),
        ({"url": "https://a.test/", "headers": {"Host": "b.test"}}, "set by the guard"),
        ({"url": "https://a.test/", "headers": ["X-Key"]}, "headers must be an object"),
        ({"url": "https://a.test/", "allow_loopback": "yes"}, "must be true or false"),
        ({"url": "https://a.test/", "allow_loopbak": True}, "unknown endpoint setting"),
    ],
)
def test_validate_endpoint_refuses_bad_input(endpoint: dict[str, Any], message: str) -> None:
    """Every malformed endpoint is refused with a CenterError saying what is wrong."""
    with pytest.raises(CenterError, match=message.replace("(", r"\(")):
        validate_endpoint(endpoint)


def test_a_bad_schema_is_refused() -> None:
    """A schema that is not valid JSON Schema is refused when the tool is built."""
    with pytest.raises(CenterError, match="not a valid JSON Schema"):
        http_tool("weather", "Weather.", {"type": "no-such-type"}, {"url": "https://a.test/"})


async def test_a_tool_pushed_through_the_admin_api_joins_running_sessions(
    endpoint: Endpoint, center: Any, toolset: Any
) -> None:
    """Push registration end to end: POST /api/tools, an attached session lists and calls
    the tool (its arguments forwarded to the endpoint), a push of the same name updates
    it, DELETE removes it, and a name held by another source is a 409 problem."""
    from starlette.testclient import TestClient
    from toolweave.center._admin import admin_app

    session = toolset.session()
    center.attach(session, role="common_user")
    api = TestClient(admin_app(center, tokens={"ops": "0123456789abcdef"}, dashboard=False))
    auth = {"Authorization": "Bearer 0123456789abcdef"}
    spec = {"url": endpoint.url("/weather"), "allow_loopback": True, "timeout": 5}
    body = {"name": "weather", "description": "The weather in a city, now.",
            "input_schema": SCHEMA, "endpoint": spec, "roles": ["common_user"]}  # fmt: skip
    created = api.post("/api/tools", json=body, headers=auth)
    assert created.status_code == 201, created.text
    assert created.json()["source"] == "api"

    def listed() -> dict[str, str]:
        return {d["function"]["name"]: d["function"]["description"] for d in session.definitions()}

    assert listed()["weather"] == "The weather in a city, now."
    result = await session.call("weather", {"city": "Oslo"}, "c1")
    assert result.error is None, result.text
    assert result.output == {"city": "Oslo", "temp_c": 21, "sky": "clear"}
    assert endpoint.received[-1][1] == {"city": "Oslo"}
    refused = await session.call("weather", {"city": 7}, "c2")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.INVALID_PARAMS

    updated = api.post("/api/tools", json={**body, "description": "Weather now."}, headers=auth)
    assert updated.status_code == 201
    assert listed()["weather"] == "Weather now."
    clash = api.post("/api/tools", json={**body, "name": "echo"}, headers=auth)
    assert clash.status_code == 409
    assert "already registered by host" in clash.json()["detail"]

    assert api.delete("/api/tools/weather", headers=auth).status_code == 204
    assert "weather" not in listed()
    gone = await session.call("weather", {"city": "Oslo"}, "c3")
    assert gone.error is not None
    assert gone.error.kind is ErrorKind.NOT_FOUND
    pushes = center.audit(type="change", tool="weather")
    assert [(e.outcome, e.actor) for e in pushes] == [
        ("unregister", "ops"),
        ("update", "ops"),
        ("register", "ops"),
    ]


KEY = "k-SECRET-4242"
PASSWORD = "pw-SECRET-777"


def _hidden(value: object) -> bool:
    """Whether neither secret of the pushed endpoint shows in ``value``."""
    text = value if isinstance(value, str) else repr(value)
    return KEY not in text and PASSWORD not in text


async def test_pushed_endpoint_secrets_are_never_shown_but_still_sent(
    endpoint: Endpoint, center: Any, toolset: Any
) -> None:
    """A pushed tool's header values and URL userinfo are ``***`` in the 201 answer,
    ``GET /api/tools``, ``GET /api/tools/{name}``, the audit (API, dashboard, store)
    and the feed, while calls still send the real ones; pushing the masked form back
    (an operator editing what the API showed) keeps them."""
    import base64

    from starlette.testclient import TestClient
    from toolweave.center._admin import admin_app

    session = toolset.session()
    center.attach(session)
    api = TestClient(admin_app(center, tokens={"ops": "0123456789abcdef"}))
    auth = {"Authorization": "Bearer 0123456789abcdef"}
    url = endpoint.url("/weather", host=f"bot:{PASSWORD}@127.0.0.1")
    spec = {"url": url, "headers": {"X-Api-Key": KEY}, "allow_loopback": True, "timeout": 5}
    body = {"name": "weather", "description": "The weather in a city, now.",
            "input_schema": SCHEMA, "endpoint": spec}  # fmt: skip
    answers = [api.post("/api/tools", json=body, headers=auth)]
    assert answers[0].status_code == 201, answers[0].text
    shown = answers[0].json()["endpoint"]
    assert shown["headers"] == {"X-Api-Key": "***"}
    assert shown["url"] == f"http://***@127.0.0.1:{endpoint.port}/weather"

    async def call() -> dict[str, str]:
        result = await session.call("weather", {"city": "Oslo"})
        assert result.error is None, result.text
        return endpoint.received[-1][2]

    basic = "Basic " + base64.b64encode(f"bot:{PASSWORD}".encode()).decode()
    sent = await call()
    assert (sent["x-api-key"], sent["authorization"]) == (KEY, basic)

    # The operator sends back what the API showed, with a new description.
    again = api.post(
        "/api/tools", json={**body, "description": "Weather now.", "endpoint": shown}, headers=auth
    )
    assert again.status_code == 201, again.text
    answers.append(again)
    assert center.tool("weather").record.endpoint["headers"] == {"X-Api-Key": KEY}
    assert center.tool("weather").record.endpoint["url"] == url
    sent = await call()
    assert (sent["x-api-key"], sent["authorization"]) == (KEY, basic)
    # A '***' standing for nothing stored is refused, not stored as the secret.
    bad = {**shown, "headers": {"X-Api-Key": "***", "X-Other": "***"}}
    refused = api.post("/api/tools", json={**body, "endpoint": bad}, headers=auth)
    assert refused.status_code == 400
    assert "none is stored under that name" in refused.json()["detail"]

    answers += [api.get("/api/tools", headers=auth), api.get("/api/tools/weather", headers=auth)]
    assert api.delete("/api/tools/weather", headers=auth).status_code == 204
    answers += [
        api.get("/api/audit", params={"type": "change", "tool": "weather"}, headers=auth),
        api.get("/fragments/audit", params={"tool": "weather"}, headers=auth),
        refused,
    ]
    for answer in answers:
        assert answer.status_code in (200, 201, 400), answer.text
        assert _hidden(answer.text), answer.request.url
    audit = center.audit(type="change", tool="weather")
    assert [e.outcome for e in audit] == ["unregister", "update", "register"]
    assert audit[-1].after["endpoint"]["headers"] == {"X-Api-Key": "***"}
    kept = center.store.query_audit(type="change", tool="weather", limit=10)
    everything = [*kept, *center.store.changes_since(0), *center.changes_since(0)]
    assert _hidden(everything)


def test_records_show_their_endpoint_masked(center: Any) -> None:
    """A pushed tool's record keeps the real endpoint (calls need it); its JSON form, its
    state's, its ``repr`` and audit entries an earlier version stored in clear show the
    secrets as ``***``."""
    from toolweave.center import AuditEntry

    endpoint = {"url": f"https://bot:{PASSWORD}@api.example.com/now", "headers": {"X-Key": KEY}}
    center.push_tool("weather", description="The weather.", input_schema=SCHEMA, endpoint=endpoint)
    state = center.tool("weather")
    assert state.record.endpoint["headers"] == {"X-Key": KEY}
    assert state.record.to_dict(reveal=True)["endpoint"]["url"] == endpoint["url"]
    for shown in (state.to_dict(), state.record.to_dict(), repr(state), repr(state.record)):
        assert _hidden(shown)
    assert state.to_dict()["endpoint"]["url"] == "https://***@api.example.com/now"
    old = AuditEntry(1.0, "change", tool="weather", outcome="register", actor="ops",
                     after={"name": "weather", "endpoint": endpoint})  # fmt: skip
    center.store.append_audit([old])
    (read,) = center.audit(type="change", tool="weather", until=2.0)
    assert read.after["endpoint"] == {
        "url": "https://***@api.example.com/now",
        "headers": {"X-Key": "***"},
    }


@pytest.mark.parametrize(
    "url",
    [
        f"ftp://bot:{PASSWORD}@api.example.com/now",
        f"https://bot:{PASSWORD}@/now",
        f"https://bot:{PASSWORD}@api.example.com:99999/now",
    ],
)
def test_endpoint_messages_never_show_the_url_userinfo(url: str) -> None:
    """A refused endpoint URL is quoted without its userinfo (the problem document goes
    back to the client, and may be logged)."""
    with pytest.raises(CenterError) as caught:
        validate_endpoint({"url": url})
    assert _hidden(str(caught.value))
    assert "***@" in str(caught.value)
