"""toolweave's full post-processing path for W1/W4/W6: reminders on, state persistence on.

The call path measured is the one a real host runs: the set has reminders turned on with
one registered reminder that stays silent for the benchmark's call (so the reminder loop
runs, and nothing is appended), and the session persists tool state to a real store.
Whatever the installed toolweave does not offer yet is listed in :data:`PENDING` and the
rows say so.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["PENDING", "Setup", "features", "prepare"]

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
    """How one benchmark set and its session are made on the full path."""

    def __init__(self) -> None:
        self.on = features()
        self._tmp: Path | None = None
        self._closers: list[Callable[[], Any]] = []

    def build(self, builder: Any) -> Any:
        """Build the set; with reminders, one registered reminder that stays silent."""
        if self.on["reminders"]:
            from toolweave.authoring import reminder

            @reminder(id="bench_silent")
            def silent(ctx: Any, call: Any) -> None:
                return None

            builder.add_reminder(silent)
        return builder.build()

    def session(self, toolset: Any) -> Any:
        """A session of ``toolset``: reminders on, state persisted to a real SQLite file."""
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
        """Close the session's store and remove its files."""
        for closer in reversed(self._closers):
            closer()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def tmpdir(self) -> Path:
        """A scratch folder (the session's workspace) removed by :meth:`close`."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="twbench-"))
        return self._tmp


def prepare(builder: Any) -> Setup:
    """The setup for ``builder`` (the builder itself is only used by :meth:`Setup.build`)."""
    return Setup()
