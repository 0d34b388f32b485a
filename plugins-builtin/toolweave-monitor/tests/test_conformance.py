"""The monitor pack against toolweave's pack conformance checks (toolweave.testing)."""

from __future__ import annotations

from toolweave.testing import assert_pack_conforms


def test_pack_conforms() -> None:
    """Loaded alone through its entry point, every tool renders for every provider format
    (strict included), is described with what not to use it for, round-trips its
    arguments and answers malformed calls with typed errors."""
    assert_pack_conforms("monitor")
