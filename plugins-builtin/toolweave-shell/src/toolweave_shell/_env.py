"""The environment a command runs with: an allow-list of the host's, never its secrets."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

__all__ = ["SAFE_VARIABLES", "command_environment"]

SAFE_VARIABLES: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "TMPDIR",
    "TZ",
)
"""Variables of the host's environment that commands get by default (``fnmatch``
patterns, case-sensitive): where programs are, who and where the user is, language,
terminal, temp folder, time zone. Nothing that usually holds a credential."""


def command_environment(
    host: Mapping[str, str] | None,
    *,
    inherit: bool = False,
    passthrough: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a command.

    Args:
        host: The session's ``Environment`` resource, when the host gave one: then it
            is used as it is (the host chose it).
        inherit: Without ``host``: pass this process's whole environment (secrets and
            all) instead of the allow-list.
        passthrough: Without ``host``: more names or patterns of this process's
            environment to pass, besides :data:`SAFE_VARIABLES`.
        extra: Variables set for every command, over everything else.
    """
    if host is not None:
        env = dict(host)
    elif inherit:
        env = dict(os.environ)
    else:
        patterns = (*SAFE_VARIABLES, *passthrough)
        env = {
            name: value
            for name, value in os.environ.items()
            if any(fnmatchcase(name, pattern) for pattern in patterns)
        }
    if extra:
        env.update(extra)
    return env
