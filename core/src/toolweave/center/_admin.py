"""The registry center's admin HTTP API: every lifecycle operation, audit queries, push
registration, and the change feed as server-sent events, behind a bearer token.

Served by ``toolweave center serve`` (the ``mcp`` extra brings Starlette and uvicorn).
Errors are RFC 9457 problem documents (``application/problem+json``); bad input gets a
4xx, never a 500.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from toolweave.center._model import (
    MAX_DEPTH,
    BreakerSettings,
    CenterError,
    ChangeEvent,
    Status,
    nesting,
)

if TYPE_CHECKING:
    from toolweave.center._center import Center

__all__ = ["MAX_BODY", "admin_app", "check_exposure", "parse_tokens", "serve_admin"]

logger = logging.getLogger("toolweave")

MAX_BODY = 1_000_000
"""Bytes a request body may have."""

Handler = Callable[[Request], Awaitable[Response]]


class Problem(Exception):
    """An RFC 9457 problem: the request cannot be served as sent."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail


def _problem_response(status: int, title: str, detail: str, instance: str) -> JSONResponse:
    return JSONResponse(
        {"type": "about:blank", "title": title, "status": status, "detail": detail,
         "instance": instance},
        status_code=status,
        media_type="application/problem+json",
    )  # fmt: skip


_PROBLEMS: dict[str, tuple[int, str]] = {
    "invalid": (400, "Bad request"),
    "not_found": (404, "Not found"),
    "conflict": (409, "Conflict"),
    "unavailable": (503, "Center store unavailable"),
}


def _center_problem(exc: CenterError) -> Problem:
    status, title = _PROBLEMS[exc.problem]
    return Problem(status, title, str(exc))


def parse_tokens(items: list[str] | tuple[str, ...] | str | None) -> dict[str, str]:
    """Tokens as ``name=secret`` items (a list, or one comma-separated string, as in the
    environment variable ``TOOLWEAVE_ADMIN_TOKENS``): name → secret.

    Raises:
        CenterError: An item is not ``name=secret``, a secret is shorter than 16, or
            two tokens have the same name (one secret would silently stop working).
    """
    if not items:
        return {}
    if isinstance(items, str):
        items = [part for part in items.split(",") if part.strip()]
    tokens: dict[str, str] = {}
    for item in items:
        name, sep, secret = item.strip().partition("=")
        if not sep or not name or not secret:
            raise CenterError(f"a token is name=secret, not {item.strip()[:20]!r}...")
        if len(secret) < 16:
            raise CenterError(f"the secret of token {name!r} is too short (16 characters at least)")
        if name in tokens:
            raise CenterError(f"two tokens are named {name!r}: give each token its own name")
        tokens[name] = secret
    return tokens


def check_exposure(host: str, tokens: Mapping[str, str]) -> None:
    """Refuse to serve on an address other machines can reach without a token.

    Raises:
        CenterError: ``host`` is not a loopback address and no token is set.
    """
    if tokens:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise CenterError(
            f"refusing to serve the admin API on {host} without a token: set one with "
            "--token NAME=SECRET (or TOOLWEAVE_ADMIN_TOKENS), or bind 127.0.0.1"
        )


