"""Tool.should_list: a tool can leave itself out of one session's listing."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel
from toolweave import Context, MemoryStateStore, Resources, Tool, ToolSetBuilder


class NoArgs(BaseModel):
    """No arguments."""


class Offline:
    """A session resource saying the network is unreachable."""


class Fetch(Tool[NoArgs, str]):
    """Listed only where the network is reachable; counts how often it is asked."""

    id = "fetch"
    asked = 0

    def should_list(self, ctx: Context) -> bool:
        """Not in offline sessions."""
        type(self).asked += 1
        return ctx.get(Offline) is None

    async def run(self, ctx: Context, args: NoArgs) -> str:
        """Pretend to fetch."""
        return "fetched"


class Plain(Tool[NoArgs, str]):
    """Always listed."""

    id = "plain"

    async def run(self, ctx: Context, args: NoArgs) -> str:
        """Do nothing."""
        return "plain"


class Broken(Tool[NoArgs, str]):
    """Its should_list raises."""

    id = "broken"

    def should_list(self, ctx: Context) -> bool:
        """Fail."""
        raise RuntimeError("cannot decide")

    async def run(self, ctx: Context, args: NoArgs) -> str:
        """Do nothing."""
        return "broken"


def _names(definitions: list[dict[str, object]]) -> list[object]:
    return [d["name"] for d in definitions]


@pytest.mark.anyio
async def test_tools_that_say_no_are_left_out_of_this_session_only(tmp_path: Path) -> None:
    """An offline session lists no fetch (in every format) yet can still call it; an
    online session lists it; each session asks once, however often it lists."""
    builder = ToolSetBuilder()
    builder.add_all([Plain, Fetch])
    toolset = builder.build()
    Fetch.asked = 0
    offline_resources = Resources()
    offline_resources.insert(Offline())
    offline = toolset.session(
        resources=offline_resources, workspace=tmp_path, state_store=MemoryStateStore()
    )
    online = toolset.session(workspace=tmp_path, state_store=MemoryStateStore())
    for _ in range(3):
        assert _names(offline.definitions("neutral")) == ["plain"]
        assert [d["function"]["name"] for d in offline.definitions("openai")] == ["plain"]
        assert _names(online.definitions("neutral")) == ["plain", "fetch"]
    assert Fetch.asked == 2
    assert (await offline.call("fetch", {})).text == "fetched"
    assert "fetch" not in (await offline.call("nope", {})).text
    assert _names(toolset.definitions("neutral")) == ["plain", "fetch"]


def test_a_should_list_that_raises_lists_the_tool(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A broken should_list is logged and the tool listed, never a failed listing."""
    builder = ToolSetBuilder()
    builder.add_all([Plain, Broken])
    session = builder.build().session(workspace=tmp_path)
    assert _names(session.definitions("neutral")) == ["plain", "broken"]
    assert "should_list of broken raised" in caplog.text
