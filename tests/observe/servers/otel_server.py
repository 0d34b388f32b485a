"""toolweave's MCP server over the demo pack (``python -m toolweave.mcp``) with the
OpenTelemetry SDK as the global provider, writing each finished span as a JSON line to
the file named by ``SPANS``; ``TOOLWEAVE_OTEL=1`` makes the server add the telemetry
hook."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class LinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                row: dict[str, Any] = {
                    "name": span.name,
                    "trace_id": span.context.trace_id,
                    "span_id": span.context.span_id,
                    "parent_id": span.parent.span_id if span.parent else None,
                    "attributes": dict(span.attributes or {}),
                }
                out.write(json.dumps(row) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(LinesExporter(os.environ["SPANS"])))
trace.set_tracer_provider(provider)
os.environ["TOOLWEAVE_OTEL"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "mcp" / "servers"))

from toolweave.mcp.__main__ import main  # noqa: E402

sys.exit(main(["--packs", "none", "--pack", "demo_pack:pack"]))
