"""Fixtures of the shell pack's tests: a session over a temporary workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import PackManager, Resources, Session
from toolweave_shell import BackgroundTasks, LocalTerminal, Terminal, pack


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def host(tmp_path: Path) -> Resources:
    """Host resources: a terminal with a short kill grace, task output under tmp_path."""
    resources = Resources()
    resources.insert(LocalTerminal(kill_grace=0.5), Terminal)
    resources.insert(BackgroundTasks(root=tmp_path / "task-output"))
    return resources


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


SessionFactory = Callable[..., Session]


@pytest.fixture
async def make_session(workspace: Path, host: Resources) -> AsyncIterator[SessionFactory]:
    """Build sessions of the shell pack (a fresh tool set each time, like a new host).

    Every background task still running at the end of the test is killed.
    """
    made: list[Session] = []

    def make(config: dict[str, Any] | None = None, **options: Any) -> Session:
        packs = PackManager(strict=True)
        packs.add("shell", pack)
        toolset = packs.builder().build(config)
        options.setdefault("resources", host)
        options.setdefault("workspace", workspace)
        options.setdefault("debug", True)
        session = toolset.session(**options)
        made.append(session)
        return session

    yield make
    for resources in {id(s.resources): s.resources for s in made}.values():
        tasks = resources.get(BackgroundTasks)
        if tasks is not None:
            await tasks.kill_all()
