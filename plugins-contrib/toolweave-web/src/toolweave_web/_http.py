"""One guarded GET: redirects followed by hand, each hop's address checked and pinned,
the body capped in size and time, binary types refused before their body is read."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
from toolweave import ErrorKind, ToolError, preview

from toolweave_web._guard import AddressPolicy, Resolver, checked_addresses

if TYPE_CHECKING:
    import httpx2

__all__ = ["FetchRules", "Fetched", "HttpLimits", "fetch", "media_type"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
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


def media_type(content_type: str | None) -> str:
    """``text/html`` from ``text/HTML; charset=utf-8``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


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


async def _pinned(
    url: httpx2.URL, policy: AddressPolicy, resolver: Resolver
) -> tuple[httpx2.URL, dict[str, str], dict[str, str]]:
    """The URL to send with its host replaced by a checked address, the ``Host``
    header that keeps the name, and the TLS name to verify (for ``https``)."""
    if url.scheme not in _DEFAULT_PORTS:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"only http and https URLs can be fetched, not {preview(str(url))!r}",
        )
    host = url.raw_host.decode("ascii")  # IDNA-encoded: what DNS, Host and SNI use
    if not host:
        raise ToolError(ErrorKind.INVALID_PARAMS, f"{preview(str(url))!r} names no host")
    port = url.port or _DEFAULT_PORTS[url.scheme]
    address = (await checked_addresses(host, port, policy, resolver))[0]
    name = f"[{host}]" if ":" in host else host
    header = name if url.port is None else f"{name}:{url.port}"
    extensions = {"sni_hostname": host} if url.scheme == "https" else {}
    return url.copy_with(host=address), {"Host": header}, extensions


async def _read(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the body, and whether there was more."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


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


async def _fetch(client: httpx2.AsyncClient, url: str, rules: FetchRules) -> Fetched:
    import httpx2

    try:
        current = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError) as exc:
        raise ToolError(ErrorKind.INVALID_PARAMS, f"not a URL: {preview(url)!r} ({exc})") from None
    redirects: list[str] = []
    while True:
        target, headers, extensions = await _pinned(current, rules.policy, rules.resolver)
        request = client.build_request("GET", target, headers=headers, extensions=extensions)
        response = await client.send(request, stream=True)
        try:
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                if len(redirects) >= rules.limits.max_redirects:
                    raise ToolError(
                        ErrorKind.EXECUTION_ERROR,
                        f"more than {rules.limits.max_redirects} redirects, starting at "
                        f"{preview(url)}; the last one pointed to {preview(location)}",
                    )
                redirects.append(str(current))
                current = current.join(location)
                continue
            content_type = response.headers.get("content-type")
            fetched = Fetched(
                url=str(current),
                status=response.status_code,
                media_type=media_type(content_type),
                charset=response.charset_encoding,
                body=b"",
                redirects=redirects,
            )
            if response.status_code >= 400:
                fetched.body, _ = await _read(response, 2_000)
                raise _status_error(fetched)
            if fetched.media_type:
                _refuse(rules.accept_type(fetched.media_type, b""), fetched)
                fetched.body, fetched.truncated = await _read(response, rules.limits.max_bytes)
            else:  # no declared type: judge the body itself
                fetched.body, fetched.truncated = await _read(response, rules.limits.max_bytes)
                _refuse(rules.accept_type("", fetched.body[:1_024]), fetched)
            return fetched
        finally:
            await response.aclose()


async def fetch(url: str, rules: FetchRules) -> Fetched:
    """GET ``url`` within ``rules.limits``, every hop's address checked against
    ``rules.policy``.

    Raises:
        ToolError: ``invalid_params`` (not an http URL), ``permission_denied`` (an
            address the policy refuses, at any hop), ``not_found`` (the name does not
            resolve, HTTP 404), ``timeout``, ``unavailable`` (cannot connect, HTTP 5xx),
            ``execution_error`` (too many redirects, a refused content type).
    """
    import httpx2

    limits = rules.limits
    try:
        with anyio.fail_after(limits.timeout):
            async with httpx2.AsyncClient(
                verify=_verify(limits.ca_file),
                follow_redirects=False,
                trust_env=False,  # an environment proxy would resolve names itself
                timeout=limits.timeout,
                headers={"User-Agent": limits.user_agent, "Accept": limits.accept},
            ) as client:
                return await _fetch(client, url, rules)
    except (TimeoutError, httpx2.TimeoutException):
        raise ToolError(
            ErrorKind.TIMEOUT, f"fetching {preview(url)} took longer than {limits.timeout:g} s"
        ) from None
    except httpx2.InvalidURL as exc:
        raise ToolError(ErrorKind.INVALID_PARAMS, f"not a URL: {preview(url)!r} ({exc})") from None
    except httpx2.HTTPError as exc:
        raise ToolError(
            ErrorKind.UNAVAILABLE, f"fetching {preview(url)} failed: {type(exc).__name__}: {exc}"
        ) from None
