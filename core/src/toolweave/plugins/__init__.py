"""Packs: hook specifications and the loader."""

from toolweave.plugins._check import check_config
from toolweave.plugins._loader import ENTRY_POINT_GROUP, PackInfo, PackManager, load_packs
from toolweave.plugins.hookspecs import hookimpl

__all__ = [
    "ENTRY_POINT_GROUP",
    "PackInfo",
    "PackManager",
    "check_config",
    "hookimpl",
    "load_packs",
]
