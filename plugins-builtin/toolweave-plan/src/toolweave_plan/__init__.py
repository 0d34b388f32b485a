"""toolweave-plan."""

from __future__ import annotations

from toolweave_plan import _pack as pack

__all__ = ["pack"]
