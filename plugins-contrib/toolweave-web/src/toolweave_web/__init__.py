"""toolweave-web: read web pages (``web_fetch``) and search the web (``web_search``).

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``web``); ``load_packs(include=["web"])`` loads it alone.
``web_fetch`` refuses private, loopback and link-local addresses unless its params
allow them, checked after DNS resolution and again on every redirect.
``web_search`` needs a SearxNG-compatible endpoint in its ``base_url`` param.
"""

from __future__ import annotations

from toolweave_web import _pack as pack
from toolweave_web._convert import Converted, html_to_markdown
from toolweave_web._fetch import WebFetch, WebFetchArgs, WebFetchParams, WebPage
from toolweave_web._guard import (
    AddressCategory,
    AddressPolicy,
    HostsResolver,
    Resolver,
    category_of,
    checked_addresses,
)
from toolweave_web._search import (
    SearchHit,
    SearchResults,
    WebSearch,
    WebSearchArgs,
    WebSearchParams,
)

__all__ = [
    "AddressCategory",
    "AddressPolicy",
    "Converted",
    "HostsResolver",
    "Resolver",
    "SearchHit",
    "SearchResults",
    "WebFetch",
    "WebFetchArgs",
    "WebFetchParams",
    "WebPage",
    "WebSearch",
    "WebSearchArgs",
    "WebSearchParams",
    "category_of",
    "checked_addresses",
    "html_to_markdown",
    "pack",
]
