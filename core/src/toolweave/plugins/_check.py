"""Checking a configuration against the installed packs."""

from __future__ import annotations

from pathlib import Path

from toolweave.catalog import ToolSetBuilder, ToolSetConfig
from toolweave.catalog._config import read_config_file
from toolweave.errors import ConfigError, ConfigIssue
from toolweave.plugins._loader import PackManager, load_packs

__all__ = ["check_config"]


def check_config(
    path: str | Path | ToolSetConfig,
    packs: PackManager | ToolSetBuilder | None = None,
) -> list[ConfigIssue]:
    """Every problem of a configuration against the installed (or given) packs.

    Args:
        path: A ``.json`` / ``.toml`` file, or an already loaded configuration.
        packs: The packs to check against: a loaded :class:`~toolweave.PackManager`, a
            builder holding registered tools, or ``None`` to discover the installed
            packs.

    Returns:
        The problems, empty when the configuration builds. Deprecated versions are not
        problems; they are reported as :class:`~toolweave.DeprecatedVersionWarning`.
    """
    try:
        config = path if isinstance(path, ToolSetConfig) else read_config_file(path)
    except ConfigError as exc:
        return list(exc.issues)
    if isinstance(packs, ToolSetBuilder):
        builder = packs
    else:
        builder = (packs if packs is not None else load_packs()).builder()
    return builder.validate(config)
