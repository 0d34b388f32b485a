"""Shared fixtures of the core unit tests."""

from __future__ import annotations

import importlib.metadata as importlib_metadata
import textwrap
import uuid
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


PackInstaller = Callable[[dict[str, str]], dict[str, str]]


@pytest.fixture
def fake_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PackInstaller:
    """Write pack modules (pack name → source) onto sys.path under unique module names
    and declare them, and only them, as ``toolweave.packs`` entry points."""

    def install(sources: dict[str, str]) -> dict[str, str]:
        tag = uuid.uuid4().hex[:8]
        modules = {key: f"tw{key}_{tag}" for key in sources}
        for key, module in modules.items():
            (tmp_path / f"{module}.py").write_text(textwrap.dedent(sources[key]))
        monkeypatch.syspath_prepend(str(tmp_path))
        eps = importlib_metadata.EntryPoints(
            importlib_metadata.EntryPoint(name=key, value=module, group="toolweave.packs")
            for key, module in modules.items()
        )
        monkeypatch.setattr(importlib_metadata, "entry_points", lambda **kw: eps)
        return modules

    return install
