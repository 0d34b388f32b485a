"""Secrets kept out of what people and models read: how one is shown."""

from __future__ import annotations

__all__ = ["MASK", "strip_userinfo"]

MASK = "***"
"""What stands for a secret in messages, listings, the audit and logs."""


def strip_userinfo(url: str) -> str:
    """``url`` with its userinfo (``user:password@``) replaced by ``***@``; a URL that
    cannot be read at all is ``***``."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))
