"""Model-driven search: the ``search_tools`` meta-tool a model calls to find tools the
turn did not inject, and its native forms where a provider defers tool loading.

Three renderings of the same search (see :meth:`Selection.definitions
<toolweave.inject.Selection.definitions>`):

- **plain** (Chat Completions, Gemini, MCP, and any format with ``native=False``): a
  function tool ``search_tools(query, limit)``; the tools it finds are listed after the
  injected ones from the model's next step on.
- **Anthropic** (``anthropic``): the same tool, every other tool the session may use
  sent with ``defer_loading: true``, and the search's ``tool_result`` made of
  ``tool_reference`` blocks (Anthropic's custom tool search): the API loads the found
  definitions where the reference stands, so the tool list, and the cached prompt
  prefix, stay as they were.
- **OpenAI Responses** (``openai-responses``): a client-executed ``tool_search`` tool;
  the model's ``tool_search_call`` is answered with a ``tool_search_output`` item that
  carries the found definitions (loaded at the end of the context, cache-preserving).

Every form runs the injector's classifier over the tools the session may use that are
not already in the turn, so what the model finds obeys the same role and status filters
as what the injector chose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolweave.errors import preview
from toolweave.formats._frozen import freeze
from toolweave.inject._classify import Candidate, ToolDoc
from toolweave.inject._text import words

if TYPE_CHECKING:
    from toolweave.catalog._erasure import ErasedTool
    from toolweave.inject._injector import Injector

__all__ = [
    "SEARCH_DESCRIPTION",
    "SEARCH_NAME",
    "SEARCH_SCHEMA",
    "KeywordClassifier",
    "deferred",
    "responses_tool_search",
    "search_tool",
]

SEARCH_NAME = "search_tools"
"""The meta-tool's default client name."""

SEARCH_DESCRIPTION = (
    "Find tools that are not in your tool list yet. Describe in a few words what you "
    "need to do (for example 'send an email' or 'query the orders database'); the best "
    "matching tools are returned with their descriptions and become callable in your "
    "next step. Do not use it to run a tool, or to look for tools you already have: it "
    "only finds tools."
)
"""What the model reads about ``search_tools``."""

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "What you need a tool for, in a few words.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 20,
            "description": "How many tools to return at most (default 5).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
"""The arguments of ``search_tools`` (and of the Responses API's client ``tool_search``)."""


def search_tool(injector: Injector, name: str) -> ErasedTool:
    """The erased handle of ``search_tools`` for ``injector`` (an external tool, so a
    call takes the session's one pipeline: hooks, audit, deadline)."""
    from toolweave.catalog._external import external_tool

    async def call(ctx: Any, arguments: dict[str, Any]) -> tuple[Any, str]:
        query = str(arguments.get("query", ""))
        limit = arguments.get("limit")
        found = injector.search(query, limit=limit if isinstance(limit, int) else None)
        output = {
            "query": preview(query),  # a short preview: a query can be of any size
            "found": [{"name": c.name, "confidence": round(c.confidence or 0.0, 4)} for c in found],
        }
        return output, injector._search_text(query, found)

    return external_tool(
        id=name,
        namespace="toolweave_inject",
        description=SEARCH_DESCRIPTION,
        input_schema=SEARCH_SCHEMA,
        call=call,
        source="toolweave:inject",
        read_only=True,
        timeout=30.0,
    )


def deferred(definition: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic tool definition marked ``defer_loading: true`` (read-only, as
    listings are)."""
    result: dict[str, Any] = freeze({**definition, "defer_loading": True})
    return result


def responses_tool_search() -> dict[str, Any]:
    """The Responses API's client-executed ``tool_search`` tool (``ToolSearchToolParam``)."""
    result: dict[str, Any] = freeze(
        {
            "type": "tool_search",
            "execution": "client",
            "description": SEARCH_DESCRIPTION,
            "parameters": SEARCH_SCHEMA,
        }
    )
    return result


# -- a classifier for when no other is configured ----------------------------------------


class KeywordClassifier:
    """A small keyword matcher: the share of the query's words (stemmed) found in a
    tool's name, description, parameters, groups and examples, words of the name
    counting double. Used when no other classifier is given and the default fusion is
    not installed; good enough for ``search_tools`` over a few dozen tools, not a
    retrieval model.
    """

    name = "keywords"

    def __init__(self) -> None:
        self._docs: list[tuple[str, frozenset[str], frozenset[str], tuple[str, ...]]] = []

    def index(self, docs: Sequence[ToolDoc]) -> None:
        """Index ``docs``."""
        self._docs = [
            (
                d.name,
                frozenset(words(d.name)),
                frozenset(words(" ".join((d.description, *d.parameters, *d.groups, *d.examples)))),
                d.groups,
            )
            for d in docs
        ]

    def rank(self, query: str, history: Sequence[str] = (), k: int = 15) -> list[Candidate]:
        """The tools sharing most words with ``query`` (the history is not used)."""
        wanted = set(words(query))
        if not wanted:
            return []
        scored: list[Candidate] = []
        for name, in_name, in_text, groups in self._docs:
            hits = sum(2.0 if w in in_name else 1.0 if w in in_text else 0.0 for w in wanted)
            if hits:
                confidence = min(1.0, hits / (2 * len(wanted)) + 0.25)
                scored.append(Candidate(name, confidence, f"keywords {hits:g}", groups))
        scored.sort(key=lambda c: -c.confidence)
        return scored[:k]
