"""The address guard: private, loopback and link-local addresses are refused after DNS
resolution and on every redirect, and the request goes to the address that was checked."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, PackManager, Resources, Session
from toolweave_web import AddressPolicy, HostsResolver, Resolver, category_of, pack

pytestmark = pytest.mark.anyio


def session_for(workspace: Path, resolver: Resolver | None = None, **params: Any) -> Session:
    """A session with ``web_fetch`` configured by ``params`` (nothing allowed by default)."""
    packs = PackManager(strict=True)
    packs.add("web", pack)
    config = {"tools": [{"id": "web_fetch", "params": params}]}
    host = Resources()
    if resolver is not None:
        host.insert(resolver, Resolver)
    return packs.builder().build(config).session(workspace=workspace, resources=host, debug=True)


class FlipResolver(Resolver):
    """A rebinding name server: the first answer is one address, every later one another."""

    def __init__(self, first: str, later: str) -> None:
        self.first, self.later, self.asked = first, later, 0

    async def resolve(self, host: str, port: int) -> list[str]:
        self.asked += 1
        return [self.first if self.asked == 1 else self.later]


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.20.0.1", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link_local"),
        ("fe80::1", "link_local"),
        ("0.0.0.0", "reserved"),
        ("224.0.0.1", "reserved"),
        ("192.0.2.1", "reserved"),
        ("240.0.0.1", "reserved"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a9fe:a9fe", "link_local"),
        ("2002:a00:1::", "private"),
        ("::7f00:1", "loopback"),  # IPv4-compatible
        ("::ffff:0:a00:1", "private"),  # IPv4-translated
        ("64:ff9b:1::a00:1", "private"),  # local-use NAT64
        ("0.1.2.3", "reserved"),  # 0.0.0.0/8 reaches this machine
        ("ff02::1", "reserved"),
        ("93.184.216.34", "public"),
        ("2606:4700::1111", "public"),
    ],
)
def test_categories(address: str, category: str) -> None:
    """Every special range is recognised, IPv4 carried inside IPv6 included."""
    assert category_of(ipaddress.ip_address(address)) == category


def test_policy_allows_by_category_and_network() -> None:
    """Each param opens its category only; an allowed network opens any address in it."""
    loopback = ipaddress.ip_address("127.0.0.1")
    private = ipaddress.ip_address("10.0.0.5")
    assert AddressPolicy().refusal(loopback) == "127.0.0.1 is a loopback address"
    assert AddressPolicy(allow_loopback=True).refusal(loopback) is None
    assert AddressPolicy(allow_loopback=True).refusal(private) == "10.0.0.5 is a private address"
    narrow = AddressPolicy.build(allowed_networks=["10.0.0.0/29"])
    assert narrow.refusal(private) is None
    assert narrow.refusal(ipaddress.ip_address("10.0.0.9")) is not None
    assert AddressPolicy(check=False).refusal(private) is None


async def test_loopback_is_refused_by_default(workspace: Path, server: Any) -> None:
    """Without params, a server on 127.0.0.1 is out of reach, and nothing is sent to it."""
    result = await session_for(workspace).call("web_fetch", {"url": server.url("/host")})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert "127.0.0.1 is a loopback address" in result.text
    assert "allow_loopback" in result.text
    assert server.hosts_seen == []


async def test_a_name_resolving_to_loopback_is_refused(workspace: Path, server: Any) -> None:
    """``localhost`` is checked by the address it resolves to, not by its spelling, and so
    is any name a resolver maps to 127.0.0.1; IPv4-mapped IPv6 literals too."""
    session = session_for(workspace, HostsResolver({"evil.test": ["127.0.0.1"]}, Resolver()))
    for url in (
        f"http://localhost:{server.port}/host",
        f"http://evil.test:{server.port}/host",
        f"http://[::ffff:127.0.0.1]:{server.port}/host",
    ):
        result = await session.call("web_fetch", {"url": url})
        assert result.error is not None, url
        assert result.error.kind is ErrorKind.PERMISSION_DENIED, result.text
        assert "loopback" in result.text
    assert server.hosts_seen == []


async def test_all_addresses_must_pass(workspace: Path, server: Any) -> None:
    """A name with one public and one private address is refused, whichever comes first."""
    resolver = HostsResolver({"mixed.test": ["93.184.216.34", "127.0.0.1"]})
    result = await session_for(workspace, resolver).call(
        "web_fetch", {"url": f"http://mixed.test:{server.port}/host"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert server.hosts_seen == []


async def test_request_goes_to_the_checked_address(workspace: Path, server: Any) -> None:
    """DNS rebinding: the name is resolved once per hop and the connection goes to that
    answer (here the only allowed address, 127.0.0.1); a second look-up would have
    answered 127.0.0.2, which the params refuse. The Host header keeps the name."""
    resolver = FlipResolver("127.0.0.1", "127.0.0.2")
    session = session_for(workspace, resolver, allowed_networks=["127.0.0.1/32"])
    result = await session.call("web_fetch", {"url": f"http://rebind.test:{server.port}/host"})
    assert result.error is None, result.text
    assert result.output["content"] == f"rebind.test:{server.port}"
    assert resolver.asked == 1
    again = await session.call("web_fetch", {"url": f"http://rebind.test:{server.port}/host"})
    assert again.error is not None
    assert "127.0.0.2 is a loopback address" in again.text


async def test_the_next_checked_address_is_tried(workspace: Path, server: Any) -> None:
    """A name with two allowed addresses: when the first refuses the connection
    (nothing listens on 127.0.0.2), the request goes to the next one, still under the
    name."""
    resolver = HostsResolver({"two.test": ["127.0.0.2", "127.0.0.1"]})
    session = session_for(workspace, resolver, allow_loopback=True)
    result = await session.call("web_fetch", {"url": f"http://two.test:{server.port}/host"})
    assert result.error is None, result.text
    assert result.output["content"] == f"two.test:{server.port}"


async def test_credentials_in_the_url_are_not_reported(workspace: Path, server: Any) -> None:
    """A URL with a user and password is fetched, and the page reports it without them."""
    session = session_for(workspace, allow_loopback=True)
    url = f"http://reader:secret@127.0.0.1:{server.port}/plain.txt"
    result = await session.call("web_fetch", {"url": url})
    assert result.error is None, result.text
    assert result.output["url"] == server.url("/plain.txt")
    assert "secret" not in result.text


@pytest.mark.parametrize(
    ("target", "address"),
    [
        ("http://10.0.0.1/admin", "10.0.0.1 is a private"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local"),
        ("http://internal.test/", "192.168.1.10 is a private"),
        ("http://[fd00::1]/", "fd00::1 is a private"),
    ],
)
async def test_a_redirect_to_a_private_address_is_refused(
    workspace: Path, server: Any, target: str, address: str
) -> None:
    """The first hop is allowed (loopback, by params), its redirect to a private or
    link-local address is refused before any connection is made."""
    resolver = HostsResolver({"internal.test": ["192.168.1.10"]})
    session = session_for(workspace, resolver, allow_loopback=True)
    result = await session.call("web_fetch", {"url": server.url(f"/redirect?to={target}")})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert address in result.text
    assert len(server.hosts_seen) == 1  # only the redirecting request reached a server


async def test_an_unresolvable_name_is_not_found(workspace: Path) -> None:
    """A name the resolver cannot resolve fails as not_found."""
    result = await session_for(workspace, HostsResolver({})).call(
        "web_fetch", {"url": "http://nowhere.test/"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.NOT_FOUND


async def test_https_goes_to_the_checked_address_and_verifies_the_name(
    workspace: Path, tls_server: Any
) -> None:
    """Over TLS the request still goes to the checked address while the certificate is
    verified against the URL's name (sent as SNI): ``secure.test`` passes; the same
    server reached by its address fails, since the certificate does not name it."""
    server, cert = tls_server
    resolver = HostsResolver({"secure.test": ["127.0.0.1"]})
    session = session_for(workspace, resolver, allow_loopback=True, ca_file=str(cert))
    ok = await session.call("web_fetch", {"url": f"https://secure.test:{server.port}/host"})
    assert ok.error is None, ok.text
    assert ok.output["content"] == f"secure.test:{server.port}"
    by_address = await session.call("web_fetch", {"url": f"https://127.0.0.1:{server.port}/host"})
    assert by_address.error is not None
    assert by_address.error.kind is ErrorKind.UNAVAILABLE
    assert "certificate is not valid for '127.0.0.1'" in by_address.text


async def test_international_names_are_resolved_and_sent_encoded(
    workspace: Path, server: Any
) -> None:
    """A non-ASCII host name is resolved, checked and sent (Host header) in its IDNA
    form, so the table, DNS and the server all see the same name."""
    resolver = HostsResolver({"xn--bcher-kva.test": ["127.0.0.1"]})
    session = session_for(workspace, resolver, allow_loopback=True)
    result = await session.call("web_fetch", {"url": f"http://bücher.test:{server.port}/host"})
    assert result.error is None, result.text
    assert result.output["content"] == f"xn--bcher-kva.test:{server.port}"


@pytest.mark.parametrize(
    "host", ["2130706433", "0x7f.1", "127.1", "0", "[::]", "[::ffff:7f00:1]", "[0:0:0:0:0:0:0:1]"]
)
async def test_odd_spellings_of_local_addresses_are_refused(workspace: Path, host: str) -> None:
    """Every spelling the system resolver turns into a local address is judged by that
    address (nothing is sent: port 9 on this machine is never reached)."""
    result = await session_for(workspace).call("web_fetch", {"url": f"http://{host}:9/"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED, result.text
    assert "a loopback address" in result.text or "a reserved address" in result.text


class NoLookups(Resolver):
    """A resolver that records every name it is asked for (and knows none)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        raise OSError(f"{host} is not known")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("[::7f00:1]", "::7f00:1"),
    ],
)
async def test_numeric_hosts_are_read_as_addresses_without_a_look_up(
    workspace: Path, host: str, address: str
) -> None:
    """A host spelled as a number is the address a resolver would read it as (any IPv4
    spelling inet_aton accepts, IPv4 inside IPv6), judged without asking the resolver."""
    resolver = NoLookups()
    result = await session_for(workspace, resolver).call("web_fetch", {"url": f"http://{host}:9/"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED, result.text
    assert f"{address} is a " in result.text
    assert resolver.asked == []


async def test_a_numeric_host_that_is_no_address_is_invalid(workspace: Path) -> None:
    """``256.1.1.1`` is neither a name nor an address: invalid params, nothing resolved."""
    resolver = NoLookups()
    result = await session_for(workspace, resolver).call(
        "web_fetch", {"url": "http://256.1.1.1:9/"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text
    assert resolver.asked == []


@pytest.mark.parametrize("target", ["other.test", "a.test"])
async def test_cookies_are_not_carried_from_one_hop_to_the_next(
    workspace: Path, server: Any, target: str
) -> None:
    """A cookie set by ``a.test`` while redirecting is not sent on: not to another name
    on the same address (``other.test``), and not back to ``a.test`` either, since the
    fetch keeps no cookies at all."""
    resolver = HostsResolver({"a.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    session = session_for(workspace, resolver, allow_loopback=True)
    port = server.url("/").split(":")[2].split("/")[0]
    to = f"http://{target}:{port}/cookie"
    result = await session.call("web_fetch", {"url": f"http://a.test:{port}/login?to={to}"})
    assert result.error is None, result.text
    assert "no cookie" in result.text
    assert "SECRET123" not in result.text
    assert server.hosts_seen == [f"a.test:{port}", f"{target}:{port}"]
