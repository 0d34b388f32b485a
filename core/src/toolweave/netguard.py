"""The outbound-HTTP guard for packs: requests that reach only the addresses a policy
allows, checked after DNS and on every redirect, sent to the address that was checked.

A public face over :mod:`toolweave._netguard` (the guard the registry center's HTTP
tools use), so a pack that fetches model-chosen URLs uses this guard rather than
writing another: :func:`guarded_request` reads the whole body,
:func:`guarded_stream` hands the last response over before its body is read (to refuse
a content type, or keep only the start of a large page). A pack whose params say what
may be reached in its own terms passes its own ``check`` and judges addresses with
:func:`address_class` (host literals read with :func:`literal_address`), so every
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
    Check,
    GuardedResponse,
    GuardedStream,
    address_class,
    guarded_request,
    guarded_stream,
    literal_address,
    system_resolver,
)

__all__ = [
    "AddressClass",
    "AddressPolicy",
    "Check",
    "GuardedResponse",
    "GuardedStream",
    "address_class",
    "guarded_request",
    "guarded_stream",
    "literal_address",
    "system_resolver",
]
