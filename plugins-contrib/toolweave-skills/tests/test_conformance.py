"""The skills pack against toolweave's pack conformance checks (toolweave.testing)."""

from __future__ import annotations

from pathlib import Path

from toolweave.testing import assert_pack_conforms


def test_pack_conforms(home: Path) -> None:
    """Loaded alone through its entry point, ``skill`` renders for every provider format
    (strict included), is described with what not to use it for, round-trips its
    arguments, answers malformed calls with typed errors and survives a real call."""
    assert_pack_conforms("skills")
