"""What the registry center keeps and hands out: tool records, change events, audit
entries, breaker settings, and its errors."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from toolweave._secrets import mask_secrets
from toolweave.errors import CenterError

__all__ = [
    "CALL_FIELDS",
    "AuditEntry",
    "BreakerSettings",
    "CallRow",
    "CenterError",
    "ChangeEvent",
    "Status",
    "ToolRecord",
    "ToolState",
]


class Status(enum.StrEnum):
    """A tool's lifecycle status in the center (``circuit_open`` is never set by hand:
    it follows the tool's or its source's breaker)."""

    ENABLED = "enabled"
    DISABLED = "disabled"
    CIRCUIT_OPEN = "circuit_open"
    OFFLINE = "offline"
    QUARANTINED = "quarantined"


SETTABLE = frozenset({Status.ENABLED, Status.DISABLED, Status.OFFLINE, Status.QUARANTINED})
"""The statuses an operation may set."""


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """One tool as the center knows it, whatever its source.

    Attributes:
        name: The client-visible name (what operators and models use).
        source: Where it comes from: ``pack:<distribution>``, ``dir:<path>``,
            ``mcp:<server>``, ``api``, or ``host`` (registered by the host's code).
        fqid: The fully qualified id of the tool behind the name.
        kind: The tool's kind (value of :class:`~toolweave.Kind`).
        description: The description the model reads.
        input_schema: The JSON Schema of its arguments.
        read_only: Whether the tool changes nothing.
        groups: Tags operators act on together (``local_core``, ``mcp_file``, ...).
        roles: The role whitelist the source declared (``None``: every role); an
            operator's :meth:`~toolweave.center.Center.set_roles` overrides it.
        versions: The behaviour versions known, oldest first.
        default_version: The version sessions run unless pinned or rolled out.
        endpoint: For a tool pushed through the admin API (source ``api``): where its
            calls are forwarded (``{"url", "headers", "timeout", "max_bytes",
            "allow_private", "allow_loopback"}``); attached sessions gain such tools.
            It holds the real header values and URL userinfo (calls need them); every
            form of the record shown to people (:meth:`to_dict`, the audit, ``repr``)
            has them as ``***``.
    """

    name: str
    source: str
    fqid: str = ""
    kind: str = "other"
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    read_only: bool = False
    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] | None = None
    versions: tuple[str, ...] = ()
    default_version: str = ""
    endpoint: Mapping[str, Any] | None = field(default=None, repr=False)

    def to_dict(self, *, reveal: bool = False) -> dict[str, Any]:
        """JSON-able form, the endpoint's secrets (header values, URL userinfo) shown as
        ``***``.

        Args:
            reveal: Keep the real values (what the store keeps; never for listings, the
                audit or answers).
        """
        data = asdict(self)
        data["input_schema"] = dict(self.input_schema)
        data["groups"] = list(self.groups)
        data["roles"] = None if self.roles is None else list(self.roles)
        data["versions"] = list(self.versions)
        data["endpoint"] = None if self.endpoint is None else dict(self.endpoint)
        return data if reveal else mask_record(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolRecord:
        """The record from :meth:`to_dict`'s form (unknown keys are ignored)."""
        roles = data.get("roles")
        return cls(
            name=str(data["name"]),
            source=str(data["source"]),
            fqid=str(data.get("fqid", "")),
            kind=str(data.get("kind", "other")),
            description=str(data.get("description", "")),
            input_schema=dict(data.get("input_schema") or {}),
            read_only=bool(data.get("read_only", False)),
            groups=tuple(data.get("groups") or ()),
            roles=None if roles is None else tuple(roles),
            versions=tuple(data.get("versions") or ()),
            default_version=str(data.get("default_version", "")),
            endpoint=data.get("endpoint"),
        )


def mask_record(data: Any) -> Any:
    """A record's JSON form (:meth:`ToolRecord.to_dict`) with its endpoint's secrets
    shown as ``***``; anything else as it is."""
    if not isinstance(data, Mapping):
        return data
    endpoint = data.get("endpoint")
    if not isinstance(endpoint, Mapping):
        return data
    return {**data, "endpoint": mask_secrets(endpoint)}


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    """When a circuit breaker opens and for how long.

    Attributes:
        failures: Failures (errors of kind ``timeout``, ``execution_error`` or
            ``unavailable``, and calls slower than ``slow_ms``) within ``window``
            seconds that open the circuit.
        window: The window, in seconds.
        cooldown: Seconds the circuit stays open before one trial call is let through.
        slow_ms: A call that takes longer counts as a timeout (default: 500 ms for local
            tools, 3000 ms for MCP tools).
    """

    failures: int = 5
    window: float = 30.0
    cooldown: float = 30.0
    slow_ms: float | None = None

    def __post_init__(self) -> None:
        for name in ("failures", "window", "cooldown", "slow_ms"):
            value = getattr(self, name)
            if value is not None and not finite(value):
                raise CenterError(
                    f"breaker {name} must be a finite number (got {shown_number(value)})"
                )
        if self.failures < 1 or self.window <= 0 or self.cooldown < 0:
            raise CenterError(
                "breaker settings need failures >= 1, window > 0 and cooldown >= 0 "
                f"(got failures={self.failures}, window={self.window}, "
                f"cooldown={self.cooldown})"
            )
        if self.slow_ms is not None and self.slow_ms <= 0:
            raise CenterError(f"breaker slow_ms must be positive (got {self.slow_ms})")


MAX_DEPTH = 100
"""How deeply JSON the center keeps (a schema, an endpoint, a body) may nest."""


def nesting(value: Any) -> int:
    """How deeply ``value`` nests lists and dicts (0: a scalar), counted without
    recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def finite(value: Any) -> bool:
    """Whether ``value`` is an int or a float a float can hold (``False`` for a bool,
    NaN, an infinity, and an int too large for a float, such as ``10**400``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def shown_number(value: Any) -> str:
    """``repr(value)`` (a number, most often) cut to 40 characters, for a message (an int
    of more than 4300 digits has no ``repr`` at all)."""
    try:
        text = repr(value)
    except ValueError:
        return "a number too long to show"
    return text if len(text) <= 40 else text[:37] + "..."


LOCAL_SLOW_MS = 500.0
"""A local call slower than this counts as a timeout for its breaker."""
MCP_SLOW_MS = 3000.0
"""An MCP call slower than this counts as a timeout for its breaker."""


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change of the center, as its change feed delivers it.

    Attributes:
        version: The center's version after the change.
        kind: ``added``, ``removed``, ``changed`` (a record's metadata) or ``flag`` (a
            lifecycle operation: status, pin, rollout, roles, groups, breaker).
        target: The tool name, or ``group:<name>`` / ``source:<id>`` / the breaker key.
        detail: What changed (the operation and its new value).
        at: When (seconds since the epoch).
    """

    version: int
    kind: str
    target: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "version": self.version,
            "kind": self.kind,
            "target": self.target,
            "detail": dict(self.detail),
            "at": self.at,
        }


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the audit: a call (``type == "call"``) or an operator's change
    (``type == "change"``).

    Attributes:
        at: When (seconds since the epoch).
        type: ``call`` or ``change``.
        session: The session id (calls).
        role: The session's role (calls).
        tool: The tool's client name, or the target of a change.
        version: The behaviour version that ran (calls).
        digest: A digest of the validated arguments (calls; never the arguments).
        outcome: ``ok`` or ``error`` (calls), the operation (changes).
        error_kind: The error kind of a failed call.
        duration_ms: How long the call took.
        actor: Who made a change.
        before: The value before a change.
        after: The value after a change.
        reason: Why (changes).
        id: The entry's number in the store (0 before it is written).
    """

    at: float
    type: str
    session: str | None = None
    role: str | None = None
    tool: str | None = None
    version: str | None = None
    digest: str | None = None
    outcome: str | None = None
    error_kind: str | None = None
    duration_ms: float | None = None
    actor: str | None = None
    before: Any = None
    after: Any = None
    reason: str | None = None
    id: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)


CallRow = tuple[
    float, str, "str | None", str, "str | None", "str | None", str, "str | None", "float | None"
]
"""A call's audit entry as the call path queues it (cheaper than an
:class:`AuditEntry`): the values of :data:`CALL_FIELDS`, in order."""

CALL_FIELDS = (
    "at", "session", "role", "tool", "version", "digest", "outcome", "error_kind",
    "duration_ms",
)  # fmt: skip
"""The fields of a :data:`CallRow`."""


@dataclass(frozen=True, slots=True)
class ToolState:
    """A tool's record with everything the center says about it now.

    Attributes:
        record: The record.
        status: The effective status (a disabled group or source disables its tools;
            an open breaker shows as ``circuit_open``).
        roles: The effective role whitelist (``None``: every role).
        groups: The effective groups.
        pins: Pinned versions by cohort (``"*"``: every session).
        rollout: The version being rolled out and to what percentage of sessions.
        breaker: The breaker's state (``closed``, ``open``, ``half_open``).
        reason: Why the status is what it is (the operation's reason, if any).
    """

    record: ToolRecord
    status: Status
    roles: tuple[str, ...] | None
    groups: tuple[str, ...]
    pins: Mapping[str, str]
    rollout: tuple[str, float] | None
    breaker: str = "closed"
    reason: str = ""

    @property
    def name(self) -> str:
        """The tool's client name."""
        return self.record.name

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the endpoint's secrets shown as ``***``)."""
        return {
            **self.record.to_dict(),
            "status": self.status.value,
            "roles": None if self.roles is None else list(self.roles),
            "groups": list(self.groups),
            "pins": dict(self.pins),
            "rollout": None
            if self.rollout is None
            else {"version": self.rollout[0], "percent": self.rollout[1]},
            "breaker": self.breaker,
            "reason": self.reason,
        }
