"""The environment a command runs with: an allow-list of the host's, never its secrets."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from toolweave.resources import SAFE_VARIABLES, safe_environ

__all__ = ["SAFE_VARIABLES", "command_environment"]


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
        env = safe_environ(passthrough)
    if extra:
        env.update(extra)
    return env
