"""The outbound HTTP guard: addresses are checked after resolution and at every hop,
the request goes to the checked address, and the exchange is bounded in size and time."""

from __future__ import annotations

import functools
import gzip
import ipaddress
import json
import socket
import ssl
import subprocess
import threading
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from toolweave import ErrorKind, ToolError, UsageError
from toolweave._netguard import (
    AddressPolicy,
    IPAddress,
    address_class,
    guarded_request,
    guarded_stream,
    literal_address,
    resolve_checked,
)

pytestmark = pytest.mark.anyio

NOTHING = AddressPolicy()
LOOPBACK = AddressPolicy(allow_loopback=True)


@dataclass
class Seen:
    """One request as the server saw it."""

    method: str
    path: str
    host: str
    body: bytes
    headers: dict[str, str]


@dataclass
class Server:
    """A running test server: where it listens and every request it got."""

    port: int
    stop: threading.Event
    seen: list[Seen] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b"\0" * 100_000_000, compresslevel=9)


def _handler(state: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def answer(self, status: int, body: bytes, length: bool = True, **headers: str) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            if length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def handle_any(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size) if size else b""
            host = self.headers.get("Host", "")
            state.seen.append(Seen(self.command, self.path, host, body, dict(self.headers)))
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/echo":
                seen = {"method": self.command, "host": host, "body": body.decode()}
                self.answer(200, json.dumps(seen).encode(), Content_Type="application/json")
            elif parts.path == "/redirect":
                code = int(query.get("code", "302"))
                self.answer(code, b"moved", Location=query["to"])
            elif parts.path.startswith("/loop/"):
                n = int(parts.path.rsplit("/", 1)[1])
                self.answer(302, b"", Location=f"/loop/{n + 1}")
            elif parts.path == "/big":
                n = int(query["n"])
                self.answer(200, b"x" * n, length=query.get("length") != "no")
            elif parts.path == "/slow":
                state.stop.wait(10)
                self.answer(200, b"late")
            elif parts.path == "/bomb":  # 100 MB of zeros, gzip-compressed to ~100 KB
                self.answer(200, _bomb(), Content_Encoding="gzip", Content_Type="text/plain")
            elif parts.path == "/stall":  # the headers and half the body, then nothing
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=latin-1")
                self.send_header("Content-Length", "10")
                self.end_headers()
                self.wfile.write(b"half!")
                self.wfile.flush()
                state.stop.wait(10)
            else:
                self.answer(404, b"no such page")

        do_GET = do_POST = do_HEAD = do_PUT = handle_any

    return Handler


def _serve(state: Server, wrap: ssl.SSLContext | None = None) -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    if wrap is not None:
        httpd.socket = wrap.wrap_socket(httpd.socket, server_side=True)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def server() -> Iterator[Server]:
    """A threading HTTP server on 127.0.0.1, stopped after the test."""
    yield from _serve(Server(0, threading.Event()))


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """The same server over TLS with a self-signed certificate for ``secure.test``
    only; yields it and the certificate's file."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=secure.test",
            "-addext", "subjectAltName=DNS:secure.test",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    for state in _serve(Server(0, threading.Event()), context):
        yield state, cert


class Table:
    """A resolver answering from a fixed table, counting every question."""

    def __init__(self, hosts: dict[str, list[str]]) -> None:
        self.hosts = hosts
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        if host not in self.hosts:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.hosts[host]


class Flip:
    """A rebinding name server: the first answer is one address, every later one another."""

    def __init__(self, first: str, later: str) -> None:
        self.first, self.later, self.asked = first, later, 0

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked += 1
        return [self.first if self.asked == 1 else self.later]


async def refused(url: str, policy: AddressPolicy = NOTHING, **kw: Any) -> ToolError:
    """The error a guarded GET of ``url`` fails with."""
    with pytest.raises(ToolError) as caught:
        await guarded_request("GET", url, policy=policy, timeout=5, max_bytes=10_000, **kw)
    return caught.value


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.20.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("fd00::1", "private"),
        ("fec0::1", "private"),
        ("169.254.169.254", "link_local"),
        ("fe80::1", "link_local"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("192.0.2.1", "reserved"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("2001:db8::1", "reserved"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:0:a9fe:a9fe", "link_local"),
        ("::7f00:1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "link_local"),
        ("2002:a00:1::", "private"),
        ("93.184.216.34", "public"),
        ("2606:4700::1111", "public"),
    ],
)
def test_address_classes(address: str, kind: str) -> None:
    """Every special range is recognised, IPv4 carried inside IPv6 included."""
    assert address_class(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("10.0x10.1", "10.16.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("example.com", None),
        ("1.2.3.example", None),
        ("0x-1.0.0.1", None),
        ("١٢٧.1", None),
    ],
)
def test_literals_in_every_spelling(host: str, address: str | None) -> None:
    """Every IPv4 spelling a resolver accepts is read as the address it means."""
    found = literal_address(host)
    assert (None if found is None else str(found)) == address


@pytest.mark.parametrize("host", ["256.0.0.1", "1.2.3.256", "0x100000000", "[fe80::1%eth0]"])
def test_malformed_literals_are_invalid(host: str) -> None:
    """A numeric host that is no address, or an IPv6 zone id, is a bad parameter."""
    with pytest.raises(ToolError) as caught:
        literal_address(host)
    assert caught.value.kind is ErrorKind.INVALID_PARAMS


async def test_loopback_is_refused_by_default(server: Server) -> None:
    """Without an allowance a server on 127.0.0.1 is out of reach, and nothing is sent."""
    error = await refused(server.url("/echo"))
    assert error.kind is ErrorKind.PERMISSION_DENIED
    assert "loopback address" in error.message
    assert "allow_loopback" in error.message
    assert server.seen == []


async def test_loopback_is_reached_when_allowed(server: Server) -> None:
    """With loopback allowed the request goes through; the Host header keeps the name."""
    response = await guarded_request(
        "GET", server.url("/echo"), policy=LOOPBACK, timeout=5, max_bytes=10_000
    )
    assert response.status == 200
    assert json.loads(response.content)["host"] == f"127.0.0.1:{server.port}"
    assert response.url == server.url("/echo")


async def test_a_name_resolving_to_loopback_is_refused(server: Server) -> None:
    """``localhost`` is judged by the address the system resolves it to, and the message
    names the host and the class, not the address."""
    error = await refused(server.url("/echo", host="localhost"))
    assert error.kind is ErrorKind.PERMISSION_DENIED
    assert "'localhost'" in error.message
    assert "resolves to a loopback address" in error.message
    assert "127.0.0.1" not in error.message
    assert "::1" not in error.message
    assert server.seen == []


@pytest.mark.parametrize(
    "host", ["2130706433", "0x7f.1", "0x7f000001", "127.1", "[::ffff:127.0.0.1]", "[::1]"]
)
async def test_loopback_literals_in_any_spelling_are_refused(server: Server, host: str) -> None:
    """Decimal, hex, short and IPv4-mapped spellings of 127.0.0.1 are refused without a
    look-up and without reaching the server."""
    table = Table({})
    error = await refused(server.url("/echo", host=host), resolver=table)
    assert error.kind is ErrorKind.PERMISSION_DENIED
    assert "is a loopback address" in error.message
    assert table.asked == []
    assert server.seen == []


async def test_the_unspecified_address_is_never_reached(server: Server) -> None:
    """0.0.0.0 (which reaches this machine on Linux) is refused even with every class
    allowed."""
    everything = AddressPolicy(allow_private=True, allow_loopback=True, allow_link_local=True)
    for host in ("0.0.0.0", "0", "[::]"):
        error = await refused(server.url("/echo", host=host), everything)
        assert error.kind is ErrorKind.PERMISSION_DENIED
        assert "unspecified address" in error.message
        assert "never" in error.message
    assert server.seen == []


async def test_every_resolved_address_must_pass(server: Server) -> None:
    """A name with one public and one private address is refused, whichever comes first."""
    for answer in (["93.184.216.34", "10.0.0.1"], ["10.0.0.1", "93.184.216.34"]):
        table = Table({"mixed.test": answer})
        error = await refused(server.url("/echo", host="mixed.test"), resolver=table)
        assert error.kind is ErrorKind.PERMISSION_DENIED
        assert "private address" in error.message
        assert "10.0.0.1" not in error.message


async def test_the_request_goes_to_the_checked_address(server: Server) -> None:
    """DNS rebinding: the name is resolved once and the connection goes to that answer;
    a second look-up would have answered a private address. The system's resolver does
    not know ``rebind.test``, so reaching the server at all proves the address was
    pinned. The next request asks again, and is refused."""
    resolver = Flip("127.0.0.1", "10.0.0.1")
    url = server.url("/echo", host="rebind.test")
    response = await guarded_request(
        "GET", url, policy=LOOPBACK, timeout=5, max_bytes=10_000, resolver=resolver
    )
    assert json.loads(response.content)["host"] == f"rebind.test:{server.port}"
    assert resolver.asked == 1
    error = await refused(url, LOOPBACK, resolver=resolver)
    assert error.kind is ErrorKind.PERMISSION_DENIED
    assert "private address" in error.message
    assert len(server.seen) == 1


async def test_the_next_checked_address_is_tried_when_one_does_not_answer(
    server: Server,
) -> None:
    """When the first checked address refuses the connection, the next one is tried
    (never an unchecked one)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    table = Table({"two.test": ["127.0.0.2", "127.0.0.1"]})
    response = await guarded_request(
        "GET", server.url("/echo", host="two.test"), policy=LOOPBACK, timeout=5,
        max_bytes=10_000, resolver=table,
    )  # fmt: skip
    assert response.status == 200
    error = await refused(f"http://127.0.0.1:{port}/", LOOPBACK)
    assert error.kind is ErrorKind.UNAVAILABLE
    assert "could not reach '127.0.0.1'" in error.message


async def test_https_is_pinned_and_verifies_the_name(tls_server: tuple[Server, Path]) -> None:
    """Over TLS the request goes to the checked address while the certificate is
    verified against the URL's name (sent as SNI); reaching the same server by its
    address fails, since the certificate does not name it."""
    server, cert = tls_server
    table = Table({"secure.test": ["127.0.0.1"]})
    async with httpx2.AsyncClient(verify=ssl.create_default_context(cafile=cert)) as client:
        response = await guarded_request(
            "GET", server.url("/echo", host="secure.test", scheme="https"), policy=LOOPBACK,
            timeout=5, max_bytes=10_000, client=client, resolver=table,
        )  # fmt: skip
        assert json.loads(response.content)["host"] == f"secure.test:{server.port}"
        error = await refused(server.url("/echo", scheme="https"), LOOPBACK, client=client)
    assert error.kind is ErrorKind.UNAVAILABLE
    assert len(server.seen) == 1


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("http://10.0.0.1/admin", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://internal.test/", "private"),
        ("http://[fd00::1]/", "private"),
        ("http://127.0.0.1:{port}/echo", "loopback"),
        ("http://localhost:{port}/echo", "loopback"),
        ("http://2130706433:{port}/echo", "loopback"),
    ],
)
async def test_a_redirect_to_an_inside_address_is_refused_at_the_hop(
    server: Server, target: str, kind: str
) -> None:
    """The first hop is allowed (its name is an operator exemption); its redirect to a
    private, link-local or loopback address is refused before any connection."""
    table = Table(
        {"public.test": ["127.0.0.1"], "internal.test": ["192.168.1.10"], "localhost": ["::1"]}
    )
    policy = AddressPolicy(allowed_hosts=frozenset({"Public.Test"}))
    location = target.format(port=server.port)
    url = server.url(f"/redirect?to={location}", host="public.test")
    error = await refused(url, policy, resolver=table)
    assert error.kind is ErrorKind.PERMISSION_DENIED
    assert f"{kind} address" in error.message
    assert len(server.seen) == 1  # only the redirecting request reached a server


