"""Fixtures of the fs pack tests: a real workspace folder and a session over it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import toolweave_fs
from toolweave import PackManager, Session


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace holding a file the tools must never reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


SessionFactory = Callable[..., Session]


def _make_session(workspace: Path, config: Mapping[str, Any] | None = None) -> Session:
    packs = PackManager(strict=True)
    packs.add("fs", toolweave_fs.pack)
    return packs.builder().build(config).session(workspace=workspace)


@pytest.fixture
def make_session() -> SessionFactory:
    """Builds a session over a workspace (and an optional tool-set configuration) with
    the fs pack loaded the way a host loads it."""
    return _make_session


@pytest.fixture
def session(workspace: Path) -> Session:
    """A session with every fs tool over ``workspace``."""
    return _make_session(workspace)
