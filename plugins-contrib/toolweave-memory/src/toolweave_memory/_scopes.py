"""Scopes and tags: what a session may see, how tags are written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, StringConstraints
from toolweave import Context, ErrorKind, Resources, Session, ToolError
from toolweave.state import workspace_file

from toolweave_memory._store import MemoryStore

__all__ = [
    "SHARED",
    "Scope",
    "Tag",
    "default_path",
    "provide_store",
    "scope_key",
    "store_for",
    "visible_scopes",
]

SHARED = "shared"
Scope = Literal["shared", "session"]
"""``shared``: every session of the workspace sees it; ``session``: only this session id."""

_TAG = re.compile(r"[\w.-]{1,40}", re.UNICODE)
"""A tag, matched whole (``fullmatch``: no trailing newline slips through)."""


def _tag(value: str) -> str:
    tag = value.strip().lower().lstrip("#")
    if not _TAG.fullmatch(tag):
        raise ValueError("a tag is 1 to 40 letters, digits, '_', '-' or '.', without spaces")
    return tag


Tag = Annotated[str, StringConstraints(max_length=41), AfterValidator(_tag)]
"""A tag: lower-cased, ``#`` dropped, word characters, ``-`` and ``.`` only."""


def scope_key(scope: Scope, ctx: Context) -> str:
    """How ``scope`` is stored for the calling session."""
    return SHARED if scope == SHARED else f"session:{ctx.session_id}"


def visible_scopes(ctx: Context) -> tuple[str, str]:
    """The scopes the calling session sees: shared ones and its own."""
    return (SHARED, f"session:{ctx.session_id}")


def default_path(workspace: Path) -> Path:
    """Where a workspace keeps its memories: ``.toolweave/memory.db``.

    Raises:
        PermissionError: ``.toolweave`` or ``memory.db`` is a symbolic link (a cloned
            workspace's link would send the memories elsewhere).
    """
    return workspace_file(workspace, "memory.db")


def provide_store(resources: Resources, session: Session) -> None:
    """A store in the session's workspace, unless the host provided one (none when the
    workspace's file is refused: the tools then say why)."""
    try:
        path = default_path(session.workspace)
    except PermissionError:
        return
    resources.get_or_default(MemoryStore, lambda: MemoryStore(path))


def store_for(ctx: Context) -> MemoryStore:
    """The session's store (the workspace's file when no pack or host provided one).

    Raises:
        ToolError: ``permission_denied``, the workspace's file is refused.
    """
    found = ctx.get(MemoryStore)
    if found is None:
        try:
            found = MemoryStore(default_path(ctx.session.workspace))
        except PermissionError as exc:
            raise ToolError(ErrorKind.PERMISSION_DENIED, f"memories are not kept: {exc}") from None
    return found
