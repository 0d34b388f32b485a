"""Outbound HTTP that cannot be turned against the network it runs in.

A URL names a host; what matters is the address the connection goes to. So the guard
resolves the host itself, checks every address it gets against an
:class:`AddressPolicy`, and sends the request to an address it checked, with the name
kept in the ``Host`` header and, over TLS, in SNI (where the certificate is verified).
There is one look-up per hop, so a name that answers with a public address at the
check and a private one at the connection (DNS rebinding) has nothing to race. IP
literals are checked the same way, in every spelling a resolver accepts
(``2130706433``, ``0x7f.1``, ``[::ffff:127.0.0.1]``), and so is every redirect.

Layering: this module sits at the bottom of core (it imports only
:mod:`toolweave.errors`), so the registry center, packs and MCP code can all use it.
``httpx2`` (installed with the ``mcp`` extra) is imported when a request is made.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio

from toolweave.errors import ErrorKind, ToolError, UsageError, preview

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "AddressClass",
    "AddressPolicy",
    "Check",
    "GuardedResponse",
    "GuardedStream",
    "IPAddress",
    "Resolver",
    "address_class",
    "guarded_request",
    "guarded_stream",
    "header_problem",
    "literal_address",
    "resolve_checked",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
"""An IPv4 or IPv6 address."""

AddressClass = Literal[
    "public", "private", "loopback", "link_local", "unspecified", "multicast", "reserved"
]
"""What kind of network an address belongs to."""

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""``async (host, port) -> addresses``: how a host name becomes addresses (text).
Raises ``OSError`` when the name does not resolve."""