async def test_allowed_hosts_exempt_a_name_only(server: Server) -> None:
    """An allowed host is reached whatever it resolves to; other names are still
    checked."""
    table = Table({"api.internal": ["127.0.0.1"], "other.internal": ["127.0.0.1"]})
    policy = AddressPolicy(allowed_hosts=frozenset({"api.internal."}))
    response = await guarded_request(
        "GET", server.url("/echo", host="api.internal"), policy=policy, timeout=5,
        max_bytes=10_000, resolver=table,
    )  # fmt: skip
    assert response.status == 200
    error = await refused(server.url("/echo", host="other.internal"), policy, resolver=table)
    assert error.kind is ErrorKind.PERMISSION_DENIED


@pytest.mark.parametrize(
    ("code", "method", "body"),
    [
        (307, "POST", '{"city": "Oslo"}'),
        (308, "POST", '{"city": "Oslo"}'),
        (301, "GET", ""),
        (302, "GET", ""),
        (303, "GET", ""),
    ],
)
async def test_redirect_semantics(server: Server, code: int, method: str, body: str) -> None:
    """307 and 308 repeat the method and body; 301, 302 and 303 continue as a GET
    without a body."""
    response = await guarded_request(
        "POST", server.url(f"/redirect?code={code}&to=/echo"), json={"city": "Oslo"},
        policy=LOOPBACK, timeout=5, max_bytes=10_000,
    )  # fmt: skip
    seen = json.loads(response.content)
    assert (seen["method"], seen["body"].replace(" ", "")) == (method, body.replace(" ", ""))
    assert [s.method for s in server.seen] == ["POST", method]
    assert response.url == server.url("/echo")


