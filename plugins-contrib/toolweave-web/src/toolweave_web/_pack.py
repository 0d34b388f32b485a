"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import ToolSetBuilder, hookimpl

from toolweave_web._fetch import WebFetch
from toolweave_web._search import WebSearch


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register ``web_fetch`` and ``web_search``."""
    builder.add(WebFetch)
    builder.add(WebSearch)
