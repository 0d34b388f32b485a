"""Fixtures of the memory pack's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder (memories go to its ``.toolweave/memory.db``)."""
    path = tmp_path / "ws"
    path.mkdir()
    return path
