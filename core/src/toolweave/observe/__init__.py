"""Around every call: rate limits and OpenTelemetry, as call hooks.

- :class:`RateLimiter` keeps counters on the registry center's store (its SQLite file,
  or its Redis) and :meth:`RateLimiter.attach` gives a session a
  :class:`RateLimitHook`: beyond a limit per session, per tool or per role a call is
  ``rate_limited``, with the seconds to wait in ``error.data["retry_after"]``. Needs
  ``toolweave[limits]`` (and ``toolweave[redis]`` on Redis).
- :class:`TelemetryHook` records a span and the ``gen_ai.execute_tool.duration``
  metric per call, following OpenTelemetry's GenAI conventions for tool execution.
  Needs ``toolweave[otel]``; nothing here imports OpenTelemetry until a hook is made.

Example:
    ```python
    from toolweave.center import Center
    from toolweave.observe import RateLimiter, TelemetryHook

    center = Center.open(".toolweave/center.db")
    center.attach(session, role="common_user")
    limiter = RateLimiter(center, {"per_session": "60/minute", "per_tool": {"bash": "10/minute"}})
    limiter.attach(session)
    TelemetryHook().attach(session)
    ```

See ``docs/observability.md``.
"""

from toolweave.observe._ratelimit import RateLimiter, RateLimitHook
from toolweave.observe._spec import Rate, RateLimits, parse_rates
from toolweave.observe._telemetry import CAPTURE_CONTENT_ENV, TelemetryHook

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "Rate",
    "RateLimitHook",
    "RateLimiter",
    "RateLimits",
    "TelemetryHook",
    "parse_rates",
]
