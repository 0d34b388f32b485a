"""OpenTelemetry for every call: a span and a duration metric per call, following the
GenAI semantic conventions for tool execution.

The span ``execute_tool {gen_ai.tool.name}`` (kind ``INTERNAL``) starts in the hook's
``admit`` step and ends in ``after`` / ``on_error``; while the call runs it is the
current span, so spans the tool makes (and the trace context an MCP client sends in a
request's ``params._meta``) are its children. A call refused by a hook that runs before
this one gets a span that starts and ends when the refusal is known.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any, final

from pydantic import BaseModel

from toolweave.errors import ErrorKind, UsageError
from toolweave.results import CallResult
from toolweave.runtime import CallHook, HookCall

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.runtime._session import Session

__all__ = ["CAPTURE_CONTENT_ENV", "DURATION_BUCKETS", "TelemetryHook"]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment switch OpenTelemetry's GenAI instrumentations read for opting in to
recording content (``true``): here, a call's arguments and result."""

DURATION_BUCKETS = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
"""Bucket boundaries (seconds) advised for ``gen_ai.execute_tool.duration``: those the
GenAI conventions give for operation durations."""

_REFUSALS = frozenset({ErrorKind.PERMISSION_DENIED, ErrorKind.UNAUTHORIZED, ErrorKind.RATE_LIMITED})
_KIND_TEXT = {
    ErrorKind.UNIMPLEMENTED: "the tool, or this way of calling it, is not implemented",
    ErrorKind.INVALID_PARAMS: "the arguments did not validate against the tool's schema",
    ErrorKind.NOT_FOUND: "no such tool, or the tool's target does not exist",
    ErrorKind.PERMISSION_DENIED: "the call is not allowed",
    ErrorKind.UNAUTHORIZED: "the caller is not authenticated for this tool",
    ErrorKind.TIMEOUT: "the call passed its deadline and was cancelled",
    ErrorKind.CANCELLED: "the call was cancelled by the host",
    ErrorKind.RATE_LIMITED: "too many calls",
    ErrorKind.EXECUTION_ERROR: "the tool ran and failed",
    ErrorKind.UNAVAILABLE: "the tool or a resource it needs is not available now",
    ErrorKind.CUSTOM: "a tool-specific failure",
}
"""What a span's status says of a failure without ``capture_content``: the kind's fixed
meaning. The error's own message is content: it may quote the arguments (an invalid
value, an unknown argument's name, a path in an exception's text)."""
_perf = time.perf_counter
_now_ns = time.time_ns
_KEY = "toolweave.observe.call"


def _otel() -> Any:
    try:
        from opentelemetry import context, metrics, trace
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise UsageError("telemetry needs OpenTelemetry: pip install 'toolweave[otel]'") from exc
    return context, metrics, trace


@final
class _Open:
    """A call's open span: the call, the entry it started on, the span, the context
    token, when it started."""

    __slots__ = ("call", "entry", "span", "started", "token")

    def __init__(self, call: HookCall, span: Any, token: Any, started: float) -> None:
        self.call = call
        self.entry = call.entry
        self.span = span
        self.token = token
        self.started = started


def _tool_type(entry: ToolEntry) -> str:
    """``function`` for tools that run in this process, ``extension`` for tools another
    service runs (MCP servers, pushed HTTP endpoints)."""
    source = entry.tool.source
    if source in ("local", "external") or source.startswith(("dir:", "pack:")):
        return "function"
    return "extension"


