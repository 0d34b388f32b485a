"""Shared fixtures of the core unit tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import Session, ToolSetBuilder


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the backend toolweave's hosts use)."""
    return "asyncio"


SessionFactory = Callable[..., Session]


@pytest.fixture
def make_session(tmp_path: Path) -> SessionFactory:
    """Builds a session over the given tools (classes, instances or erased handles),
    with a temporary workspace; keyword arguments go to the session."""

    def make(*tools: Any, **options: Any) -> Session:
        builder = ToolSetBuilder()
        builder.add_all(tools)
        options.setdefault("workspace", tmp_path)
        return builder.build().session(**options)

    return make
