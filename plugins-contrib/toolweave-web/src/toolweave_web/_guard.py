"""The address guard: which hosts a model-chosen URL may reach.

A URL names a host; what matters is the address a connection goes to. So the guard
resolves the host itself, checks every address it gets, and the request is then sent
to the address that was checked (never resolved again), which defeats DNS rebinding:
a name that answers with a public address at the check and a private one at the
connection cannot happen, because there is only one look-up.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from toolweave import ErrorKind, ToolError, preview
from toolweave.netguard import AddressClass, address_class, literal_address, system_resolver

__all__ = [
    "AddressCategory",
    "AddressPolicy",
    "HostsResolver",
    "Resolver",
    "category_of",
    "checked_addresses",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressCategory = Literal["public", "loopback", "private", "link_local", "reserved"]
"""What kind of network an address belongs to."""


_CATEGORY: dict[AddressClass, AddressCategory] = {
    "public": "public",
    "loopback": "loopback",
    "private": "private",
    "link_local": "link_local",
    "reserved": "reserved",
    "unspecified": "reserved",
    "multicast": "reserved",
}


def category_of(ip: IPAddress) -> AddressCategory:
    """The network ``ip`` belongs to, as toolweave's own guard judges it
    (:func:`toolweave.netguard.address_class`; an IPv6 address carrying an IPv4 one is
    judged by it); unspecified and multicast addresses count as ``reserved``."""
    return _CATEGORY[address_class(ip)]


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Which addresses a request may go to.

    Attributes:
        allow_loopback: 127.0.0.0/8 and ::1 (this machine).
        allow_private: RFC 1918 networks, carrier-grade NAT, IPv6 unique-local.
        allow_link_local: 169.254.0.0/16 (cloud metadata services) and fe80::/10.
        allowed_networks: Networks allowed whatever their category (``127.0.0.1/32``),
            reserved ranges included.
        check: ``False`` allows every address (for endpoints the host configured).
    """

    allow_loopback: bool = False
    allow_private: bool = False
    allow_link_local: bool = False
    allowed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    check: bool = True

    @classmethod
    def build(
        cls,
        *,
        allow_loopback: bool = False,
        allow_private: bool = False,
        allow_link_local: bool = False,
        allowed_networks: Iterable[str] = (),
    ) -> AddressPolicy:
        """A policy from plain values (networks as CIDR text)."""
        networks = tuple(ipaddress.ip_network(n, strict=False) for n in allowed_networks)
        return cls(allow_loopback, allow_private, allow_link_local, networks)

    def refusal(self, ip: IPAddress) -> str | None:
        """Why ``ip`` may not be reached, or ``None`` when it may."""
        if not self.check:
            return None
        if any(ip.version == net.version and ip in net for net in self.allowed_networks):
            return None
        category = category_of(ip)
        allowed = {
            "public": True,
            "loopback": self.allow_loopback,
            "private": self.allow_private,
            "link_local": self.allow_link_local,
            "reserved": False,
        }[category]
        if allowed:
            return None
        return f"{ip} is a {category.replace('_', '-')} address"


class Resolver:
    """Turns a host name into addresses; the system's resolver by default.

    A host replaces it for every session by inserting another under this key
    (``resources.insert(HostsResolver({...}), Resolver)``).
    """

    async def resolve(self, host: str, port: int) -> list[str]:
        """The addresses of ``host``, in the resolver's order
        (:func:`toolweave.netguard.system_resolver`, the one toolweave's guard uses).

        Raises:
            OSError: The name does not resolve.
        """
        return await system_resolver(host, port)


class HostsResolver(Resolver):
    """Answers from a fixed table, like ``/etc/hosts``; other names go to ``fallback``.

    Args:
        hosts: Host name (lower case) → its addresses.
        fallback: Asked for names not in the table; ``None`` fails them.
    """

    def __init__(self, hosts: Mapping[str, list[str]], fallback: Resolver | None = None) -> None:
        self.hosts = {name.lower(): list(addresses) for name, addresses in hosts.items()}
        self.fallback = fallback

    async def resolve(self, host: str, port: int) -> list[str]:
        """The table's addresses of ``host``, else the fallback's answer."""
        found = self.hosts.get(host.lower().rstrip("."))
        if found is not None:
            return list(found)
        if self.fallback is None:
            raise OSError(f"{host} is not in the hosts table")
        return await self.fallback.resolve(host, port)


async def checked_addresses(
    host: str, port: int, policy: AddressPolicy, resolver: Resolver
) -> list[str]:
    """The addresses of ``host`` once every one of them passed ``policy``.

    All must pass, not just the first: a name that also resolves to a private address
    is refused rather than raced.

    Raises:
        ToolError: ``permission_denied`` naming the refused address and the param that
            allows it; ``not_found`` when the name does not resolve;
            ``invalid_params`` for a numeric host that is no address (``256.1.1.1``) or
            an IPv6 zone id.
    """
    literal = literal_address(host)  # every spelling a resolver reads: 127.1, 0x7f.1, ...
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = await resolver.resolve(host, port)
        except OSError as exc:
            raise ToolError(
                ErrorKind.NOT_FOUND, f"the host {preview(host)!r} does not resolve ({exc})"
            ) from None
        if not addresses:
            raise ToolError(ErrorKind.NOT_FOUND, f"the host {preview(host)!r} has no address")
    for text in addresses:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
        why = policy.refusal(ip)
        if why is not None:
            raise ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"refused to connect to {preview(host)!r}: {why}. Only public addresses "
                "are reachable unless the tool's params allow more "
                "(allow_loopback, allow_private, allow_link_local, allowed_networks).",
                data={"host": host, "address": str(ip), "category": category_of(ip)},
            )
    return addresses