_PRIVATE = tuple(
    ipaddress.ip_network(net)
    for net in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",  # carrier-grade NAT (shared address space, RFC 6598)
        "fc00::/7",  # unique local
        "fec0::/10",  # site-local (deprecated, still routed by some)
        "64:ff9b:1::/48",  # local-use NAT64 (RFC 8215)
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # IPv4-translated (RFC 2765)
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # IPv4-compatible (deprecated)

_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_MANAGED = frozenset({"host", "content-length", "transfer-encoding", "connection", "upgrade"})
_DECIMAL = frozenset("0123456789")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdef")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Headers kept when a redirect leaves the origin; any other may carry credentials.
_CROSS_ORIGIN_SAFE = frozenset({"accept", "accept-language", "user-agent", "content-type"})


_ARTICLE = {
    "private": "a private",
    "loopback": "a loopback",
    "link_local": "a link-local",
    "unspecified": "an unspecified",
    "multicast": "a multicast",
    "reserved": "a reserved",
}
_SETTING = {
    "private": "allow_private",
    "loopback": "allow_loopback",
    "link_local": "allow_link_local",
}


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, translated, compatible, NAT64,
    6to4), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or ip in _TRANSLATED or (ip in _COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_class(ip: IPAddress) -> AddressClass:
    """The kind of network ``ip`` belongs to; an IPv6 address that carries an IPv4 one
    (``::ffff:127.0.0.1``, ``64:ff9b::a9fe:a9fe``, ``2002:7f00:1::``) is judged by it.

    Example:
        >>> address_class(ipaddress.ip_address("::ffff:10.0.0.1"))
        'private'
    """
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            return address_class(inner)
    if ip.is_unspecified or (ip.version == 4 and int(ip) >> 24 == 0):
        return "unspecified"  # 0.0.0.0/8 and ::; connecting to them reaches this machine
    if ip.is_multicast:
        return "multicast"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link_local"
    if any(ip.version == net.version and ip in net for net in _PRIVATE):
        return "private"
    if not ip.is_global:
        return "reserved"
    return "public"


def _normalised(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Which addresses a request may go to. Public addresses always may; unspecified,
    multicast and reserved ones never may.

    Attributes:
        allow_private: RFC 1918 networks, carrier-grade NAT (100.64.0.0/10), IPv6
            unique-local (fc00::/7) and site-local.
        allow_loopback: 127.0.0.0/8 and ::1 (this machine).
        allow_link_local: 169.254.0.0/16 (cloud metadata services) and fe80::/10.
        allowed_hosts: Host names (or IP literals) reached whatever their addresses:
            an operator's exemption for one trusted internal service, narrower than
            allowing a whole class. Compared without case or a trailing dot.
    """

    allow_private: bool = False
    allow_loopback: bool = False
    allow_link_local: bool = False
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "allowed_hosts", frozenset(_normalised(h) for h in self.allowed_hosts)
        )

    def allows(self, kind: AddressClass) -> bool:
        """Whether addresses of class ``kind`` may be reached."""
        if kind == "public":
            return True
        if kind == "private":
            return self.allow_private
        if kind == "loopback":
            return self.allow_loopback
        if kind == "link_local":
            return self.allow_link_local
        return False

    def exempts(self, host: str) -> bool:
        """Whether ``host`` is one of :attr:`allowed_hosts`."""
        if not self.allowed_hosts:
            return False
        name = _normalised(host)
        if name in self.allowed_hosts:
            return True
        literal = _ipv4_literal(name) if ":" not in name else None
        return literal is not None and str(literal) in self.allowed_hosts


def _ipv4_part(text: str) -> int | None:
    """One part of an IPv4 literal as ``inet_aton`` reads it (decimal, ``0x`` hex,
    ``0`` octal), or ``None`` when it is not a number."""
    lowered = text.lower()
    if lowered.startswith("0x"):
        digits = lowered[2:]
        return int(digits or "0", 16) if set(digits) <= _HEX else None
    if not set(lowered) <= _DECIMAL:
        return None
    if len(lowered) > 1 and lowered.startswith("0"):
        return int(lowered[1:], 8) if set(lowered) <= _OCTAL else None
    return int(lowered, 10)


def _ipv4_literal(host: str) -> ipaddress.IPv4Address | None:
    """``host`` as an IPv4 address in any of the forms a resolver accepts
    (``127.0.0.1``, ``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``0177.0.0.1``), or
    ``None`` when it is a name.

    Raises:
        ValueError: Every part is a number but together they are no address.
    """
    parts = host.split(".")
    if len(parts) > 4 or any(not p for p in parts):
        return None
    numbers = [_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    *head, last = values
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        raise ValueError(f"{host!r} is not a valid IPv4 address")
    value = last
    for position, n in enumerate(head):
        value |= n << (8 * (3 - position))
    return ipaddress.IPv4Address(value)


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` spells, or ``None`` when it is a name to resolve.

    Accepts bracketed and bare IPv6 and every IPv4 spelling ``inet_aton`` accepts, so
    ``2130706433``, ``0x7f.1`` and ``127.1`` are all ``127.0.0.1``.

    Raises:
        ToolError: ``invalid_params`` for an IPv6 zone id or a numeric host that is no
            address (``256.1.1.1``).
    """
    text = host.strip()
    if text.startswith("[") or ":" in text:
        inner = text.strip("[]")
        if "%" in inner:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"IPv6 zone identifiers are not supported ({preview(host)!r})",
            )
        try:
            return ipaddress.IPv6Address(inner)
        except ValueError:
            raise ToolError(
                ErrorKind.INVALID_PARAMS, f"{preview(host)!r} is not a valid IPv6 address"
            ) from None
    try:
        return _ipv4_literal(text.rstrip("."))
    except ValueError as exc:
        raise ToolError(ErrorKind.INVALID_PARAMS, str(exc)) from None


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses of ``host`` from the system's resolver (``getaddrinfo`` off the
    event loop), in its order, without repeats.

    Raises:
        OSError: The name does not resolve.
    """
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _refused(host: str, kind: AddressClass, literal: bool) -> ToolError:
    verb = "is" if literal else "resolves to"
    setting = _SETTING.get(kind)
    if setting is not None:
        hint = f"only public addresses are reachable unless the operator sets {setting}"
    else:
        hint = "addresses of this kind are never reachable"
    return ToolError(
        ErrorKind.PERMISSION_DENIED,
        f"refused to connect to {preview(host)!r}: it {verb} {_ARTICLE[kind]} address; {hint}",
        data={"host": host, "address_class": kind},
    )


async def resolve_checked(
    host: str, port: int, policy: AddressPolicy, *, resolver: Resolver | None = None
) -> list[IPAddress]:
    """The addresses of ``host``, once every one of them passed ``policy``.

    Every address must pass, not only the first: a name that also resolves to a
    private address is refused rather than raced. An IP literal is checked without a
    look-up. Messages name the host and the class of address, never the address.

    Args:
        host: A host name (IDNA-encoded) or an IP literal in any spelling.
        port: The port to resolve for.
        policy: What may be reached.
        resolver: Replaces the system's resolver (tests, fixed host tables).

    Raises:
        ToolError: ``permission_denied`` (an address the policy refuses),
            ``unavailable`` (the name does not resolve), ``invalid_params`` (a
            malformed literal).
    """
    literal = literal_address(host)
    if literal is not None:
        found: list[IPAddress] = [literal]
    else:
        try:
            texts = await (resolver or system_resolver)(host, port)
            found = list(dict.fromkeys(ipaddress.ip_address(t.split("%", 1)[0]) for t in texts))
        except (OSError, ValueError) as exc:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"could not resolve the host {preview(host)!r}",
                data={"host": host, "detail": str(exc)},
            ) from None
        if not found:
            raise ToolError(ErrorKind.UNAVAILABLE, f"the host {preview(host)!r} has no address")
    if policy.exempts(host):
        return found
    for ip in found:
        kind = address_class(ip)
        if not policy.allows(kind):
            raise _refused(host, kind, literal is not None)
    return found


def header_problem(name: object, value: object) -> str | None:
    """Why ``name: value`` cannot be sent as a request header, or ``None``."""
    if not isinstance(name, str) or not isinstance(value, str):
        return "header names and values must be strings"
    if not name or any(c not in _TOKEN for c in name):
        return f"{preview(name, 60)!r} is not a valid header name"
    if any(c in value for c in "\r\n\0"):
        return f"the value of header {name!r} contains a line break or NUL"
    if name.lower() in _MANAGED:
        return f"header {name!r} is set by the guard itself"
    return None


def _content_type(headers: Mapping[str, str]) -> tuple[str, str | None]:
    """``("text/html", "UTF-8")`` from ``Text/HTML; charset="UTF-8"``: the media type
    (``""`` when none is sent) and the charset, if one is named."""
    value = headers.get("content-type", "")
    media, *params = value.split(";")
    charset = None
    for param in params:
        key, _, given = param.partition("=")
        if key.strip().lower() == "charset" and given.strip().strip('"'):
            charset = given.strip().strip('"')
    return media.strip().lower(), charset


@dataclass(frozen=True, slots=True)
class GuardedResponse:
    """What a guarded request got back, its body read in full.

    Attributes:
        status: The HTTP status of the last hop.
        headers: Its headers (case-insensitive look-up).
        content: Its body, decompressed, at most ``max_bytes`` long.
        url: The URL it came from, after redirects, with the host name (not the
            address) and without credentials.
    """

    status: int
    headers: Mapping[str, str]
    content: bytes
    url: str

    @property
    def media_type(self) -> str:
        """``application/json`` from ``Application/JSON; charset=utf-8`` (``""``: none)."""
        return _content_type(self.headers)[0]

    def text(self) -> str:
        """The body as text, in the charset the response names (UTF-8 otherwise);
        undecodable bytes are replaced."""
        charset = _content_type(self.headers)[1] or "utf-8"
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class GuardedStream:
    """The last hop of a guarded request, its body not read yet (see
    :func:`guarded_stream`): the caller looks at the status and the headers first, then
    reads as much of the body as it wants.

    Attributes:
        status: The HTTP status.
        headers: The headers (case-insensitive look-up).
        url: The URL after redirects, with the host name (not the address) and without
            credentials.
        redirects: Every URL redirected from, in order (without credentials).
    """

    status: int
    headers: Mapping[str, str]
    url: str
    redirects: tuple[str, ...]
    _response: Any = field(repr=False)
    _host: str = field(repr=False)

    @property
    def media_type(self) -> str:
        """``text/html`` from ``Text/HTML; charset=utf-8`` (``""`` when none is sent)."""
        return _content_type(self.headers)[0]

    @property
    def charset(self) -> str | None:
        """The charset ``Content-Type`` names, if any."""
        return _content_type(self.headers)[1]

    async def read(self, max_bytes: int) -> bytes:
        """The whole body (decompressed), or ``execution_error`` as soon as it passes
        ``max_bytes``; a declared ``Content-Length`` over it fails before reading."""
        too_large = ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"the response from {preview(self._host)!r} is larger than {max_bytes} bytes",
            data={"host": self._host, "max_bytes": max_bytes},
        )
        declared = self.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise too_large
        body, cut = await self.read_at_most(max_bytes)
        if cut:
            raise too_large
        return body

    async def read_at_most(self, limit: int) -> tuple[bytes, bool]:
        """At most ``limit`` bytes of the body (decompressed), and whether there was
        more; the rest is never read."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in self._response.aiter_bytes():
            room = limit - size
            if len(chunk) > room:
                chunks.append(chunk[:room])
                return b"".join(chunks), True
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), False


