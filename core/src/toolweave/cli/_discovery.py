"""Which configuration file a command uses: ``--config``, else ``$TOOLWEAVE_CONFIG``, else
the nearest ``toolweave.toml`` (or ``toolweave.json``) from the workspace upwards.

The search goes from the start folder up through its parents and stops at the first
folder that is a repository root (it holds ``.git``), which is searched, or at the home
folder, which is not (unless the command starts there): a file in the home folder would
apply to every project in it.
``--no-config`` turns the search off (and ignores ``$TOOLWEAVE_CONFIG``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from toolweave.cli._common import fail

__all__ = ["CONFIG_ENV", "CONFIG_NAMES", "NoConfigOpt", "find_config", "resolve_config"]

logger = logging.getLogger("toolweave.cli")

CONFIG_ENV = "TOOLWEAVE_CONFIG"
"""A configuration file to use when ``--config`` is not given."""
CONFIG_NAMES = ("toolweave.toml", "toolweave.json")
"""The file names looked for in each folder, in this order."""

NoConfigOpt = Annotated[
    bool,
    typer.Option(
        "--no-config",
        help=f"Use no configuration file: neither ${CONFIG_ENV} nor a toolweave.toml "
        "found in the workspace or its parents.",
    ),
]


def find_config(start: Path, home: Path | None = None) -> Path | None:
    """The nearest ``toolweave.toml`` / ``toolweave.json`` from ``start`` upwards, up to
    the repository root (a folder holding ``.git``, searched) or ``home`` (not searched,
    unless it is ``start``); ``None`` when there is none."""
    stop = (home if home is not None else Path.home()).resolve()
    first = folder = start.resolve()
    while True:
        if folder == stop and folder != first:
            return None
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        folder = folder.parent


def resolve_config(
    given: Path | None,
    off: bool,
    start: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path | None:
    """The configuration file of a command (see the module's docstring); which one and
    why is logged (seen with ``toolweave -v``).

    Raises:
        CliError: ``--config`` comes with ``--no-config``, or ``$TOOLWEAVE_CONFIG`` names
            no file.
    """
    if given is not None:
        if off:
            fail("--config and --no-config exclude each other", "pick one", 2)
        logger.info("configuration: %s (--config)", given)
        return given
    if off:
        logger.info("configuration: none (--no-config)")
        return None
    env = (os.environ if environ is None else environ).get(CONFIG_ENV, "").strip()
    if env:
        path = Path(env)
        if not path.is_file():
            fail(
                f"${CONFIG_ENV} names {env}, which is not a file",
                f"fix or unset {CONFIG_ENV}, or pass --no-config",
                2,
            )
        logger.info("configuration: %s ($%s)", path, CONFIG_ENV)
        return path
    root = start or Path.cwd()
    found = find_config(root)
    if found is None:
        logger.info("configuration: none found from %s (every loaded pack's tools)", root)
    else:
        logger.info("configuration: %s (found from %s)", found, root)
    return found
