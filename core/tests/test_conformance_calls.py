"""The conformance kit calls every tool once (declared examples, else generated
arguments) and reports the tools that break: a plain exception, a wrong output shape,
a stream without a result. ToolError results are fine; unavailable tools are skipped."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel
from toolweave import (
    Context,
    ErrorKind,
    Progress,
    Tool,
    ToolError,
    ToolSet,
    ToolSetBuilder,
    tool,
)
from toolweave.testing import CHECKS, check_toolset

ONLY_CALLS = [c for c in CHECKS if c != "calls"]


class PathArgs(BaseModel):
    path: str
    """A path in the workspace."""


class Listing(BaseModel):
    names: list[str]


def _set(*tools: Any) -> ToolSet:
    builder = ToolSetBuilder()
    builder.add_all(tools)
    return builder.build()


class Crashes(Tool[PathArgs, str]):
    id = "crashes"

    async def run(self, ctx: Context, args: PathArgs) -> str:
        raise KeyError(args.path)


class WrongShape(Tool[PathArgs, Listing]):
    id = "wrong_shape"

    async def run(self, ctx: Context, args: PathArgs) -> Any:
        return {"files": [args.path]}


class NoResult(Tool[PathArgs, str]):
    id = "no_result"

    async def stream(self, ctx: Context, args: PathArgs) -> AsyncIterator[Progress | str]:
        yield Progress(message="working")


class Missing(Tool[PathArgs, str]):
    id = "missing"

    async def run(self, ctx: Context, args: PathArgs) -> str:
        raise ToolError(ErrorKind.NOT_FOUND, f"no file {args.path}")


class NeedsHandler(Tool[PathArgs, str]):
    id = "needs_handler"

    async def run(self, ctx: Context, args: PathArgs) -> str:
        raise ToolError(ErrorKind.UNAVAILABLE, "no user to ask in this session")


@pytest.mark.parametrize(
    ("tool_cls", "expected"),
    [
        (Crashes, "raised KeyError instead of failing with a ToolError"),
        (WrongShape, "returned an output its declared Output does not accept"),
        (NoResult, "streamed to its end without a result"),
    ],
    ids=["exception", "shape", "no-result"],
)
def test_broken_tools_are_reported(tool_cls: type[Tool[Any, Any]], expected: str) -> None:
    """Each way of breaking is one `calls` problem naming the tool."""
    problems = check_toolset(_set(tool_cls), skip=ONLY_CALLS)
    assert [(p.check, p.tool) for p in problems] == [("calls", tool_cls.id)]
    assert expected in problems[0].message


def test_tool_errors_pass_and_unavailable_tools_are_skipped_with_a_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """not_found for a generated path is fine; unavailable is logged as a skip."""
    with caplog.at_level(logging.INFO, logger="toolweave.testing"):
        problems = check_toolset(_set(Missing, NeedsHandler), skip=ONLY_CALLS)
    assert problems == []
    assert "needs_handler: no user to ask in this session" in caplog.text


def test_declared_examples_are_what_the_tool_is_called_with() -> None:
    """@tool(examples=[...]) drives the calls; a refused example is a problem."""
    seen: list[int] = []

    @tool(examples=[{"count": 2}, {"count": 3}], blocking=False)
    def counted(count: int) -> str:
        """Count. Not for anything else.

        Args:
            count: How many.
        """
        seen.append(count)
        return str(count)

    @tool(examples=[{"count": "many"}], blocking=False)
    def refused(count: int) -> str:
        """Count. Not for anything else.

        Args:
            count: How many.
        """
        return str(count)

    problems = check_toolset(_set(counted, refused), skip=ONLY_CALLS)
    assert seen == [2, 3]
    assert [(p.check, p.tool) for p in problems] == [("calls", "refused")]
    assert "its example" in problems[0].message


def test_generated_arguments_reach_the_tool() -> None:
    """Without examples the tool is called once with minimal arguments from its schema."""
    seen: list[str] = []

    class Records(Tool[PathArgs, str]):
        id = "records"

        async def run(self, ctx: Context, args: PathArgs) -> str:
            seen.append(args.path)
            return "ok"

    assert check_toolset(_set(Records), skip=ONLY_CALLS) == []
    assert seen == ["x"]
