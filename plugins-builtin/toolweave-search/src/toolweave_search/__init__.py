"""toolweave-search."""

from __future__ import annotations

from toolweave_search import _pack as pack

__all__ = ["pack"]