Check = Callable[[str, int], Awaitable[Sequence[IPAddress | str]]]
"""``async (host, port) -> addresses``: the addresses of ``host`` once every one of them
passed a check, or a :class:`ToolError` (how a pack whose params describe what may be
reached in its own terms plugs into :func:`guarded_stream`)."""


def _httpx() -> Any:
    try:
        import httpx2
    except ImportError:
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            "outbound HTTP needs the httpx2 package: pip install 'toolweave[mcp]'",
        ) from None
    return httpx2


def _target(httpx: Any, url: object, hop: bool) -> httpx2.URL:
    """``url`` parsed, or the failure a bad URL means (``invalid_params`` at the
    start, ``execution_error`` when a server redirected to it)."""
    kind = ErrorKind.EXECUTION_ERROR if hop else ErrorKind.INVALID_PARAMS
    subject = "the server redirected to a URL that" if hop else "the URL"
    try:
        parsed: httpx2.URL = url if isinstance(url, httpx.URL) else httpx.URL(str(url))
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError(kind, f"{subject} is malformed ({exc})") from None
    if parsed.scheme not in _DEFAULT_PORTS:
        raise ToolError(
            kind, f"{subject} is not http or https ({preview(parsed.scheme, 20) or 'no scheme'})"
        )
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise ToolError(kind, f"{subject} names no host")
    if "%" in host and literal_address(host) is None:
        raise ToolError(kind, f"{subject} has an invalid host name ({preview(host, 100)!r})")
    return parsed


