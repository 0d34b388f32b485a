"""The pack's hook implementations."""

from __future__ import annotations
