"""toolweave-search: find files by content (``grep``) and by path pattern (``glob``).

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``search``); ``load_packs(include=["search"])`` loads it
alone. With the ``rg`` extra (``pip install 'toolweave-search[rg]'``) searches run on
ripgrep; without it, a pure-Python engine returns the same results, slower.
"""

from __future__ import annotations

from toolweave_search import _pack as pack
from toolweave_search._engine import Engine
from toolweave_search._glob import Glob, GlobArgs, GlobOutput, GlobParams
from toolweave_search._grep import Grep, GrepArgs, GrepOutput, GrepParams
from toolweave_search._results import OutputMode
from toolweave_search._rgengine import find_ripgrep

__all__ = [
    "Engine",
    "Glob",
    "GlobArgs",
    "GlobOutput",
    "GlobParams",
    "Grep",
    "GrepArgs",
    "GrepOutput",
    "GrepParams",
    "OutputMode",
    "find_ripgrep",
    "pack",
]