_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _loopback_host(host: str) -> bool:
    """Whether a ``Host`` header names this machine's loopback interface: a loopback
    name, or a loopback address (IPv6 in brackets), with or without a port. Names that
    merely start with ``127.`` (``127.attacker.example``) are not."""
    host = host.strip().lower()
    if host.startswith("["):
        name, sep, rest = host[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return False
        port = rest[1:]
    else:
        name, _, port = host.partition(":") if host.count(":") == 1 else (host, "", "")
    if port and not (port.isascii() and port.isdigit()):
        return False
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _same_site(request: Request, *, open_: bool) -> None:
    """Refuse what a web page in the operator's browser could send or read: writes from
    another origin, writes whose body is not declared JSON (a form or ``text/plain``
    needs no preflight), and, on a server without tokens, a ``Host`` that is not a
    loopback name (a DNS-rebinding page)."""
    host = request.headers.get("host", "")
    if open_ and not _loopback_host(host):
        raise Problem(403, "Forbidden", "without a token this API answers loopback clients only")
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    origin = request.headers.get("origin")
    if origin is not None and (origin == "null" or origin.split("://", 1)[-1] != host):
        raise Problem(403, "Forbidden", "a request from another site is refused")
    if request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers:
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise Problem(415, "Unsupported media type", "send the body as application/json")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """The number ``text`` spells, refused (``ValueError``) when no float holds it (NaN,
    infinities, ``1e999``)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:30]} is out of range")
    return value


async def _body(request: Request) -> dict[str, Any]:
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise Problem(413, "Request too large", f"bodies are at most {MAX_BODY} bytes")
    if not raw.strip():
        return {}
    too_deep = False
    try:
        data = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Problem(400, "Malformed JSON", f"the body is not JSON: {exc}") from None
    except RecursionError:
        too_deep = True
    if too_deep or nesting(data) > MAX_DEPTH:
        raise Problem(
            400, "Malformed JSON", f"the body nests deeper than {MAX_DEPTH} lists or objects"
        )
    if not isinstance(data, dict):
        raise Problem(422, "Unprocessable body", "the body must be a JSON object")
    return data


def _field(
    data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], *, required: bool = True
) -> Any:
    value = data.get(name)
    if value is None:
        if required:
            raise Problem(422, "Missing field", f"the body needs {name!r}")
        return None
    if not isinstance(value, kind) or (
        isinstance(value, bool) and kind in (int, float, (int, float))
    ):
        expected = (
            kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        )
        raise Problem(422, "Invalid field", f"{name!r} must be {expected}")
    return value


def _strings(value: Any, name: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Problem(422, "Invalid field", f"{name!r} must be a list of strings or null")
    return value


def _number(query: Mapping[str, str], name: str, kind: Callable[[str], Any]) -> Any:
    raw = query.get(name)
    if raw is None:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise Problem(400, "Bad query", f"{name!r} must be a number, not {raw[:30]!r}") from None


def admin_app(
    center: Center,
    *,
    tokens: Mapping[str, str] | None = None,
    dashboard: bool = True,
    heartbeat: float = 15.0,
) -> Starlette:
    """The admin API (and the dashboard at ``/``) over ``center``.

    Args:
        center: The center.
        tokens: name → secret. With tokens, every ``/api`` request needs
            ``Authorization: Bearer <secret>`` (the feed also takes ``?token=``, as a
            browser's ``EventSource`` cannot set headers) and every change is audited
            with the token's name; without, changes are audited as ``admin-api``.
        dashboard: Serve the web dashboard at ``/``.
        heartbeat: Seconds between keep-alive comments on the change feed.
    """
    secrets = dict(tokens or {})

    def actor_of(request: Request) -> str:
        if not secrets:
            return "admin-api"
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given:
            given = request.query_params.get("token", "") if request.url.path == "/api/feed" else ""
        for name, secret in secrets.items():
            if given and hmac.compare_digest(given.encode(), secret.encode()):
                return name
        raise Problem(401, "Unauthorized", "send Authorization: Bearer <token>")

    def endpoint(fn: Callable[[Request, str], Awaitable[Any]]) -> Handler:
        async def handle(request: Request) -> Response:
            try:
                _same_site(request, open_=not secrets)
                actor = actor_of(request)
                result = await fn(request, actor)
            except Problem as p:
                return _problem_response(p.status, p.title, p.detail, request.url.path)
            except CenterError as exc:
                problem = _center_problem(exc)
                return _problem_response(
                    problem.status, problem.title, problem.detail, request.url.path
                )
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        return handle

    async def blocking(fn: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(fn)

    # -- reads ----------------------------------------------------------------------------

    async def health(request: Request, actor: str) -> Any:
        return center.health().to_dict()

    async def tools(request: Request, actor: str) -> Any:
        return [state.to_dict() for state in center.tools()]

    async def tool(request: Request, actor: str) -> Any:
        return center.tool(request.path_params["name"]).to_dict()

    async def breakers(request: Request, actor: str) -> Any:
        return center.breakers()

    async def mcp_servers(request: Request, actor: str) -> Any:
        return center.mcp_servers()

    async def audit(request: Request, actor: str) -> Any:
        q = request.query_params
        limit = _number(q, "limit", int)
        entries = await blocking(
            lambda: center.audit(
                type=q.get("type"),
                session=q.get("session"),
                tool=q.get("tool"),
                outcome=q.get("outcome"),
                since=_number(q, "since", _finite),
                until=_number(q, "until", _finite),
                limit=100 if limit is None else max(0, min(limit, 10_000)),
            )
        )
        return [entry.to_dict() for entry in entries]

    # -- lifecycle ------------------------------------------------------------------------

    def changed(done: Any) -> dict[str, Any]:
        return {"changed": bool(done), "version": center.version}

    async def set_status(request: Request, actor: str) -> Any:
        data = await _body(request)
        reason = _field(data, "reason", str, required=False) or ""
        action = request.path_params["action"]
        statuses = {"enable": Status.ENABLED, "disable": Status.DISABLED,
                    "quarantine": Status.QUARANTINED, "offline": Status.OFFLINE}  # fmt: skip
        if action not in statuses:
            raise Problem(404, "Not found", f"no operation {action!r}")
        scope = request.path_params["scope"]
        target = request.path_params["target"]
        where = {"tools": "name", "groups": "group", "sources": "source"}.get(scope)
        if where is None:
            raise Problem(404, "Not found", f"no collection {scope!r}")
        done = await blocking(
            lambda: center.set_status(
                **{where: target}, status=statuses[action], actor=actor, reason=reason
            )
        )
        return changed(done)

    async def pin(request: Request, actor: str) -> Any:
        data = await _body(request)
        name = request.path_params["name"]
        version = _field(data, "version", str)
        cohort = _field(data, "cohort", str, required=False)
        reason = _field(data, "reason", str, required=False) or ""
        return changed(
            await blocking(
                lambda: center.pin(name, version, cohort=cohort, actor=actor, reason=reason)
            )
        )

    async def rollback(request: Request, actor: str) -> Any:
        data = await _body(request)
        name = request.path_params["name"]
        cohort = _field(data, "cohort", str, required=False)
        reason = _field(data, "reason", str, required=False) or ""
        now = await blocking(
            lambda: center.rollback(name, cohort=cohort, actor=actor, reason=reason)
        )
        return {"pinned": now, "version": center.version}

    async def rollout(request: Request, actor: str) -> Any:
        name = request.path_params["name"]
        if request.method == "DELETE":
            return changed(await blocking(lambda: center.abort_rollout(name, actor=actor)))
        data = await _body(request)
        version = _field(data, "version", str)
        percent = _field(data, "percent", (int, float))
        reason = _field(data, "reason", str, required=False) or ""
        return changed(
            await blocking(
                lambda: center.rollout(name, version, percent, actor=actor, reason=reason)
            )
        )

    async def roles(request: Request, actor: str) -> Any:
        data = await _body(request)
        if "roles" not in data:
            raise Problem(422, "Missing field", "the body needs 'roles' (a list, or null)")
        wanted = _strings(data["roles"], "roles")
        name = request.path_params["name"]
        reason = _field(data, "reason", str, required=False) or ""
        return changed(
            await blocking(lambda: center.set_roles(name, wanted, actor=actor, reason=reason))
        )

    async def groups(request: Request, actor: str) -> Any:
        data = await _body(request)
        wanted = _strings(data.get("groups"), "groups")
        if wanted is None:
            raise Problem(422, "Missing field", "the body needs 'groups' (a list)")
        name = request.path_params["name"]
        return changed(await blocking(lambda: center.set_groups(name, wanted, actor=actor)))

    async def breaker(request: Request, actor: str) -> Any:
        target = request.path_params["target"]
        if request.method == "DELETE":
            return changed(
                await blocking(lambda: center.configure_breaker(target, None, actor=actor))
            )
        data = await _body(request)
        given = {
            name: _field(data, name, int if name == "failures" else (int, float), required=False)
            for name in ("failures", "window", "cooldown", "slow_ms")
        }
        try:
            settings = BreakerSettings(**{k: v for k, v in given.items() if v is not None})
        except CenterError as exc:
            raise Problem(422, "Invalid breaker settings", str(exc)) from None
        return changed(
            await blocking(lambda: center.configure_breaker(target, settings, actor=actor))
        )

    async def reset(request: Request, actor: str) -> Any:
        target = request.path_params["target"]
        return changed(await blocking(lambda: center.reset_breaker(target, actor=actor)))

    # -- push registration ---------------------------------------------------------------------

    async def push(request: Request, actor: str) -> Any:
        data = await _body(request)
        name = _field(data, "name", str)
        schema = _field(data, "input_schema", dict)
        endpoint = _field(data, "endpoint", dict)
        description = _field(data, "description", str)
        groups_ = _strings(data.get("groups"), "groups") or []
        roles_ = _strings(data.get("roles"), "roles")
        read_only = bool(_field(data, "read_only", bool, required=False))
        await blocking(
            lambda: center.push_tool(
                name, description=description, input_schema=schema, endpoint=endpoint,
                groups=groups_, roles=roles_, read_only=read_only, actor=actor,
            )
        )  # fmt: skip
        return JSONResponse(center.tool(name).to_dict(), status_code=201)

    async def remove(request: Request, actor: str) -> Any:
        name = request.path_params["name"]
        reason = request.query_params.get("reason", "")
        await blocking(lambda: center.unregister(name, actor=actor, reason=reason))
        return Response(status_code=204)

    async def mcp_server(request: Request, actor: str) -> Any:
        server_id = request.path_params["server"]
        if request.method == "DELETE":
            return changed(await blocking(lambda: center.remove_mcp_server(server_id, actor=actor)))
        data = await _body(request)
        config = _field(data, "config", dict)
        return changed(
            await blocking(lambda: center.push_mcp_server(server_id, config, actor=actor))
        )

    # -- the feed -----------------------------------------------------------------------------

    async def feed(request: Request, actor: str) -> Any:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ChangeEvent] = asyncio.Queue(maxsize=10_000)

        def deliver(event: ChangeEvent) -> None:
            def put() -> None:
                if queue.full():
                    return  # a reader this slow gets a resync instead
                queue.put_nowait(event)

            loop.call_soon_threadsafe(put)

        last = request.headers.get("last-event-id") or request.query_params.get("since") or None
        if last is not None and not (
            last.isascii() and last.isdigit() and len(last) <= 19 and int(last) < 2**63
        ):
            raise Problem(
                400,
                "Bad request",
                f"Last-Event-ID and 'since' are a version (a whole number below 2**63), "
                f"not {last[:30]!r}",
            )
        unsubscribe = center.subscribe(deliver)

        async def stream() -> AsyncIterator[str]:
            try:
                yield f"retry: 1000\n: toolweave center {center.version}\n\n"
                if last is not None:
                    for event in await blocking(lambda: center.changes_since(int(last))):
                        yield _sse(event)
                while True:
                    try:
                        event = await asyncio.wait_for(queue.get(), heartbeat)
                    except TimeoutError:
                        yield f": {time.time():.0f}\n\n"
                        continue
                    yield _sse(event)
            finally:
                unsubscribe()

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    def api(path: str, fn: Callable[[Request, str], Awaitable[Any]], methods: list[str]) -> Route:
        return Route(path, endpoint(fn), methods=methods)

    routes = [
        api("/api/health", health, ["GET"]),
        api("/api/tools", tools, ["GET"]),
        api("/api/tools", push, ["POST"]),
        api("/api/tools/{name}", tool, ["GET"]),
        api("/api/tools/{name}", remove, ["DELETE"]),
        api("/api/tools/{name}/pin", pin, ["POST"]),
        api("/api/tools/{name}/rollback", rollback, ["POST"]),
        api("/api/tools/{name}/rollout", rollout, ["POST", "DELETE"]),
        api("/api/tools/{name}/roles", roles, ["PUT"]),
        api("/api/tools/{name}/groups", groups, ["PUT"]),
        api("/api/breakers", breakers, ["GET"]),
        api("/api/breakers/{target}", breaker, ["PUT", "DELETE"]),
        api("/api/breakers/{target}/reset", reset, ["POST"]),
        api("/api/mcp-servers", mcp_servers, ["GET"]),
        api("/api/mcp-servers/{server}", mcp_server, ["PUT", "DELETE"]),
        api("/api/audit", audit, ["GET"]),
        api("/api/feed", feed, ["GET"]),
        # Last: it would take /api/breakers/{target}/reset for a status operation.
        api("/api/{scope}/{target}/{action}", set_status, ["POST"]),
    ]
    if dashboard:
        from toolweave.center._dashboard import dashboard_routes

        routes += dashboard_routes(center, actor_of, endpoint)

    async def http_problem(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        title = {404: "Not found", 405: "Method not allowed"}.get(status, "Error")
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        if status == 500:
            logger.exception("the admin API failed on %s", request.url.path, exc_info=exc)
        return _problem_response(status, title, str(detail), request.url.path)

    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: http_problem, Exception: http_problem},
    )


def _sse(event: ChangeEvent) -> str:
    return f"id: {event.version}\nevent: {event.kind}\ndata: {json.dumps(event.to_dict())}\n\n"


async def serve_admin(
    center: Center,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    tokens: Mapping[str, str] | None = None,
    dashboard: bool = True,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve :func:`admin_app` on ``host:port`` until cancelled (``port=0``: a free
    one; ``on_ready`` gets the base URL once it accepts connections).

    Raises:
        CenterError: ``host`` is reachable from other machines and no token is set.
    """
    import uvicorn

    tokens = dict(tokens or {})
    check_exposure(host, tokens)
    config = uvicorn.Config(
        admin_app(center, tokens=tokens, dashboard=dashboard),
        host=host,
        port=port,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
            await anyio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        if on_ready is not None:
            on_ready(f"http://{shown}:{bound[1]}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        try:
            await server.serve()
        finally:
            tg.cancel_scope.cancel()
            server.should_exit = True
            for listener in server.servers:  # cancelled mid-serve: uvicorn leaves them open
                listener.close()