async def test_credentials_are_not_carried_to_another_origin(server: Server) -> None:
    """Headers stay on a same-origin redirect; leaving the origin drops all but the
    harmless ones, so an API key is not handed to whoever the redirect names."""
    other = Table({"other.test": ["127.0.0.1"]})
    headers = {"Authorization": "Bearer secret", "X-Api-Key": "k", "Accept": "application/json"}
    url = server.url(f"/redirect?to=http://other.test:{server.port}/echo")
    await guarded_request(
        "GET", url, headers=headers, policy=LOOPBACK, timeout=5, max_bytes=10_000,
        resolver=other,
    )  # fmt: skip
    first, second = (s.headers for s in server.seen)
    assert first["Authorization"] == "Bearer secret"
    assert first["X-Api-Key"] == "k"
    assert "Authorization" not in second
    assert "X-Api-Key" not in second
    assert second["Accept"] == "application/json"


async def test_too_many_redirects(server: Server) -> None:
    """A redirect chain longer than ``max_redirects`` fails as execution_error."""
    with pytest.raises(ToolError) as caught:
        await guarded_request(
            "GET", server.url("/loop/0"), policy=LOOPBACK, timeout=5, max_bytes=10_000,
            max_redirects=2,
        )  # fmt: skip
    assert caught.value.kind is ErrorKind.EXECUTION_ERROR
    assert "redirected more than 2 times" in caught.value.message
    assert len(server.seen) == 3


