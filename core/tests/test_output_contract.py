"""A tool's declared Output is enforced: other shapes are validated through it, and what
does not validate is the tool's bug, reported as execution_error."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from toolweave import Context, ErrorKind, Tool, tool
from toolweave.catalog._erasure import erase

pytestmark = pytest.mark.anyio


class Args(BaseModel):
    pass


class Report(BaseModel):
    path: str
    lines: int
    note: str | None = None


def _returning(value: Any, output: Any = Report) -> type[Tool[Args, Any]]:
    """A tool ``report`` that returns ``value`` and declares ``output`` as its Output."""

    class Reporter(Tool[Args, Report]):
        id = "report"

        async def run(self, ctx: Context, args: Args) -> Any:
            return value

    Reporter.output_type = output
    return Reporter


async def test_a_dict_of_the_wrong_shape_is_the_tools_bug(make_session: Any) -> None:
    """A dict that is not a Report fails as execution_error naming the tool and its Output."""
    result = await make_session(_returning({"path": "a.txt", "size": 3})).call("report", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "report returned a dict" in result.text
    assert "declared Output is Report" in result.text
    assert "`lines` is required but missing" in result.text
    assert "bug in the tool" in result.text


async def test_a_huge_wrong_value_is_shown_in_a_short_preview(make_session: Any) -> None:
    """The message previews the value instead of dumping it."""
    huge = {"path": "x" * 100_000, "rows": list(range(100_000))}
    result = await make_session(_returning(huge)).call("report", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert len(result.text) < 1_000


async def test_a_dict_of_the_right_shape_is_serialised_through_the_output(
    make_session: Any,
) -> None:
    """A matching dict is validated into the Output and dumped as it would be."""
    result = await make_session(_returning({"path": "a", "lines": 2})).call("report", {})
    assert result.error is None, result.text
    assert result.output == {"path": "a", "lines": 2, "note": None}


def test_an_instance_of_the_output_costs_no_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Returning an instance of the Output class skips validation; a dict goes through it."""
    calls: list[Any] = []
    original = Report.model_validate

    def counting(value: Any, *args: Any, **kwargs: Any) -> Report:
        calls.append(value)
        return original(value, *args, **kwargs)

    monkeypatch.setattr(Report, "model_validate", counting)
    finish = erase(_returning(None)).finish
    assert finish(Report(path="a", lines=1))[0]["lines"] == 1
    assert calls == []
    assert finish({"path": "a", "lines": 1})[0]["lines"] == 1
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("output", "value"),
    [(str, 5), (list[int], ["x"]), (int, "many"), (Report, "a string")],
    ids=["int-for-str", "list", "int", "str-for-model"],
)
async def test_other_declared_outputs_are_enforced(
    make_session: Any, output: Any, value: Any
) -> None:
    """A value that its declared Output does not accept is execution_error."""
    result = await make_session(_returning(value, output)).call("report", {})
    assert result.error is not None
    assert result.error.kind is ErrorKind.EXECUTION_ERROR
    assert "declared Output is" in result.text


async def test_plain_functions_keep_working(make_session: Any) -> None:
    """@tool functions returning what they declare (or declaring nothing) still succeed."""

    @tool(blocking=False)
    def name() -> str:
        """A name."""
        return "n"

    @tool(blocking=False)
    def total(a: int, b: int) -> int:
        """A sum.

        Args:
            a: One.
            b: Two.
        """
        return a + b

    @tool(blocking=False)
    def anything():  # type: ignore[no-untyped-def]
        """Anything."""
        return {"k": {1, 2}}

    session = make_session(name, total, anything)
    assert (await session.call("name", {})).text == "n"
    assert (await session.call("total", {"a": 1, "b": 2})).text == "3"
    assert (await session.call("anything", {})).output == {"k": [1, 2]}
