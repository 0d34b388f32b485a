"""pytest fixtures for pack authors, registered through the ``pytest11`` entry point.

Importing this module imports nothing from toolweave; the fixtures do, when used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from toolweave.runtime._session import Session

__all__ = ["toolweave_session"]


@pytest.fixture
def toolweave_session(tmp_path: Path) -> Callable[..., Session]:
    """A factory of sessions over installed packs, working in a temporary folder.

    ``toolweave_session("fs", "search")`` loads those packs through their entry points
    (strictly: a broken pack fails the test) and returns a session whose workspace is
    the test's ``tmp_path``, in debug mode (a tool emitting a notification it did not
    declare fails the test). Keyword arguments go to :meth:`ToolSet.session`
    (``debug=False`` turns debug mode off); a ``config`` keyword is passed to the build.
    """
    from toolweave.plugins import PackManager

    def make(*packs: str, config: Any = None, **options: Any) -> Session:
        manager = PackManager(strict=True)
        # Strict: a name no installed pack has raises UsageError with a did-you-mean.
        manager.discover(include=list(packs), autoload=False, environ={})
        options.setdefault("workspace", tmp_path)
        options.setdefault("debug", True)
        return manager.builder().build(config).session(**options)

    return make
