"""The media pack against toolweave's pack conformance checks (toolweave.testing)."""

from __future__ import annotations

import pytest
from toolweave.testing import assert_pack_conforms


def test_pack_conforms(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded alone through its entry point, every tool renders for every provider format
    (strict included), is described with what not to use it for, round-trips its
    arguments and answers malformed calls with typed errors. With no key and no client
    of the host's, the calls answer ``unavailable`` (never a real service)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert_pack_conforms("media")
