"""The outbound-HTTP guard for packs: requests that reach only the addresses a policy
allows, checked after DNS and on every redirect, sent to the address that was checked.

A public face over :mod:`toolweave._netguard` (the guard the registry center's HTTP
tools use), so a pack that fetches model-chosen URLs uses this guard rather than
writing another.

Example:
    >>> policy = AddressPolicy(allow_loopback=True)
    >>> policy.allows("loopback"), AddressPolicy().allows("loopback")
    (True, False)
"""

from __future__ import annotations

from toolweave._netguard import AddressPolicy, GuardedResponse, guarded_request

__all__ = ["AddressPolicy", "GuardedResponse", "guarded_request"]
