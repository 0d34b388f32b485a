"""Fixtures of the plan pack's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder (state goes to its ``.toolweave/state.db``)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path
