"""The web pack against toolweave's pack conformance checks (toolweave.testing)."""

from __future__ import annotations

from toolweave.testing import assert_pack_conforms


def test_pack_conforms() -> None:
    """Loaded alone through its entry point, every tool renders for every provider format
    (strict included), is described with what not to use it for, round-trips its
    arguments, answers malformed calls with typed errors and survives its example calls
    (``web_fetch``'s example is refused by the address guard before any connection;
    ``web_search`` without an endpoint is unavailable)."""
    assert_pack_conforms("web")
