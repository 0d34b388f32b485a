"""Fixtures of the lsp pack's tests: a small Python project with a deliberate error,
and sessions of the lsp and fs packs over it (the real ``pylsp`` server)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import toolweave_fs
import toolweave_lsp
from toolweave import PackManager, Session

SHAPES = '''"""Shapes."""


class Square:
    """A square."""

    def __init__(self, side: float) -> None:
        self.side = side

    def area(self) -> float:
        """The area of the square."""
        return self.side * self.side


def total(shapes: list[Square]) -> float:
    return sum(s.area() for s in shapes)
'''

MAIN = """from pkg.shapes import Square, total


def run() -> float:
    squares = [Square(2), Square(3)]
    return total(squares) + undefined_name
"""


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A project: ``pkg/shapes.py`` and ``pkg/main.py`` (which uses an undefined name)."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "shapes.py").write_text(SHAPES)
    (root / "pkg" / "main.py").write_text(MAIN)
    (root / "notes.txt").write_text("not code\n")
    return root


SessionFactory = Callable[..., Session]


@pytest.fixture
async def make_session(workspace: Path) -> AsyncIterator[SessionFactory]:
    """Sessions of the lsp and fs packs over the project; closed at the end."""
    made: list[Session] = []

    def make(config: dict[str, Any] | None = None) -> Session:
        packs = PackManager(strict=True)
        packs.add("fs", toolweave_fs.pack)
        packs.add("lsp", toolweave_lsp.pack)
        session = packs.builder().build(config).session(workspace=workspace, debug=True)
        made.append(session)
        return session

    yield make
    for session in made:
        await session.aclose()