async def _send_pinned(
    client: httpx2.AsyncClient,
    method: str,
    url: httpx2.URL,
    payload: Any,
    headers: dict[str, str],
    check: Check,
    seconds: float,
) -> httpx2.Response:
    """Send one hop to a checked address of ``url``'s host; the next address is tried
    only when a connection cannot be opened."""
    httpx = _httpx()
    host = url.raw_host.decode("ascii")  # IDNA-encoded: what DNS, Host and SNI use
    port = url.port or _DEFAULT_PORTS[url.scheme]
    addresses = await check(host, port)
    literal = literal_address(host)
    name = str(literal) if literal is not None else host
    shown = f"[{name}]" if ":" in name else name
    sent = {**headers, "Host": shown if url.port is None else f"{shown}:{url.port}"}
    extensions = {"sni_hostname": host} if url.scheme == "https" and literal is None else {}
    failure: Exception | None = None
    for ip in addresses:
        # No cookie outlives a hop: the client files them under the address it was
        # sent to, not the name, so one would reach any name on that address. A
        # guarded exchange sends only the cookies its caller puts in the headers.
        client.cookies.clear()
        request = client.build_request(
            method,
            url.copy_with(host=str(ip)),
            json=payload,
            headers=sent,
            extensions=extensions,
            timeout=seconds,
        )
        try:
            response: httpx2.Response = await client.send(
                request, stream=True, follow_redirects=False
            )
        except httpx.ConnectError as exc:
            failure = exc
            continue
        finally:
            client.cookies.clear()
        return response
    if failure is None:
        raise ToolError(ErrorKind.UNAVAILABLE, f"the host {preview(host)!r} has no address")
    raise failure


def _origin(url: httpx2.URL) -> tuple[str, bytes, int]:
    return url.scheme, url.raw_host, url.port or _DEFAULT_PORTS[url.scheme]


def _public_url(url: httpx2.URL) -> str:
    return str(url.copy_with(userinfo=b""))


