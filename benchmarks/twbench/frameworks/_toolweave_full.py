"""toolweave's sets and sessions as the workloads make them.

Two setups:

- :class:`Setup`, the *full path* of the original rows: the set has reminders turned on
  with one registered reminder that stays silent for the benchmark's call (so the
  reminder loop runs, and nothing is appended), and the session persists tool state to
  a real SQLite store.
- :func:`host_builder` / :class:`Setup` with ``packs=True``, the *host's path* ("with
  the built-in packs"): the four built-in packs are loaded as the README's host loops
  load them (``load_packs(include=[...]).builder()``), the host's own tools are added to
  that same builder, and the session is made as a host makes it
  (``toolset.session(workspace=...)``): the packs' reminders (the plan pack's todo
  reminder), guards (plan mode) and resources, and the default state store in the
  workspace (``.toolweave/state.db``).

Whatever the installed toolweave does not offer yet is listed in :data:`PENDING` and the
rows say so.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "BUILTIN_PACKS",
    "HOST_NOTE",
    "PENDING",
    "Setup",
    "features",
    "host_builder",
    "prepare",
]

BUILTIN_PACKS = ("fs", "plan", "search", "shell")
"""The built-in packs a host loads (``plugins-builtin/``)."""

HOST_NOTE = (
    'load_packs(include=["fs", "plan", "search", "shell"], strict=True).builder() + the '
    "host tool(s) added to it -> build() -> toolset.session(workspace=tmp) (todo reminder, "
    "plan-mode hook, default state store)"
)
"""What "with the built-in packs" means, for the tables."""


def host_builder() -> Any:
    """A builder holding the four built-in packs, as a host makes it (the host then adds
    its own tools to it). ``strict``: a broken pack fails the row instead of being
    skipped silently."""
    from toolweave import load_packs

    return load_packs(include=list(BUILTIN_PACKS), strict=True).builder()


PENDING: list[str] = []
"""Parts of the full path the installed toolweave does not have (filled by :func:`features`)."""


def features() -> dict[str, bool]:
    """Which parts of the full path the installed toolweave offers."""
    import inspect

    from toolweave import Session, ToolSetBuilder

    params = inspect.signature(Session).parameters
    has_reminders = hasattr(ToolSetBuilder, "add_reminder") and "reminders" in params
    try:
        from toolweave.state import SQLiteStateStore  # noqa: F401
    except ImportError:
        has_state = False
    else:
        has_state = "state_store" in params
    found = {"reminders": has_reminders, "state": has_state}
    PENDING[:] = [name for name, ok in found.items() if not ok]
    return found


class Setup:
    """How one benchmark set and its session are made: the full path, or with
    ``packs=True`` the host's path (see the module docstring)."""

    def __init__(self, packs: bool = False) -> None:
        self.on = features()
        self.packs = packs
        self._tmp: Path | None = None
        self._closers: list[Callable[[], Any]] = []

    def builder(self) -> Any:
        """An empty builder, or with ``packs`` one holding the built-in packs."""
        from toolweave import ToolSetBuilder

        return host_builder() if self.packs else ToolSetBuilder()

    def build(self, builder: Any) -> Any:
        """Build the set; on the full path with one registered reminder that stays silent
        (with ``packs`` the packs' own reminders are there instead)."""
        if self.packs:
            return builder.build()
        if self.on["reminders"]:
            from toolweave.authoring import reminder

            @reminder(id="bench_silent")
            def silent(ctx: Any, call: Any) -> None:
                return None

            builder.add_reminder(silent)
        return builder.build()

    def session(self, toolset: Any) -> Any:
        """A session of ``toolset``: reminders on, state persisted to a real SQLite file
        (with ``packs``: as a host makes it, the default store in the workspace)."""
        if self.packs:
            session = toolset.session(workspace=self.tmpdir())
            self._closers.append(session.aclose)
            return session
        options: dict[str, Any] = {}
        if self.on["reminders"]:
            options["reminders"] = True
        if self.on["state"]:
            from toolweave.state import SQLiteStateStore

            store = SQLiteStateStore(self.tmpdir() / "state.db")
            self._closers.append(store.close)
            options["state_store"] = store
        return toolset.session(workspace=self.tmpdir(), **options)

    async def close(self) -> None:
        """Close the session (or its store) and remove its files."""
        import inspect

        for closer in reversed(self._closers):
            done = closer()
            if inspect.isawaitable(done):
                await done
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def tmpdir(self) -> Path:
        """A scratch folder (the session's workspace) removed by :meth:`close`."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="twbench-"))
        return self._tmp


def prepare(builder: Any, packs: bool = False) -> Setup:
    """The setup for ``builder`` (the builder itself is only used by :meth:`Setup.build`)."""
    return Setup(packs)
