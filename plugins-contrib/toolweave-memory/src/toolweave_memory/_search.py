"""The ``memory_search`` tool: ranked full-text search over saved memories."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, Kind, Tool, ToolOutput

from toolweave_memory._scopes import SHARED, Tag, store_for, visible_scopes
from toolweave_memory._store import fts_query

__all__ = ["FoundMemory", "MemorySearch", "MemorySearchArgs", "MemorySearchParams", "SearchResult"]


class MemorySearchArgs(BaseModel):
    """Arguments of ``memory_search``."""

    query: str | None = Field(
        default=None,
        max_length=1_000,
        description=(
            "Words to look for (any order; stemmed, so `test` finds `testing`). Omit to "
            "list the most recent memories."
        ),
    )
    """What to search for."""

    tags: list[Tag] = Field(
        default_factory=list,
        max_length=20,
        description="Only memories carrying every one of these tags.",
    )
    """Required tags."""

    scope: Literal["all", "shared", "session"] = Field(
        default="all",
        description="`all` (shared and this session's), `shared`, or `session` only.",
    )
    """Which memories to search."""

    match: Literal["any", "all"] = Field(
        default="any",
        description="`any`: memories with any of the words, best first; `all`: every word.",
    )
    """How words combine."""

    limit: int | None = Field(
        default=None, ge=1, le=100, description="The most memories to return."
    )
    """The most results."""

    include_content: bool = Field(
        default=False, description="Return each memory's whole text, not a snippet."
    )
    """Whole texts instead of snippets."""


class MemorySearchParams(BaseModel):
    """Configuration of ``memory_search``."""

    default_limit: int = Field(default=10, ge=1, le=100)
    """Results returned when the call sets no ``limit``."""

    highlight_start: str = "**"
    """Put before each matching word in a snippet."""

    highlight_end: str = "**"
    """Put after each matching word in a snippet."""

    snippet_words: int = Field(default=16, ge=4, le=64)
    """Words in a snippet."""


class FoundMemory(BaseModel):
    """One memory in a search result."""

    id: int
    """Its id."""

    title: str
    """Its title (may be empty)."""

    snippet: str
    """The matching fragment, or the whole text with ``include_content``."""

    tags: list[str]
    """Its tags."""

    scope: Literal["shared", "session"]
    """Who sees it."""

    score: float
    """BM25 relevance, higher is better (0 for a listing without a query)."""

    updated_at: str
    """When it last changed (ISO 8601, UTC)."""


class SearchResult(ToolOutput):
    """What ``memory_search`` returns."""

    query: str | None
    """The query, if any."""

    memories: list[FoundMemory]
    """The memories found, best (or newest) first."""

    query_has_words: bool = True
    """Whether the query held a word to search for (letters or digits); a query without
    any (``'!!!'``, an emoji) searches nothing, and the newest memories are listed."""

    def to_model(self) -> str:
        """A count, then each memory: ``[id] title (tags, scope, date)`` and its snippet."""
        if self.query and not self.query_has_words:
            unsearched = (
                f"The query {self.query!r} has no words to search for (only letters and "
                "digits are searched), so nothing was searched"
            )
            if not self.memories:
                return f"{unsearched}; search again with words."
            head = f"{unsearched}; search again with words. The most recent memories instead"
        elif not self.memories:
            return "No memories found." if self.query else "No memories saved yet."
        elif self.query:
            head = f"matching {self.query!r}"
        else:
            head = "most recent first"
        count = len(self.memories)
        noun = f"{count} memor{'y' if count == 1 else 'ies'}"
        if self.query and not self.query_has_words:
            lines = [f"{head} ({noun}):"]
        else:
            lines = [f"{noun} ({head}):"]
        for memory in self.memories:
            facts = [*memory.tags, memory.scope, memory.updated_at[:10]]
            title = f" {memory.title}" if memory.title else ""
            lines.append(f"[{memory.id}]{title} ({', '.join(facts)})")
            lines.extend(f"    {line}" for line in memory.snippet.splitlines() or [""])
        return "\n".join(lines)


class MemorySearch(Tool[MemorySearchArgs, SearchResult]):
    """Search memories with SQLite FTS5, ranked by BM25."""

    id = "memory_search"
    namespace = "memory"
    kind = Kind.MEMORY_SEARCH
    description = """\
Search what was remembered in earlier sessions of this workspace (and this one): \
user preferences, decisions, facts about the project. Results are ranked by \
relevance, titles weighing most, with the matching words highlighted; filter by \
`{param:tags}`. Search before asking the user something they may have told you already.

Not for searching files or code (use the file search tools) nor the web."""
    capabilities = Capabilities(read_only=True, scope="workspace", timeout=30.0)
    params = MemorySearchParams

    def run(self, ctx: Context, args: MemorySearchArgs) -> SearchResult:
        """Search the visible scopes."""
        params = ctx.params(MemorySearchParams)
        shared, own = visible_scopes(ctx)
        scopes = {"all": (shared, own), "shared": (shared,), "session": (own,)}[args.scope]
        query = args.query.strip() if args.query and args.query.strip() else None
        has_words = query is None or fts_query(query) is not None
        hits = store_for(ctx).search(
            query if has_words else None,
            scopes=scopes,
            tags=args.tags,
            match_all=args.match == "all",
            limit=args.limit or params.default_limit,
            highlight=(params.highlight_start, params.highlight_end),
            snippet_words=params.snippet_words,
        )
        return SearchResult(
            query=query,
            query_has_words=has_words,
            memories=[
                FoundMemory(
                    id=hit.memory.id,
                    title=hit.memory.title,
                    snippet=hit.memory.content if args.include_content else hit.snippet,
                    tags=list(hit.memory.tags),
                    scope="shared" if hit.memory.scope == SHARED else "session",
                    score=hit.score,
                    updated_at=hit.memory.updated_at,
                )
                for hit in hits
            ],
        )
