"""Opening the registry center for a command: ``--center``, ``TOOLWEAVE_CENTER``, the
workspace's default store, and ``--role`` / ``--cohort`` for sessions put under it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolweave.cli._common import fail

if TYPE_CHECKING:
    from toolweave.center import Center
    from toolweave.runtime._session import Session

__all__ = [
    "CENTER_ENV",
    "CenterOpt",
    "CohortOpt",
    "RoleOpt",
    "attached",
    "default_store",
    "open_center",
]

CENTER_ENV = "TOOLWEAVE_CENTER"
"""The environment variable naming the center's store (an SQLite path or sqlite:///path)."""
DEFAULT_STORE = Path(".toolweave") / "center.db"
"""Where ``toolweave center`` and ``toolweave audit`` look, under the workspace, when no
store is named."""

CenterOpt = Annotated[
    str | None,
    typer.Option(
        "--center",
        envvar=CENTER_ENV,
        metavar="URL",
        help="The registry center's store: an SQLite path, sqlite:///path, or "
        "redis://host:port/db (the redis extra).",
        show_default=False,
    ),
]
RoleOpt = Annotated[
    str | None,
    typer.Option(
        "--role",
        help="The session's role for the center (tools other roles own stay hidden).",
        show_default=False,
    ),
]
CohortOpt = Annotated[
    str | None,
    typer.Option(
        "--cohort",
        help="The session's cohort for the center's cohort pins.",
        show_default=False,
    ),
]


def default_store(workspace: Path | None) -> Path:
    """The store of the workspace (the current directory when ``None``).

    Raises:
        PermissionError: The workspace's ``.toolweave`` or ``center.db`` is a symbolic
            link (:func:`toolweave.state.workspace_file`).
    """
    from toolweave.state import workspace_file

    return workspace_file(workspace or Path.cwd(), DEFAULT_STORE.name)


def open_center(url: str | None, workspace: Path | None = None, *, create: bool = False) -> Center:
    """The center at ``url`` (default: the workspace's ``.toolweave/center.db``).

    A command that only reads never creates a store: a mistyped path is an error, not a
    new, empty center.

    Raises:
        CliError: The store does not exist and ``create`` is false.
        CenterError: The store cannot be opened (the message says why).
    """
    from toolweave.center import Center
    from toolweave.errors import CenterError

    try:
        where = url if url else str(default_store(workspace))
    except PermissionError as exc:
        fail(str(exc), f"name the store with --center URL or {CENTER_ENV}")
    try:
        return Center.open(where, create=create)
    except CenterError as exc:
        if create or not str(exc).startswith("there is no center store"):
            raise
        fail(
            str(exc),
            f"name one with --center URL or {CENTER_ENV}; a session started with "
            "--center creates it (e.g. `toolweave tools --center PATH`)",
        )


@contextlib.contextmanager
def attached(
    session: Session, url: str | None, role: str | None = None, cohort: str | None = None
) -> Iterator[Center | None]:
    """Put ``session`` under the center at ``url`` for the block (nothing when ``url`` is
    ``None``); the center is closed, its audit written, at the end."""
    if url is None:
        if role is not None or cohort is not None:
            fail("--role and --cohort need a center", f"add --center URL or set {CENTER_ENV}", 2)
        yield None
        return
    center = open_center(url, create=True)
    try:
        center.attach(session, role=role, cohort=cohort)
        yield center
    finally:
        center.close()
