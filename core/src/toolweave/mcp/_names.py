"""Client-visible names for remote tools: ``<prefix><server>__<tool>``, safe for every provider."""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "DEFAULT_PREFIX",
    "MAX_NAME",
    "client_name",
    "fit",
    "namespace_for",
    "sanitize",
    "subject",
]

DEFAULT_PREFIX = "mcp__"
"""Prefix of remote tools' client names when neither the pool nor the tool set sets one."""
MAX_NAME = 64
"""The longest tool name every provider accepts."""

_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    """``part`` with every character providers reject replaced by ``_``."""
    return _INVALID.sub("_", part) or "_"


def fit(name: str, limit: int = MAX_NAME) -> str:
    """``name`` cut to ``limit`` characters, kept unique by a short hash."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: max(limit - 9, 1)]}_{digest}"


def client_name(prefix: str, server_id: str, tool: str, limit: int = MAX_NAME) -> str:
    """The default client name of remote ``tool`` of ``server_id`` (at most ``limit`` long)."""
    name = f"{sanitize(prefix) if prefix else ''}{sanitize(server_id)}__{sanitize(tool)}"
    return fit(name, limit)


def namespace_for(server_id: str) -> str:
    """The namespace of a server's tools (``mcp_<server>``)."""
    return f"mcp_{sanitize(server_id)}"


def subject(name: str, remote: str) -> str:
    """How an error message names a remote tool: by ``name``, the client name the model
    calls it by, followed by its name on the server, labelled, when ``name`` does not end
    with it (a name from a server's ``names`` map, a sanitized or shortened name)."""
    if name == remote or name.endswith(f"__{remote}"):
        return name
    return f"{name} (remote name {remote!r})"
