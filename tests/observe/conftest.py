"""Fixtures of the observe tests: a registry center on either store, OpenTelemetry's
in-memory exporter and reader."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolweave import Session, ToolSetBuilder, tool
from toolweave.center import Center


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@tool(blocking=False)
def add(a: int, b: int) -> int:
    """Add two integers. Not for anything else.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool(blocking=False, read_only=True)
def echo(text: str) -> str:
    """Repeat the text. Not for anything else.

    Args:
        text: What to repeat.
    """
    return text


def make_session(**options: Any) -> Session:
    builder = ToolSetBuilder()
    builder.add(add)
    builder.add(echo)
    return builder.build().session(**options)


@pytest.fixture(params=["sqlite", "redis"])
def center_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a center lives: an SQLite file, or a real Redis."""
    if request.param == "sqlite":
        return str(tmp_path / "center.db")
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
def center(center_url: str) -> Iterator[Center]:
    """A registry center on the store of ``center_url``."""
    c = Center.open(center_url)
    yield c
    c.close()


class Clock:
    """An injected clock (milliseconds) that tests move by hand."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    """A clock that moves only when the test moves it."""
    return Clock()


@pytest.fixture
def session_factory() -> Callable[..., Session]:
    """Make a session with the tools ``add`` and ``echo``."""
    return make_session


@pytest.fixture
def otel() -> Iterator[Any]:
    """A tracer provider with an in-memory exporter and a meter provider with an
    in-memory reader (neither global)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class Otel:
        exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        reader = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[reader])

        def spans(self) -> list[Any]:
            return list(self.exporter.get_finished_spans())

        def points(self, name: str) -> list[Any]:
            data = self.reader.get_metrics_data()
            found: list[Any] = []
            if data is None:
                return found
            for rm in data.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        if metric.name == name:
                            found.extend((metric, point) for point in metric.data.data_points)
            return found

    o = Otel()
    o.tracer_provider.add_span_processor(SimpleSpanProcessor(o.exporter))
    yield o
    o.tracer_provider.shutdown()
    o.meter_provider.shutdown()
