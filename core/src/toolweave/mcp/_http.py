"""The streamable-HTTP endpoint's own checks, in front of the SDK's transport.

A POST whose body is a JSON-RPC request with an ``id`` that is neither a string nor an
integer (null, a boolean, a fraction, an object, an array) reads to the SDK as a
notification: it answered ``202 Accepted`` and never ran it. Such a POST gets ``400``
with a JSON-RPC error (``-32600``, id null, the wording of the stdio transport) instead,
as the Streamable HTTP transport has a server answer a message it cannot accept.

The body is read within the SDK's own limit (``MAX_BODY``, passed to the SDK's app
too) and parsed once here; everything else, and every request that fails the SDK's
Host, Origin or Content-Type checks, goes to the SDK's app unchanged.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    RequestBodyLimitMiddleware,
    TransportSecurityMiddleware,
)
from starlette.requests import Request
from starlette.responses import Response

from toolweave.mcp._stdio import BAD_ID, INVALID_REQUEST, has_bad_id

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_BODY", "RefuseBadIds"]

MAX_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE
"""The largest request body the endpoint reads (the SDK's default, 4 MiB); a larger one
gets 413."""

_BAD_ID_BODY = json.dumps(
    {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": BAD_ID}},
    separators=(",", ":"),
).encode()


class RefuseBadIds:
    """ASGI middleware: ``400`` for a POST to ``path`` whose body is a request with an id
    that is not a string or an integer (see the module's docstring).

    Args:
        app: The app to serve everything else.
        path: The MCP endpoint's path.
        security: The SDK's Host and Origin settings of the endpoint; a POST they refuse
            is left to the SDK's answer (421, 403, 400).
        max_body: The largest body read (larger: the SDK's 413).
    """

    def __init__(
        self,
        app: ASGIApp,
        path: str,
        security: TransportSecuritySettings | None,
        max_body: int = MAX_BODY,
    ) -> None:
        self.app = app
        self.path = path
        self._security = TransportSecurityMiddleware(security)
        self._limited = RequestBodyLimitMiddleware(self._check, max_body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if await self._security.validate_request(Request(scope), is_post=True) is not None:
            await self.app(scope, receive, send)  # the SDK refuses it, as it always did
            return
        await self._limited(scope, receive, send)

    async def _check(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a bad id here; hand the body (read whole, within the limit) on."""
        first = await receive()
        if first["type"] == "http.request" and not first.get("more_body", False):
            try:
                data = json.loads(first.get("body", b""))
            except (ValueError, RecursionError):  # the SDK answers what is not JSON
                data = None
            if has_bad_id(data):
                response = Response(_BAD_ID_BODY, status_code=400, media_type="application/json")
                await response(scope, receive, send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await self.app(scope, replay, send)
