"""Spans and the duration metric of every call, read through OpenTelemetry's in-memory
exporter and reader."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Literal

import pytest
from toolweave import (
    CallHook,
    Context,
    ErrorKind,
    HookCall,
    Session,
    ToolError,
    ToolSetBuilder,
    tool,
)
from toolweave.observe import CAPTURE_CONTENT_ENV, RateLimiter, TelemetryHook

pytest.importorskip("opentelemetry.sdk")

pytestmark = pytest.mark.anyio


@tool(blocking=False)
def boom(text: str) -> str:
    """Fail on purpose. Not for anything else.

    Args:
        text: Ignored.
    """
    raise RuntimeError("it broke")


TRACERS: list[Any] = []
"""The tracer ``outer`` opens its span with (set by the test)."""


@tool()
async def outer(ctx: Context, a: int) -> int:
    """Call add from inside, in a span of its own. Not for anything else.

    Args:
        a: A number.
    """
    with TRACERS[-1].start_as_current_span("inside outer"):
        inner = await ctx.call("add", {"a": a, "b": 1})
    return int(inner.output)


@tool(blocking=False)
def add(a: int, b: int) -> int:
    """Sum two integers (the telemetry tests' tool). Not for other arithmetic.

    Args:
        a: One addend.
        b: The other addend.
    """
    return a + b


def _session(otel: Any, **options: Any) -> Session:
    builder = ToolSetBuilder()
    for t in (add, boom, outer):
        builder.add(t)
    session = builder.build().session()
    TelemetryHook(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider, **options
    ).attach(session)
    return session


async def test_a_call_is_one_execute_tool_span_with_the_genai_attributes(otel: Any) -> None:
    """Name, kind INTERNAL, gen_ai.* attributes, no content unless opted in."""
    from opentelemetry.trace import SpanKind, StatusCode

    session = _session(otel)
    assert (await session.call("add", {"a": 2, "b": 3}, "call-1")).text == "5"
    (span,) = otel.spans()
    assert span.name == "execute_tool add"
    assert span.kind is SpanKind.INTERNAL
    attrs = dict(span.attributes)
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == "add"
    assert attrs["gen_ai.tool.call.id"] == "call-1"
    assert attrs["gen_ai.tool.type"] == "function"
    assert attrs["gen_ai.tool.description"].startswith("Sum two integers")
    assert attrs["toolweave.tool.id"] == "main:add"
    assert attrs["toolweave.session.id"] == session.session_id
    assert attrs["toolweave.decision"] == "ok"
    assert "error.type" not in attrs
    assert "gen_ai.tool.call.arguments" not in attrs
    assert "gen_ai.tool.call.result" not in attrs
    assert span.status.status_code is StatusCode.UNSET


async def test_the_duration_metric_is_a_histogram_in_seconds(otel: Any) -> None:
    """gen_ai.execute_tool.duration: unit s, one point per tool and outcome, error.type on
    failures."""
    session = _session(otel)
    for i in range(3):
        await session.call("add", {"a": i, "b": 1})
    await session.call("boom", {"text": "x"})
    points = otel.points("gen_ai.execute_tool.duration")
    assert {metric.unit for metric, _ in points} == {"s"}
    by_tool = {p.attributes["gen_ai.tool.name"]: p for _, p in points}
    assert by_tool["add"].count == 3
    assert dict(by_tool["add"].attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.type": "function",
    }
    assert by_tool["boom"].attributes["error.type"] == "execution_error"
    assert 0 < by_tool["add"].sum < 1


async def test_failures_set_error_type_and_status(otel: Any) -> None:
    """A tool that raises and invalid arguments: each names its kind."""
    from opentelemetry.trace import StatusCode

    session = _session(otel)
    await session.call("boom", {"text": "x"})
    await session.call("add", {"a": "two"})
    spans = {s.attributes["gen_ai.tool.name"]: s for s in otel.spans()}
    assert spans["boom"].attributes["error.type"] == "execution_error"
    assert spans["boom"].attributes["toolweave.decision"] == "error"
    assert spans["boom"].status.status_code is StatusCode.ERROR
    assert spans["add"].attributes["error.type"] == "invalid_params"
    assert spans["add"].attributes["toolweave.decision"] == "invalid"


async def test_arguments_and_results_only_when_opted_in(
    otel: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """capture_content=True, or the GenAI environment switch, records both as JSON."""
    session = _session(otel, capture_content=True)
    await session.call("add", {"a": 2, "b": 3})
    (span,) = otel.spans()
    assert span.attributes["gen_ai.tool.call.arguments"] == '{"a": 2, "b": 3}'
    assert span.attributes["gen_ai.tool.call.result"] == "5"
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    assert TelemetryHook(tracer_provider=otel.tracer_provider).capture_content
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "false")
    assert not TelemetryHook(tracer_provider=otel.tracer_provider).capture_content


@tool(blocking=False)
def login(token: str, mode: Literal["a", "b"] = "a", count: int = 1) -> str:
    """Log in (a stand-in). Not for logging out.

    Args:
        token: The API token.
        mode: The mode.
        count: How many times.
    """
    raise RuntimeError(f"token {token} was refused")


class _Secretive(CallHook):
    """Refuses a call with ``count=2`` with a message that quotes its arguments, and
    data that is not a refusal's."""

    def before(self, call: HookCall) -> ToolError | None:
        if call.arguments["count"] != 2:
            return None
        return ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"cannot log in with {call.arguments}",
            {"scope": "sk-SECRET-data", "limit": "sk-SECRET-limit"},
        )


