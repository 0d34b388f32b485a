"""The ``web_search`` tool: a SearxNG-compatible JSON search API the host points to."""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import urlencode

from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolError, ToolOutput, preview

from toolweave_web._guard import AddressPolicy, Resolver
from toolweave_web._http import FetchRules, HttpLimits, fetch

__all__ = ["SearchHit", "SearchResults", "WebSearch", "WebSearchArgs", "WebSearchParams"]

TimeRange = Literal["day", "week", "month", "year"]


class WebSearchArgs(BaseModel):
    """Arguments of ``web_search``."""

    query: str = Field(
        min_length=1,
        max_length=500,
        description="What to search for, as you would type it into a search engine.",
    )
    """The query."""

    max_results: int | None = Field(
        default=None,
        ge=1,
        le=50,
        description="The most results to return (default set by the host).",
    )
    """The most results returned."""

    page: int = Field(default=1, ge=1, le=10, description="Result page, for more results.")
    """Which page of results."""

    time_range: TimeRange | None = Field(
        default=None, description="Only results from the last day, week, month or year."
    )
    """Recency filter."""

    language: str | None = Field(
        default=None,
        max_length=20,
        description="Language of the results, e.g. `en`, `de`, `fr-CA` (default: the engine's).",
    )
    """Result language."""


class WebSearchParams(BaseModel):
    """Configuration of ``web_search``."""

    base_url: str | None = None
    """The SearxNG instance (``http://127.0.0.1:8888``); the tool is unavailable without
    it. Its settings must list ``json`` under ``search.formats``."""

    max_results: int = Field(default=8, ge=1, le=50)
    """Results returned when the call does not say."""

    categories: str | None = None
    """SearxNG categories to search (``general``, ``it,science``)."""

    engines: str | None = None
    """SearxNG engines to use (``duckduckgo,wikipedia``); default: the instance's."""

    safesearch: int = Field(default=1, ge=0, le=2)
    """0 off, 1 moderate, 2 strict."""

    timeout: float = Field(default=20.0, gt=0)
    """Seconds for the request."""

    max_bytes: int = Field(default=2_000_000, ge=1_000)
    """The largest answer read."""


class SearchHit(BaseModel):
    """One result."""

    title: str
    """The page's title."""

    url: str
    """Where it is."""

    snippet: str = ""
    """The engine's excerpt."""

    published: str | None = None
    """The publication date, when the engine knows it."""


class SearchResults(ToolOutput):
    """What ``web_search`` returns."""

    query: str
    """The query searched."""

    results: list[SearchHit]
    """The results, best first."""

    answers: list[str] = Field(default_factory=list)
    """Direct answers some engines give."""

    suggestions: list[str] = Field(default_factory=list)
    """Other queries the engines suggest."""

    def to_model(self) -> str:
        """Numbered results: title, URL, excerpt."""
        if not self.results and not self.answers:
            text = f"No results for {self.query!r}."
            if self.suggestions:
                text += " Try: " + "; ".join(self.suggestions[:5])
            return text
        lines = [f"Answer: {answer}" for answer in self.answers]
        for number, hit in enumerate(self.results, 1):
            date = f" ({hit.published[:10]})" if hit.published else ""
            lines.append(f"{number}. {hit.title}{date}\n   {hit.url}")
            if hit.snippet:
                lines.append(f"   {hit.snippet}")
        return "\n".join(lines)


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if value else ""


def _hits(data: Any, limit: int) -> list[SearchHit]:
    hits: list[SearchHit] = []
    for item in data.get("results", []) if isinstance(data, dict) else []:
        if not isinstance(item, dict) or not item.get("url"):
            continue
        hits.append(
            SearchHit(
                title=_text(item.get("title")) or str(item["url"]),
                url=str(item["url"]),
                snippet=_text(item.get("content"))[:500],
                published=_text(item.get("publishedDate")) or None,
            )
        )
        if len(hits) >= limit:
            break
    return hits


def _strings(data: Any, key: str) -> list[str]:
    """Plain strings of a list (newer SearxNG answers are ``{"answer": ...}`` objects)."""
    values = data.get(key, []) if isinstance(data, dict) else []
    found = [v.get("answer") if isinstance(v, dict) else v for v in values]
    return [_text(v) for v in found if isinstance(v, str | int | float) and _text(v)]


class WebSearch(Tool[WebSearchArgs, SearchResults]):
    """Search the web through the host's SearxNG instance."""

    id = "web_search"
    namespace = "web"
    kind = Kind.WEB_SEARCH
    description = """\
Search the web and get a ranked list of results (title, URL, excerpt). Use it to find \
pages about something, current information, or documentation whose URL you do not \
know; then read the promising pages with the web fetch tool.

Do not use it to read a page whose URL you already have, and do not trust excerpts \
for details: fetch the page. Narrow with `{param:time_range}` for recent events."""
    capabilities = Capabilities(read_only=True, scope="network", timeout=60.0)
    params = WebSearchParams

    async def run(self, ctx: Context, args: WebSearchArgs) -> SearchResults:
        """Ask the configured instance for JSON results and keep the first few."""
        params = ctx.params(WebSearchParams)
        if not params.base_url:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "web search is not configured: the host must set web_search's `base_url` "
                "param to a SearxNG instance with the JSON format enabled",
            )
        query: dict[str, str | int] = {
            "q": args.query,
            "format": "json",
            "pageno": args.page,
            "safesearch": params.safesearch,
        }
        for key, value in (
            ("time_range", args.time_range),
            ("language", args.language),
            ("categories", params.categories),
            ("engines", params.engines),
        ):
            if value:
                query[key] = value
        url = f"{params.base_url.rstrip('/')}/search?{urlencode(query)}"
        rules = FetchRules(
            policy=AddressPolicy(check=False),  # the host chose this endpoint, not the model
            resolver=ctx.get(Resolver) or Resolver(),
            limits=HttpLimits(
                max_redirects=3,
                max_bytes=params.max_bytes,
                timeout=params.timeout,
                accept="application/json",
            ),
            accept_type=lambda media, head: None,
        )
        fetched = await fetch(url, rules)
        try:
            data = json.loads(fetched.body)
        except ValueError:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"the search endpoint answered {fetched.media_type or 'something'} that is not "
                f"JSON ({preview(fetched.body[:200].decode('utf-8', 'replace'))!r}); is `json` "
                "listed under search.formats in its settings?",
            ) from None
        limit = min(args.max_results or params.max_results, 50)
        return SearchResults(
            query=args.query,
            results=_hits(data, limit),
            answers=_strings(data, "answers"),
            suggestions=_strings(data, "suggestions"),
        )
