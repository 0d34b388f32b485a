"""Client-visible names for remote tools: ``<prefix><server>__<tool>``, safe for every provider."""

from __future__ import annotations

import hashlib
import re

__all__ = ["DEFAULT_PREFIX", "MAX_NAME", "client_name", "fit", "namespace_for", "sanitize"]

DEFAULT_PREFIX = "mcp__"
"""Prefix of remote tools' client names when neither the pool nor the tool set sets one."""
MAX_NAME = 64
"""The longest tool name every provider accepts."""

_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    """``part`` with every character providers reject replaced by ``_``."""
    return _INVALID.sub("_", part) or "_"


def fit(name: str) -> str:
    """``name`` cut to :data:`MAX_NAME` characters, kept unique by a short hash."""
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def client_name(prefix: str, server_id: str, tool: str) -> str:
    """The default client name of remote ``tool`` of ``server_id``."""
    return fit(f"{sanitize(prefix) if prefix else ''}{sanitize(server_id)}__{sanitize(tool)}")


def namespace_for(server_id: str) -> str:
    """The namespace of a server's tools (``mcp_<server>``)."""
    return f"mcp_{sanitize(server_id)}"