@pytest.mark.parametrize("length", ["yes", "no"])
async def test_size_limit(server: Server, length: str) -> None:
    """A body at the limit is read; one past it fails, whether the server declared its
    length or not."""
    url = server.url(f"/big?n=1000&length={length}")
    response = await guarded_request("GET", url, policy=LOOPBACK, timeout=5, max_bytes=1000)
    assert response.content == b"x" * 1000
    url = server.url(f"/big?n=1001&length={length}")
    with pytest.raises(ToolError) as caught:
        await guarded_request("GET", url, policy=LOOPBACK, timeout=5, max_bytes=1000)
    assert caught.value.kind is ErrorKind.EXECUTION_ERROR
    assert "larger than 1000 bytes" in caught.value.message


async def test_timeout(server: Server) -> None:
    """A server that does not answer in time fails the request as timeout."""
    with pytest.raises(ToolError) as caught:
        await guarded_request(
            "GET", server.url("/slow"), policy=LOOPBACK, timeout=0.3, max_bytes=10_000
        )
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert "longer than 0.3 s" in caught.value.message


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "example.com/path", "http:///nohost", "http://exa mple.com/"]
)
async def test_bad_urls_are_invalid_params(url: str) -> None:
    """Only http and https URLs with a host are requested."""
    error = await refused(url, resolver=Table({}))
    assert error.kind is ErrorKind.INVALID_PARAMS


async def test_a_name_that_does_not_resolve_is_unavailable() -> None:
    """A look-up that fails is reported as unavailable."""
    error = await refused("http://nowhere.test/", resolver=Table({}))
    assert error.kind is ErrorKind.UNAVAILABLE
    assert "could not resolve the host 'nowhere.test'" in error.message


async def test_resolve_checked_returns_the_addresses() -> None:
    """The checked addresses come back in the resolver's order, without repeats."""
    table = Table({"pub.test": ["93.184.216.34", "2606:4700::1111", "93.184.216.34"]})
    found = await resolve_checked("pub.test", 443, AddressPolicy(), resolver=table)
    assert [str(a) for a in found] == ["93.184.216.34", "2606:4700::1111"]


@pytest.mark.parametrize(
    "headers", [{"Host": "evil.test"}, {"X-Bad": "a\r\nInjected: 1"}, {"bad name": "x"}]
)
async def test_headers_that_cannot_be_sent_are_refused(
    server: Server, headers: dict[str, str]
) -> None:
    """A Host override, a line break in a value or a bad name is refused before sending."""
    error = await refused(server.url("/echo"), LOOPBACK, headers=headers)
    assert error.kind is ErrorKind.INVALID_PARAMS
    assert server.seen == []


