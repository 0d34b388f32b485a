"""The outbound-HTTP guard for packs: requests that reach only the addresses a policy
allows, checked after DNS and on every redirect, sent to the address that was checked.

A public face over :mod:`toolweave._netguard` (the guard the registry center's HTTP
tools use), so a pack that fetches model-chosen URLs uses this guard rather than
writing another. A pack that sends its requests itself still judges addresses with
:func:`address_class` and reads host literals with :func:`literal_address`, so every
guard in a host agrees on what is loopback, private or link-local.

Example:
    >>> policy = AddressPolicy(allow_loopback=True)
    >>> policy.allows("loopback"), AddressPolicy().allows("loopback")
    (True, False)
    >>> address_class(literal_address("0x7f.1"))
    'loopback'
"""

from __future__ import annotations

from toolweave._netguard import (
    AddressClass,
    AddressPolicy,
    GuardedResponse,
    address_class,
    guarded_request,
    literal_address,
)

__all__ = [
    "AddressClass",
    "AddressPolicy",
    "GuardedResponse",
    "address_class",
    "guarded_request",
    "literal_address",
]