async def _follow(
    client: httpx2.AsyncClient,
    method: str,
    url: str,
    payload: Any,
    headers: dict[str, str],
    check: Check,
    limits: tuple[float, int],
) -> GuardedStream:
    """Every hop of the exchange, each one checked and pinned; the last one's response,
    its body unread (the caller closes it)."""
    httpx = _httpx()
    timeout, max_redirects = limits
    current = _target(httpx, url, hop=False)
    redirects: list[str] = []
    while True:
        host = current.raw_host.decode("ascii")
        response = await _send_pinned(client, method, current, payload, headers, check, timeout)
        location = response.headers.get("location")
        if response.status_code not in _REDIRECTS or not location:
            return GuardedStream(
                status=response.status_code,
                headers=response.headers,
                url=_public_url(current),
                redirects=tuple(redirects),
                _response=response,
                _host=host,
            )
        await response.aclose()
        if len(redirects) == max_redirects:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"{preview(host)!r} redirected more than {max_redirects} times",
                data={"host": host, "max_redirects": max_redirects},
            )
        try:
            joined = current.join(location)
        except (httpx.InvalidURL, ValueError) as exc:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR, f"the server redirected to an invalid URL ({exc})"
            ) from None
        following = _target(httpx, joined, hop=True)
        if response.status_code in (301, 302, 303) and method != "HEAD":
            method, payload = "GET", None
        if _origin(following) != _origin(current):
            headers = {k: v for k, v in headers.items() if k.lower() in _CROSS_ORIGIN_SAFE}
        redirects.append(_public_url(current))
        current = following


@asynccontextmanager
async def guarded_stream(
    method: str,
    url: str,
    *,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    policy: AddressPolicy | None = None,
    check: Check | None = None,
    timeout: float,  # noqa: ASYNC109 (the budget of the whole exchange, under fail_after)
    max_redirects: int = 3,
    client: httpx2.AsyncClient | None = None,
    resolver: Resolver | None = None,
) -> AsyncIterator[GuardedStream]:
    """Send one HTTP request that can reach only what ``policy`` (or ``check``) allows,
    and hold its last response open while the caller reads the body.

    The host is resolved and every address checked; the request goes to a checked
    address (the name travels in ``Host`` and, over TLS, in SNI, where the certificate
    is verified), so the name is never resolved a second time; when a connection to
    one address cannot be opened, the next checked one is tried. Redirects are followed
    by hand, each hop checked the same way: 307 and 308 keep the method and body;
    301, 302 and 303 become a GET without a body. Leaving the origin drops every header
    but ``Accept``, ``Accept-Language``, ``User-Agent`` and ``Content-Type``. No
    cookie is kept between hops (``client``'s jar is emptied before and after each
    one): only a ``Cookie`` the caller passes in ``headers`` is sent. Everything,
    look-ups and the reads in the ``async with`` block included, runs within
    ``timeout`` seconds; failures of the exchange become :class:`ToolError` there too.

    Example:
        ``async with guarded_stream("GET", url, policy=AddressPolicy(), timeout=10) as
        page:`` then ``if page.media_type == "text/html": body, cut = await
        page.read_at_most(1_000_000)``.

    Args:
        method: The HTTP method (``POST``).
        url: An ``http`` or ``https`` URL.
        json: Sent as the JSON body (``None``: no body).
        headers: Extra request headers (not ``Host``, ``Content-Length``, ...).
        policy: Which addresses may be reached (checked by :func:`resolve_checked`).
        check: Instead of ``policy``: the pack's own check (see :data:`Check`).
        timeout: Seconds for the whole exchange.
        max_redirects: Redirects followed before failing.
        client: A client to send with (its connection pool is keyed by address, so
            share one only among requests to hosts you trust alike; its own
            ``verify`` and default headers apply); by default a fresh one that ignores
            proxy settings of the environment.
        resolver: Replaces the system's resolver (with ``policy``).

    Raises:
        ToolError: ``invalid_params`` (not an http(s) URL, a bad header),
            ``permission_denied`` (an address the policy refuses, at any hop),
            ``timeout``, ``unavailable`` (cannot resolve or connect),
            ``execution_error`` (too many redirects, a body over what ``read`` allows,
            an undecodable body).
        UsageError: Neither ``policy`` nor ``check`` given, or both.
    """
    if (policy is None) == (check is None):
        raise UsageError("guarded_stream needs exactly one of policy and check")
    if check is None:
        assert policy is not None
        check = functools.partial(resolve_checked, policy=policy, resolver=resolver)
    httpx = _httpx()
    shown = _host_of(url)
    extra = dict(headers or {})
    for name, value in extra.items():
        problem = header_problem(name, value)
        if problem is not None:
            raise ToolError(ErrorKind.INVALID_PARAMS, problem)
    limits = (timeout, max(0, max_redirects))
    try:
        with anyio.fail_after(timeout):
            async with contextlib.AsyncExitStack() as stack:
                sender: httpx2.AsyncClient
                if client is not None:
                    sender = client
                else:
                    own = httpx.AsyncClient(follow_redirects=False, trust_env=False)
                    sender = await stack.enter_async_context(own)
                page = await _follow(sender, method.upper(), url, json, extra, check, limits)
                try:
                    yield page
                finally:
                    await page._response.aclose()
    except (TimeoutError, httpx.TimeoutException):
        raise ToolError(
            ErrorKind.TIMEOUT,
            f"the request to {shown} took longer than {timeout:g} s",
            data={"host": shown, "timeout": timeout},
        ) from None
    except httpx.InvalidURL as exc:
        raise ToolError(ErrorKind.INVALID_PARAMS, f"the URL is malformed ({exc})") from None
    except httpx.DecodingError:
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"the response from {shown} could not be decoded",
            data={"host": shown},
        ) from None
    except httpx.HTTPError as exc:
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            f"could not reach {shown}: {_failure(httpx, exc)}",
            data={"host": shown, "detail": f"{type(exc).__name__}: {exc}"},
        ) from None


