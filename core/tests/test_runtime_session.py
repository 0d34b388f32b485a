"""The session adapter: prompts, external tools with the configured prefix, resources."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from toolweave import ConfigError, Context, Kind, Tool, ToolSetBuilder, UsageError
from toolweave.catalog import external_tool

pytestmark = pytest.mark.anyio


class File(BaseModel):
    """A path."""

    path: str = "x"
    """Where."""


class ReadFile(Tool[File, str]):
    """Reads."""

    id = "read_file"
    kind = Kind.READ
    description = "Read a file."

    async def run(self, ctx: Context, args: File) -> str:
        """Pretend."""
        return "content"


class Greeting:
    """A resource a tool uses."""

    def __init__(self, text: str) -> None:
        self.text = text


class Greet(Tool[File, str]):
    """Uses the greeting resource."""

    id = "greet"

    async def run(self, ctx: Context, args: File) -> str:
        """Greet."""
        return ctx.require(Greeting).text


def remote(name: str, read_only: bool = True) -> Any:
    async def call(ctx: Any, arguments: dict[str, Any]) -> str:
        return f"{name}:{arguments.get('q')}"

    return external_tool(
        id=name,
        namespace="ext",
        description=f"Remote {name}.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        call=call,
        read_only=read_only,
    )


def toolset(**config: Any) -> Any:
    builder = ToolSetBuilder()
    builder.add_all([ReadFile, Greet])
    return builder.build(config or None)


async def test_render_prompt_uses_the_description_placeholders(tmp_path: Path) -> None:
    """A prompt template names tools by kind, as descriptions do; unknown kinds fail."""
    s = toolset().session(workspace=tmp_path)
    assert s.render_prompt("Use {tool:read} first.") == "Use read_file first."
    with pytest.raises(ConfigError):
        s.render_prompt("Use {tool:edit}.")


async def test_external_tools_carry_the_configured_prefix(tmp_path: Path) -> None:
    """External tools join under the set's prefix, list after built-in tools (or not),
    run, and leave again."""
    s = toolset(external_prefix="ext__", external_timeout=7).session(workspace=tmp_path)
    before = s.external_version
    entry = s.register_external(remote("lookup"))
    assert entry.name == "ext__lookup"
    assert entry.timeout == 7
    assert s.external_version == before + 1
    names = [d["function"]["name"] for d in s.definitions("openai")]
    assert names == ["read_file", "greet", "ext__lookup"]
    assert [d["name"] for d in s.definitions("anthropic", include_external=False)] == [
        "read_file",
        "greet",
    ]
    assert (await s.call("ext__lookup", {"q": "hi"})).text == "lookup:hi"
    with pytest.raises(UsageError, match="already registered"):
        s.register_external(remote("lookup"))
    assert s.unregister_external("ext__lookup")
    assert not s.unregister_external("ext__lookup")
    assert (await s.call("ext__lookup", {})).error is not None


async def test_read_only_set_refuses_writing_external_tools(tmp_path: Path) -> None:
    """A set in read_only mode accepts only read-only external tools."""
    s = toolset(mode="read_only").session(workspace=tmp_path)
    with pytest.raises(UsageError, match="read_only"):
        s.register_external(remote("mutate", read_only=False))
    assert s.register_external(remote("lookup")).name == "lookup"


async def test_session_resources_are_readable_and_writable(tmp_path: Path) -> None:
    """The host sets a resource on one session; its tools see it, other sessions do not."""
    ts = toolset()
    s = ts.session(workspace=tmp_path)
    assert s.get_resource(Greeting) is None
    s.set_resource(Greeting("hello"))
    greeting = s.get_resource(Greeting)
    assert greeting is not None
    assert greeting.text == "hello"
    assert (await s.call("greet", {})).text == "hello"
    other = ts.session(workspace=tmp_path)
    assert (await other.call("greet", {})).error is not None
