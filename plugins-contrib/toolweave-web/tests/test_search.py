"""``web_search`` against a SearxNG-shaped JSON API served on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, PackManager, Session
from toolweave_web import pack

pytestmark = pytest.mark.anyio


def session_for(workspace: Path, **params: Any) -> Session:
    """A session with ``web_search`` configured by ``params``."""
    packs = PackManager(strict=True)
    packs.add("web", pack)
    config = {"tools": [{"id": "web_search", "params": params}]}
    return packs.builder().build(config).session(workspace=workspace, debug=True)


async def test_results_are_parsed_and_capped(workspace: Path, server: Any) -> None:
    """The endpoint gets the query as JSON search parameters; results come back numbered,
    with whitespace tidied, dates shortened, direct answers first."""
    session = session_for(workspace, base_url=server.base + "/", engines="duckduckgo")
    result = await session.call(
        "web_search",
        {"query": "parse json", "max_results": 3, "time_range": "week", "language": "en"},
    )
    assert result.error is None, result.text
    (sent,) = server.queries
    assert sent["q"] == ["parse json"]
    assert sent["format"] == ["json"]
    assert sent["time_range"] == ["week"]
    assert sent["language"] == ["en"]
    assert sent["engines"] == ["duckduckgo"]
    assert sent["pageno"] == ["1"]
    output = result.output
    assert [hit["url"] for hit in output["results"]] == [
        "https://example.org/1",
        "https://example.org/2",
        "https://example.org/3",
    ]
    assert output["results"][0]["title"] == "Result number 1"
    assert output["answers"] == ["42"]
    assert result.text.startswith("Answer: 42\n1. Result number 1 (2026-01-01)\n")
    assert "   Excerpt of result 2" in result.text
    assert "4. " not in result.text


async def test_default_result_count_comes_from_params(workspace: Path, server: Any) -> None:
    """Without max_results, the params' count applies."""
    session = session_for(workspace, base_url=server.base, max_results=2)
    result = await session.call("web_search", {"query": "x"})
    assert len(result.output["results"]) == 2


async def test_without_an_endpoint_the_tool_is_unavailable(workspace: Path) -> None:
    """No base_url: unavailable, saying which param to set."""
    result = await session_for(workspace).call("web_search", {"query": "anything"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
    assert "base_url" in result.text


async def test_an_endpoint_that_is_not_json(workspace: Path, server: Any) -> None:
    """An HTML answer (JSON format disabled) fails with a hint about search.formats."""
    result = await session_for(workspace, base_url=server.url("/not-json")).call(
        "web_search", {"query": "x"}
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "search.formats" in result.text


async def test_empty_query_is_invalid(workspace: Path, server: Any) -> None:
    """An empty query never reaches the endpoint."""
    result = await session_for(workspace, base_url=server.base).call("web_search", {"query": ""})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert server.queries == []