async def test_a_stream_shows_the_last_hop_before_its_body(server: Server) -> None:
    """``guarded_stream`` hands over the status, headers and redirects of the last hop;
    the caller reads as much of the body as it wants, and knows when it was cut."""
    url = server.url("/redirect?to=/big%3Fn%3D5000")
    async with guarded_stream("GET", url, policy=LOOPBACK, timeout=5) as page:
        assert page.status == 200
        assert page.redirects == (url,)
        assert page.url == server.url("/big?n=5000")
        assert page.headers["content-length"] == "5000"
        body, cut = await page.read_at_most(100)
    assert (body, cut) == (b"x" * 100, True)
    async with guarded_stream("GET", server.url("/big?n=50"), policy=LOOPBACK, timeout=5) as page:
        assert await page.read_at_most(100) == (b"x" * 50, False)


async def test_a_check_of_its_own_replaces_the_policy(server: Server) -> None:
    """A pack's own check decides every hop (here: only ``app.test``, pinned to
    127.0.0.1); its refusal stops the request before anything is sent."""
    asked: list[tuple[str, int]] = []

    async def only_app(host: str, port: int) -> list[IPAddress | str]:
        asked.append((host, port))
        if host != "app.test":
            raise ToolError(ErrorKind.PERMISSION_DENIED, f"{host} is not app.test")
        return ["127.0.0.1"]

    url = server.url("/echo", host="app.test")
    async with guarded_stream("GET", url, check=only_app, timeout=5) as page:
        seen = json.loads(await page.read(10_000))
    assert seen["host"] == f"app.test:{server.port}"
    assert asked == [("app.test", server.port)]
    with pytest.raises(ToolError) as caught:
        async with guarded_stream("GET", server.url("/echo"), check=only_app, timeout=5):
            pass
    assert caught.value.kind is ErrorKind.PERMISSION_DENIED
    assert len(server.seen) == 1


@pytest.mark.parametrize("given", ["neither", "both"])
async def test_a_stream_needs_a_policy_or_a_check(given: str) -> None:
    """Exactly one of ``policy`` and ``check`` says what may be reached."""

    async def anything(host: str, port: int) -> list[IPAddress | str]:
        return ["127.0.0.1"]

    extra: dict[str, Any] = {"policy": LOOPBACK, "check": anything} if given == "both" else {}
    with pytest.raises(UsageError):
        async with guarded_stream("GET", "http://app.test/", timeout=5, **extra):
            pass


async def test_reading_a_stalled_body_times_out(server: Server) -> None:
    """The deadline covers the reads in the ``async with`` block too: a body that stops
    half way fails as timeout, with the headers already seen."""
    seen: list[tuple[str, str | None]] = []

    async def read_stalled() -> None:
        async with guarded_stream(
            "GET", server.url("/stall"), policy=LOOPBACK, timeout=0.5
        ) as page:
            seen.append((page.media_type, page.charset))
            await page.read(100)

    with pytest.raises(ToolError) as caught:
        await read_stalled()
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert seen == [("text/plain", "latin-1")]


async def test_a_certificate_that_does_not_verify_is_named(
    tls_server: tuple[Server, Path],
) -> None:
    """A certificate failure says so, with what the TLS library found wrong (the name
    as the URL spells it), not only that the connection failed."""
    server, cert = tls_server
    async with httpx2.AsyncClient(verify=ssl.create_default_context(cafile=cert)) as client:
        error = await refused(server.url("/echo", scheme="https"), LOOPBACK, client=client)
    assert error.kind is ErrorKind.UNAVAILABLE
    assert "certificate did not verify" in error.message
    assert "127.0.0.1" in error.message


async def test_a_compressed_body_is_read_in_bounded_memory(server: Server) -> None:
    """A decompression bomb (100 MB of zeros in about 100 KB of gzip): the body is
    decompressed as it is read, so keeping its first 1,000 bytes holds a few MB at
    most, and reading it whole fails at the limit."""
    url = server.url("/bomb")
    _bomb()  # made before tracing: the server's own 100 MB are not the client's
    tracemalloc.start()
    try:
        async with guarded_stream("GET", url, policy=LOOPBACK, timeout=30) as page:
            assert page.headers["content-encoding"] == "gzip"
            body, cut = await page.read_at_most(1_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (body, cut) == (b"\0" * 1_000, True)
    assert peak < 20_000_000, f"{peak:,} bytes at the peak"
    with pytest.raises(ToolError) as caught:
        await guarded_request("GET", url, policy=LOOPBACK, timeout=30, max_bytes=1_000_000)
    assert "larger than 1000000 bytes" in caught.value.message
