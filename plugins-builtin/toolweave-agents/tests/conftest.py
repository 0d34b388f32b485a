"""Fixtures of the agents pack's tests: sessions of the fs, shell and agents packs over a
small workspace, with a scripted model as the sub-agent's runner."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import toolweave_agents
import toolweave_fs
import toolweave_shell
from toolweave import CallHook, PackManager, Resources, Session
from toolweave_agents import ModelRunner
from toolweave_shell import LocalTerminal, Terminal


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with ``notes.txt``."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("colour: red\nsize: large\n")
    return root


SessionFactory = Callable[..., Session]


@pytest.fixture
async def make_session(workspace: Path) -> AsyncIterator[SessionFactory]:
    """Sessions of the fs, shell and agents packs over the workspace, with ``runner`` as
    their model runner (none when ``None``); closed at the end."""
    made: list[Session] = []

    def make(
        runner: ModelRunner | None,
        config: dict[str, Any] | None = None,
        hooks: list[CallHook] | None = None,
    ) -> Session:
        packs = PackManager(strict=True)
        packs.add("fs", toolweave_fs.pack)
        packs.add("shell", toolweave_shell.pack)
        packs.add("agents", toolweave_agents.pack)
        host = Resources()
        host.insert(LocalTerminal(kill_grace=0.5), Terminal)
        session = (
            packs.builder()
            .build(config)
            .session(workspace=workspace, resources=host, hooks=hooks or (), debug=True)
        )
        if runner is not None:
            session.set_resource(runner, ModelRunner)
        made.append(session)
        return session

    yield make
    for session in made:
        await session.aclose()