async def guarded_request(
    method: str,
    url: str,
    *,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    policy: AddressPolicy,
    timeout: float,  # noqa: ASYNC109 (the budget of the whole exchange, under fail_after)
    max_bytes: int,
    max_redirects: int = 3,
    client: httpx2.AsyncClient | None = None,
    resolver: Resolver | None = None,
) -> GuardedResponse:
    """Send one HTTP request that can reach only what ``policy`` allows, and read its
    whole body: :func:`guarded_stream`, then :meth:`GuardedStream.read` (the body is
    streamed and abandoned past ``max_bytes``).

    Args:
        method: The HTTP method (``POST``).
        url: An ``http`` or ``https`` URL.
        json: Sent as the JSON body (``None``: no body).
        headers: Extra request headers (not ``Host``, ``Content-Length``, ...).
        policy: Which addresses may be reached.
        timeout: Seconds for the whole exchange.
        max_bytes: The most body bytes read (after decompression).
        max_redirects: Redirects followed before failing.
        client: A client to send with (see :func:`guarded_stream`).
        resolver: Replaces the system's resolver.

    Returns:
        The last hop's status, headers and body.

    Raises:
        ToolError: As :func:`guarded_stream`; ``execution_error`` for a body over
            ``max_bytes``.
    """
    async with guarded_stream(
        method,
        url,
        json=json,
        headers=headers,
        policy=policy,
        timeout=timeout,
        max_redirects=max_redirects,
        client=client,
        resolver=resolver,
    ) as page:
        content = await page.read(max_bytes)
        return GuardedResponse(page.status, page.headers, content, page.url)


def _failure(httpx: Any, exc: Exception) -> str:
    """What went wrong, in words that name no address (a certificate's complaint names
    the host as the URL spells it: the checked address is not the TLS name)."""
    if isinstance(exc, httpx.ConnectError):
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, ssl.SSLCertVerificationError):
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            return f"its certificate did not verify ({cause.verify_message})"
        return "the connection failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the server broke the HTTP protocol"
    if isinstance(exc, httpx.NetworkError):
        return "the connection broke"
    return type(exc).__name__


def _host_of(url: str) -> str:
    """The host of ``url`` for messages (``"the server"`` when there is none)."""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(str(url)).hostname
    except ValueError:
        host = None
    return repr(preview(host, 100)) if host else "the server"
