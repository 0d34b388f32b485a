"""The rate-limit specification: which calls are counted, and how many a window allows."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, final

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["Rate", "RateLimits", "parse_rates"]

_UNITS = {
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}
"""Every unit a window may be written in, exactly as written (``ms`` is milliseconds,
``m`` minutes)."""
_RATE = re.compile(
    r"^\s*(?P<limit>\d+)\s*(?:/|per)\s*(?P<count>\d+(?:\.\d+)?)?\s*(?P<unit>[a-z]+)\s*$",
    re.ASCII,
)
MAX_LIMIT = 2**63 - 1
"""The most calls a window may allow: what the counters' store holds as an integer."""
MAX_WINDOW_MS = 10 * 366 * 86_400_000
"""The longest window: ten years."""
_FORM = (
    "write calls/window, e.g. '60/minute', '10 per 5 seconds', '5/2s', '100/500ms' "
    "(units: ms, s, sec(s), second(s), m, min(s), minute(s), h, hour(s), d, day(s))"
)


@final
class Rate:
    """One rate: at most ``limit`` calls in any window of ``window_ms`` milliseconds.

    Attributes:
        limit: Calls a window allows.
        window_ms: The window's length in milliseconds.
        text: The rate as it was written (``"10/minute"``).
    """

    __slots__ = ("limit", "text", "window_ms")

    def __init__(self, limit: int, window_ms: int, text: str) -> None:
        self.limit = limit
        self.window_ms = window_ms
        self.text = text

    def __repr__(self) -> str:
        return f"Rate({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Rate)
            and other.limit == self.limit
            and other.window_ms == self.window_ms
        )

    def __hash__(self) -> int:
        return hash((self.limit, self.window_ms))


def parse_rates(text: str) -> tuple[Rate, ...]:
    """Read ``"60/minute"``, ``"10 per 5 seconds"``, ``"5/2s"``, ``"100/500ms"`` or
    several joined by ``,`` or ``;`` (``"5/second, 100/hour"``: every one must allow
    the call). A unit is read as written: ``ms`` milliseconds, ``s``/``sec``/
    ``second(s)``, ``m``/``min``/``minute(s)``, ``h``/``hour(s)``, ``d``/``day(s)``.

    Raises:
        ValueError: The text is not of that form (the message shows the form), or a
            rate allows more than :data:`MAX_LIMIT` calls or no call, or its window is
            longer than ten years or shorter than a millisecond.
    """
    rates: list[Rate] = []
    for part in re.split(r"[,;]", text):
        written = _shown(part.strip())
        found = _RATE.match(part.lower())
        if found is None:
            raise ValueError(f"{written!r} is not a rate: {_FORM}")
        unit = _UNITS.get(found["unit"])
        if unit is None:
            raise ValueError(
                f"{written!r} is not a rate: {_shown(found['unit'])!r} is not a unit of "
                f"time; {_FORM}"
            )
        digits = found["limit"].lstrip("0")
        if len(digits) > len(str(MAX_LIMIT)) or int(digits or "0") > MAX_LIMIT:
            raise ValueError(f"{written!r}: a window may allow at most {MAX_LIMIT} calls")
        limit = int(digits or "0")
        window = float(found["count"] or 1) * unit
        if not window <= MAX_WINDOW_MS:  # also infinite
            raise ValueError(f"{written!r}: a window may be at most 10 years long")
        window_ms = round(window)
        if limit < 1:
            raise ValueError(f"{written!r}: a rate allows at least one call per window")
        if window_ms < 1:
            raise ValueError(f"{written!r}: a window must be at least 1 ms long")
        rates.append(Rate(limit, window_ms, part.strip()))
    return tuple(sorted(set(rates), key=lambda rate: rate.window_ms))


def _shown(text: str) -> str:
    """``text`` for an error message: at most 60 characters of it."""
    return text if len(text) <= 60 else text[:57] + "..."


class RateLimits(BaseModel):
    """How many calls a window allows: per session, per tool and per role.

    Each limit is a rate (``"60/minute"``, ``"10 per 5 seconds"``, or several joined by
    commas: every one must allow the call). Counters live in the registry center's
    store, so sessions of every process (and, on Redis, every machine) share the
    per-tool and per-role counts.

    Example:
        ```python
        RateLimits.model_validate({
            "per_session": "60/minute",
            "per_tool": {"bash": "10/minute", "*": "600/hour"},
            "per_role": {"common_user": "100/hour"},
        })
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    per_session: str | None = None
    """Calls each session may make (its own counter, whatever the tool)."""
    per_tool: Mapping[str, str] = Field(default_factory=dict)
    """Calls of one tool (client name) by all sessions together; ``"*"`` gives each tool
    without an entry of its own that limit (a counter per tool)."""
    per_role: Mapping[str, str] = Field(default_factory=dict)
    """Calls by all sessions of a role together (any tool); sessions without a role, or
    of a role not named here, are not limited by role."""

    @field_validator("per_session")
    @classmethod
    def _check_one(cls, value: str | None) -> str | None:
        if value is not None:
            parse_rates(value)
        return value

    @field_validator("per_tool", "per_role")
    @classmethod
    def _check_many(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        for name, text in value.items():
            try:
                parse_rates(text)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        return dict(value)

    def for_call(
        self, tool: str, session_id: str, role: str | None
    ) -> list[tuple[str, str, tuple[Rate, ...]]]:
        """The counters a call of ``tool`` counts against: ``(scope, key, rates)`` with
        ``scope`` one of ``per_role``, ``per_tool``, ``per_session``."""
        found: list[tuple[str, str, tuple[Rate, ...]]] = []
        if role is not None and role in self.per_role:
            found.append(("per_role", f"role:{role}", parse_rates(self.per_role[role])))
        text = self.per_tool.get(tool, self.per_tool.get("*"))
        if text is not None:
            found.append(("per_tool", f"tool:{tool}", parse_rates(text)))
        if self.per_session is not None:
            found.append(("per_session", f"session:{session_id}", parse_rates(self.per_session)))
        return found

    @classmethod
    def of(cls, spec: RateLimits | Mapping[str, Any]) -> RateLimits:
        """``spec`` as :class:`RateLimits` (a mapping is validated)."""
        return spec if isinstance(spec, RateLimits) else cls.model_validate(spec)