def _blob(span: Any) -> str:
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    return repr((dict(span.attributes), span.status.description, events))


@pytest.mark.parametrize("capture", [False, True])
async def test_argument_values_reach_spans_only_when_content_is_opted_in(
    otel: Any, capture: bool
) -> None:
    """An invalid value, an unknown argument's name, an exception's text quoting an
    argument, a hook's message and a non-refusal's data: without capture_content the
    span carries the error kind and its fixed meaning, never a value; with it, the
    error's message."""
    from opentelemetry.trace import StatusCode

    builder = ToolSetBuilder()
    builder.add(login)
    session = builder.build().session()
    TelemetryHook(tracer_provider=otel.tracer_provider, capture_content=capture).attach(session)
    session.add_hook(_Secretive())
    calls = [
        {"token": "sk-SECRET-1", "mode": "sk-SECRET-2"},
        {"token": "sk-SECRET-3", "count": "sk-SECRET-4"},
        {"token": "sk-SECRET-5", "sk-SECRET-6": 1},
        {"token": "sk-SECRET-7"},
        {"token": "sk-SECRET-8", "count": 2},
    ]
    for arguments in calls:
        result = await session.call("login", arguments, "c")
        assert result.error is not None
        assert "SECRET" in result.error.message  # the model still sees what went wrong
    spans = otel.spans()
    assert len(spans) == 5
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR
        assert "toolweave.scope" not in span.attributes
        if capture:
            assert "SECRET" in span.status.description
        else:
            assert "SECRET" not in _blob(span), _blob(span)
            kind = span.attributes["error.type"]
            assert span.status.description.startswith(f"{kind}: ")
    if not capture:
        described = [s.status.description for s in spans]
        assert described[0] == (
            "invalid_params: the arguments did not validate against the tool's schema"
        )
        assert described[3] == "execution_error: the tool ran and failed"


async def test_spans_inside_a_call_and_inner_calls_are_children(otel: Any) -> None:
    """A span the tool opens, and the inner call it makes, nest under the call's span."""
    session = _session(otel)
    TRACERS.append(otel.tracer_provider.get_tracer("test"))
    assert (await session.call("outer", {"a": 1})).output == 2
    spans = {s.name: s for s in otel.spans()}
    top, mine, inner = spans["execute_tool outer"], spans["inside outer"], spans["execute_tool add"]
    assert top.parent is None
    assert mine.parent.span_id == top.context.span_id
    assert inner.parent.span_id == mine.context.span_id
    assert inner.attributes["toolweave.call.depth"] == 1
    from opentelemetry import trace

    assert not trace.get_current_span().get_span_context().is_valid  # nothing left attached


class _Refuse(CallHook):
    def admit(self, call: HookCall) -> ToolError:
        return ToolError(ErrorKind.PERMISSION_DENIED, "not today")


async def test_a_refusal_by_an_earlier_hook_and_a_rate_limit_are_recorded(
    otel: Any, tmp_path: Any
) -> None:
    """A hook before telemetry refuses: a span of the refusal; a rate limit: its scope,
    limit and time to retry."""
    session = _session(otel)
    session.add_hook(_Refuse(), first=True)
    await session.call("add", {"a": 1, "b": 1}, "c1")
    (span,) = otel.spans()
    assert span.attributes["error.type"] == "permission_denied"
    assert span.attributes["toolweave.decision"] == "refused"
    assert span.attributes["gen_ai.tool.call.id"] == "c1"

    otel.exporter.clear()
    limited = _session(otel)
    RateLimiter(tmp_path / "c.db", {"per_tool": {"add": "1/minute"}}).attach(limited, role=None)
    await limited.call("add", {"a": 1, "b": 1})
    await limited.call("add", {"a": 1, "b": 1})
    refused = otel.spans()[-1]
    assert refused.attributes["error.type"] == "rate_limited"
    assert refused.attributes["toolweave.scope"] == "per_tool"
    assert refused.attributes["toolweave.limit"] == "1/minute"
    assert 59 < refused.attributes["toolweave.retry_after"] <= 60.001


async def test_the_center_role_and_version_are_recorded(otel: Any, tmp_path: Any) -> None:
    """toolweave.role from the center's hook; toolweave.tool.source for the tool."""
    from toolweave.center import Center

    session = _session(otel)
    center = Center.open(tmp_path / "c.db")
    try:
        session.remove_hook(session.hooks[0])
        center.attach(session, role="common_user")
        TelemetryHook(tracer_provider=otel.tracer_provider).attach(session)
        await session.call("add", {"a": 1, "b": 1})
    finally:
        center.close()
    (span,) = otel.spans()
    assert span.attributes["toolweave.role"] == "common_user"
    assert span.attributes["toolweave.tool.source"] == "local"
    assert span.attributes["toolweave.tool.version"] == "1"


def test_without_a_hook_nothing_is_imported() -> None:
    """import toolweave and toolweave.observe, and run a call: no OpenTelemetry, no
    pyrate-limiter in the process."""
    code = (
        "import sys, anyio, toolweave.observe\n"
        "from toolweave import ToolSetBuilder, tool\n"
        "@tool(blocking=False)\n"
        "def f(a: int) -> int:\n"
        "    '''Echo a number. Not for anything else.\n\n    Args:\n        a: A number.\n    '''\n"
        "    return a\n"
        "b = ToolSetBuilder(); b.add(f); s = b.build().session()\n"
        "assert anyio.run(s.call, 'f', {'a': 1}).ok\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'pyrate_limiter'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