def _json(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


class TelemetryHook(CallHook):
    """Spans and the ``gen_ai.execute_tool.duration`` metric for every call of a session.

    Span attributes: ``gen_ai.operation.name`` (``execute_tool``), ``gen_ai.tool.name``
    (the client name), ``gen_ai.tool.call.id``, ``gen_ai.tool.type`` (``function`` or
    ``extension``), ``gen_ai.tool.description``, ``error.type`` (the error kind) on
    failure, with the span's status ``ERROR``: its description is the kind and the
    kind's fixed meaning (``invalid_params: the arguments did not validate ...``), or,
    with ``capture_content``, the error's message (which may quote the arguments);
    with ``capture_content`` also ``gen_ai.tool.call.arguments`` and
    ``gen_ai.tool.call.result``. toolweave's own: ``toolweave.tool.id``,
    ``toolweave.tool.source``, ``toolweave.tool.version`` (the version that ran, after a
    center's pin or rollout), ``toolweave.session.id``, ``toolweave.call.depth``,
    ``toolweave.role``, and ``toolweave.decision`` (``ok``, ``refused`` — by a role,
    policy or rate limit —, ``invalid`` or ``error``) with the error's ``scope``,
    ``limit`` and ``retry_after`` when its data has them.

    The hook never refuses a call (``fail_closed = False``): a failing exporter costs
    the span, not the call.

    Args:
        tracer_provider: Where spans go (default: the global provider).
        meter_provider: Where the metric goes (default: the global provider).
        capture_content: Record arguments, results and error messages (default: the
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` environment switch).
            They may hold personal data: opt in knowingly.
        role: The session's role, recorded as ``toolweave.role``
            (:meth:`attach` reads it from the registry center's hook).

    Raises:
        UsageError: The ``otel`` extra is not installed.
    """

    name = "telemetry"
    fail_closed = False

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        capture_content: bool | None = None,
        role: str | None = None,
    ) -> None:
        from importlib.metadata import version

        __version__ = version("toolweave")
        context, metrics, trace = _otel()
        self._context = context
        self._attach = context.attach
        self._detach = context.detach
        self._set_value = context.set_value
        self._get_value = context.get_value
        self._set_span = trace.set_span_in_context
        self._internal = trace.SpanKind.INTERNAL
        self._error_status = trace.Status(trace.StatusCode.ERROR)
        self._status = trace.Status
        self._error_code = trace.StatusCode.ERROR
        self.tracer = trace.get_tracer("toolweave", __version__, tracer_provider)
        meter = metrics.get_meter("toolweave", __version__, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="Duration of tool executions.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        if capture_content is None:
            capture_content = os.environ.get(CAPTURE_CONTENT_ENV, "").lower() in ("1", "true")
        self.capture_content = capture_content
        self.role = role
        self._static: dict[ToolEntry, tuple[str, dict[str, Any], dict[str, Any]]] = {}

    def attach(self, session: Session) -> TelemetryHook:
        """Add this hook to ``session`` as its first hook (a registry center attached
        later still goes first), reading the role from the center's hook if it has
        one. Returns the hook."""
        if self.role is None:
            from toolweave.center import CenterHook

            self.role = next((h.role for h in session.hooks if isinstance(h, CenterHook)), None)
        session.add_hook(self, first=True)
        return self

    def _describe(self, call: HookCall) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """The span name, span attributes and metric attributes of the call's entry
        (made once per entry)."""
        entry = call.entry
        found = self._static.get(entry)
        if found is None:
            tool = entry.tool
            kind = _tool_type(entry)
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": entry.name,
                "gen_ai.tool.type": kind,
                "gen_ai.tool.description": entry.description,
                "toolweave.tool.id": tool.fqid,
                "toolweave.tool.source": tool.source,
                "toolweave.session.id": call.session.session_id,
            }
            if tool.version:
                attributes["toolweave.tool.version"] = tool.version
            if self.role is not None:
                attributes["toolweave.role"] = self.role
            measured = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": entry.name,
                "gen_ai.tool.type": kind,
            }
            found = self._static[entry] = (f"execute_tool {entry.name}", attributes, measured)
        return found

    def _start(self, call: HookCall) -> Any:
        name, attributes, _ = self._describe(call)
        depth = call.depth
        if call.call_id is not None or depth:
            attributes = {**attributes, "gen_ai.tool.call.id": call.call_id}
            if depth:
                attributes["toolweave.call.depth"] = depth
        return self.tracer.start_span(name, kind=self._internal, attributes=attributes)

    def admit(self, call: HookCall) -> None:
        started = _perf()
        span = self._start(call)
        opened = _Open(call, span, None, started)
        opened.token = self._attach(self._set_value(_KEY, opened, self._set_span(span)))

    def after(self, call: HookCall, result: CallResult) -> None:
        self._finish(call, result)

    def on_error(self, call: HookCall, result: CallResult) -> None:
        self._finish(call, result)

    def _finish(self, call: HookCall, result: CallResult) -> None:
        opened = self._get_value(_KEY)
        if type(opened) is _Open and opened.call is call:
            self._detach(opened.token)
            span = opened.span
            started = opened.started
            if call.entry is not opened.entry:  # routed by a later admit step (a center pin)
                tool = call.entry.tool
                span.set_attribute("toolweave.tool.id", tool.fqid)
                span.set_attribute("toolweave.tool.version", tool.version)
        else:  # refused before this hook's admit step: a span of the refusal itself
            span = self._start(call)
            started = _perf()
        error = result.error
        _, _, measured = self._describe(call)
        if error is None:
            ended: dict[str, Any] = {"toolweave.decision": "ok"}
        else:
            kind = error.kind
            ended = {
                "error.type": kind.value,
                "toolweave.decision": "refused"
                if kind in _REFUSALS
                else "invalid"
                if kind is ErrorKind.INVALID_PARAMS
                else "error",
            }
            data = error.data
            if kind in _REFUSALS and isinstance(data, dict):
                for field in ("scope", "limit", "retry_after"):
                    value = data.get(field)
                    if isinstance(value, (str, int, float)):
                        ended[f"toolweave.{field}"] = value
            if self.capture_content:
                description = error.message
            else:
                description = f"{kind.value}: {_KIND_TEXT.get(kind, 'the call failed')}"
            span.set_status(self._status(self._error_code, description))
            measured = {**measured, "error.type": kind.value}
        if self.capture_content:
            if call.arguments is not None:
                ended["gen_ai.tool.call.arguments"] = _json(call.arguments)
            if error is None:
                output = result.output
                ended["gen_ai.tool.call.result"] = (
                    output if isinstance(output, str) else _json(output)
                )
        span.set_attributes(ended)
        span.end()
        self.duration.record(_perf() - started, measured)
