"""Secrets kept out of what people and models read: how one is shown, and how one
shown that way and sent back is read as the value it stands for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MASK", "SECRET_KEYS", "keep_secrets", "mask_secrets", "strip_userinfo"]

MASK = "***"
"""What stands for a secret in messages, listings, the audit and logs."""

SECRET_KEYS = ("env", "headers")
"""The keys of a connection entry (an MCP server entry, an HTTP tool's endpoint) whose
every value is a secret (API keys, bearer tokens)."""


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


def mask_secrets(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``entry`` (an MCP server entry, an HTTP tool's endpoint) as it may be shown: every
    value of its ``env`` and ``headers`` (the names stay) and the userinfo of its
    ``url`` replaced by ``***``; the other keys as they are."""
    out = dict(entry)
    for key in SECRET_KEYS:
        value = out.get(key)
        if isinstance(value, Mapping):
            out[key] = {name: MASK for name in value}
        elif value is not None:
            out[key] = MASK
    url = out.get("url")
    if isinstance(url, str) and "@" in url:
        out["url"] = strip_userinfo(url)
    return out


def keep_secrets(entry: Mapping[str, Any], stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """``entry`` with every secret sent back as :func:`mask_secrets` shows it replaced by
    the value ``stored`` holds, so an operator who edits what a listing showed and sends
    it back does not overwrite the real secrets with ``***``.

    An ``env`` or ``headers`` value that is ``***`` takes the stored value of the same
    name, and a ``url`` whose userinfo is ``***`` the stored URL's userinfo, only while
    the entry goes where the stored one went: the same scheme, host and port of its
    ``url``, or the same ``command`` and ``args``. A secret never follows an entry to
    another host or program (someone who may push entries but not read them would
    otherwise send the stored token wherever they like).

    Raises:
        ValueError: A ``***`` stands for nothing stored (a new entry, a new name, another
            host or program): the message says which, and to send the real value.
    """
    out = dict(entry)
    before: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
    for key in SECRET_KEYS:
        value = out.get(key)
        known = before.get(key)
        masked = value == MASK or (
            isinstance(value, Mapping) and any(given == MASK for given in value.values())
        )
        if masked and known is not None and _target(out) != _target(before):
            raise ValueError(
                f"{key} holds {MASK!r}, which stands for a stored value, but the entry now "
                "goes to another host or program than the stored one: send the real value"
            )
        if value == MASK and known is not None:
            out[key] = known
        elif isinstance(value, Mapping):
            kept = dict(value)
            for name, given in value.items():
                if given != MASK:
                    continue
                if not isinstance(known, Mapping) or name not in known:
                    raise ValueError(
                        f"{key} value {name!r} is {MASK!r}, which stands for a stored value, "
                        "but none is stored under that name: send the real value"
                    )
                kept[name] = known[name]
            out[key] = kept
    url = out.get("url")
    if isinstance(url, str) and f"{MASK}@" in url:
        out["url"] = _keep_userinfo(url, before.get("url"))
    return out


def _target(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """Where an entry's secrets go: its URL's scheme, host and port, else its command
    and arguments."""
    url = entry.get("url")
    if isinstance(url, str):
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(url)
            return ("url", parts.scheme.lower(), parts.netloc.rsplit("@", 1)[-1].lower())
        except ValueError:
            return ("url", url)
    args = entry.get("args")
    return ("command", entry.get("command"), tuple(args) if isinstance(args, list) else args)


def _keep_userinfo(url: str, stored: object) -> str:
    """``url`` with its ``***`` userinfo replaced by the one of ``stored``, which must
    name the same scheme, host and port."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return url  # what checks the entry refuses it
    if not parts.netloc.startswith(f"{MASK}@"):
        return url  # '***@' in a path or a query is not a masked userinfo
    try:
        old = urlsplit(stored) if isinstance(stored, str) else None
    except ValueError:
        old = None
    host = parts.netloc.rsplit("@", 1)[1]
    if old is None or "@" not in old.netloc:
        raise ValueError(
            f"the url's userinfo is {MASK!r}, which stands for a stored one, but the stored "
            "url has none: send the real userinfo"
        )
    info, old_host = old.netloc.rsplit("@", 1)
    if (parts.scheme.lower(), host.lower()) != (old.scheme.lower(), old_host.lower()):
        raise ValueError(
            f"the url's userinfo is {MASK!r}, which stands for the stored one, but the url "
            "names another scheme, host or port than the stored one: send the real userinfo"
        )
    return urlunsplit(parts._replace(netloc=f"{info}@{host}"))
