"""One guarded GET on toolweave's outbound guard (:func:`toolweave.netguard.guarded_stream`:
redirects followed by hand, each hop's address checked by this pack's policy and
pinned), the body capped in size and time, binary types refused before their body is
read."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from toolweave import ErrorKind, ToolError, preview
from toolweave.netguard import guarded_stream

from toolweave_web._guard import AddressPolicy, Resolver, checked_addresses

__all__ = ["FetchRules", "Fetched", "HttpLimits", "fetch"]

_STATUS_KINDS = {
    401: ErrorKind.UNAUTHORIZED,
    403: ErrorKind.PERMISSION_DENIED,
    404: ErrorKind.NOT_FOUND,
    410: ErrorKind.NOT_FOUND,
    429: ErrorKind.RATE_LIMITED,
}


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What one fetch may cost.

    Attributes:
        max_redirects: Redirects followed before giving up.
        max_bytes: Body bytes read (after decompression); the rest is left unread.
        timeout: Seconds for the whole fetch, every hop and the body included.
        user_agent: The ``User-Agent`` header.
        accept: The ``Accept`` header.
        ca_file: A PEM file of certificate authorities trusted besides the system's.
    """

    max_redirects: int = 5
    max_bytes: int = 5_000_000
    timeout: float = 30.0
    user_agent: str = "toolweave-web/0.1"
    accept: str = "text/html, application/xhtml+xml, text/*;q=0.9, application/json;q=0.8"
    ca_file: str | None = None


@dataclass(frozen=True, slots=True)
class FetchRules:
    """How one fetch is done.

    Attributes:
        policy: Which addresses may be reached.
        resolver: How host names become addresses (resolved once per hop).
        limits: Redirects, size and time.
        accept_type: Given the media type (``""`` when the server sent none) and, in
            that case, the body's first bytes, returns why the type is refused, or
            ``None`` to read the body.
    """

    policy: AddressPolicy
    resolver: Resolver
    limits: HttpLimits
    accept_type: Callable[[str, bytes], str | None]


@dataclass(slots=True)
class Fetched:
    """What a fetch got.

    Attributes:
        url: The final URL, after redirects.
        status: Its HTTP status.
        media_type: Its content type without parameters, lower case (``""`` when unsent).
        charset: The charset its ``Content-Type`` names, if any.
        body: The body, at most ``max_bytes`` of it.
        truncated: Whether the body was longer than ``max_bytes``.
        redirects: Every URL redirected from, in order.
    """

    url: str
    status: int
    media_type: str
    charset: str | None
    body: bytes
    truncated: bool = False
    redirects: list[str] = field(default_factory=list)


def _status_error(fetched: Fetched) -> ToolError:
    """The failure an HTTP error status means, with the start of its body."""
    status = fetched.status
    kind = _STATUS_KINDS.get(status)
    if kind is None:
        kind = ErrorKind.UNAVAILABLE if status >= 500 else ErrorKind.EXECUTION_ERROR
    body = fetched.body[:300].decode(fetched.charset or "utf-8", errors="replace").strip()
    detail = f": {preview(body)}" if body else ""
    return ToolError(
        kind,
        f"{fetched.url} answered HTTP {status}{detail}",
        data={"url": fetched.url, "status": status},
    )


def _verify(ca_file: str | None) -> ssl.SSLContext | bool:
    """Certificate checks: the system's trust store, plus ``ca_file`` when given."""
    if ca_file is None:
        return True
    context = ssl.create_default_context(cafile=ca_file)
    context.load_default_certs()
    return context


def _refuse(why: str | None, fetched: Fetched) -> None:
    """Fail with ``why`` (a refused content type), unless it is ``None``."""
    if why is not None:
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            why,
            data={"url": fetched.url, "content_type": fetched.media_type},
        )


async def fetch(url: str, rules: FetchRules) -> Fetched:
    """GET ``url`` within ``rules.limits``, every hop's address checked against
    ``rules.policy`` (through :func:`toolweave.netguard.guarded_stream`: each hop is
    resolved once, checked, and sent to the checked address).

    Raises:
        ToolError: ``invalid_params`` (not an http URL), ``permission_denied`` (an
            address the policy refuses, at any hop), ``not_found`` (the name does not
            resolve, HTTP 404), ``timeout``, ``unavailable`` (cannot connect, HTTP 5xx),
            ``execution_error`` (too many redirects, a refused content type).
    """
    import httpx2

    limits = rules.limits
    check = functools.partial(checked_addresses, policy=rules.policy, resolver=rules.resolver)
    async with (
        httpx2.AsyncClient(
            verify=_verify(limits.ca_file),
            follow_redirects=False,
            trust_env=False,  # an environment proxy would resolve names itself
            timeout=limits.timeout,
            headers={"User-Agent": limits.user_agent, "Accept": limits.accept},
        ) as client,
        guarded_stream(
            "GET",
            url,
            check=check,
            timeout=limits.timeout,
            max_redirects=limits.max_redirects,
            client=client,
        ) as page,
    ):
        fetched = Fetched(
            url=page.url,
            status=page.status,
            media_type=page.media_type,
            charset=page.charset,
            body=b"",
            redirects=list(page.redirects),
        )
        if page.status >= 400:
            fetched.body, _ = await page.read_at_most(2_000)
            raise _status_error(fetched)
        if fetched.media_type:
            _refuse(rules.accept_type(fetched.media_type, b""), fetched)
            fetched.body, fetched.truncated = await page.read_at_most(limits.max_bytes)
        else:  # no declared type: judge the body itself
            fetched.body, fetched.truncated = await page.read_at_most(limits.max_bytes)
            _refuse(rules.accept_type("", fetched.body[:1_024]), fetched)
        return fetched
