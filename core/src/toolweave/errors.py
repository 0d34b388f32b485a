"""Errors raised and returned by toolweave.

Every exception toolweave raises derives from one base::

    ToolweaveError
    ├── ToolError            the outcome of a tool call (kind + message); returned in
    │                        CallResult.error, raised only by tools themselves
    ├── UsageError           the host used the API wrongly (duplicate tool, unknown
    │   │                    session state, ...)
    │   ├── DuplicateToolError      two registrations share one fully qualified id
    │   ├── MissingResourceError    a required resource was not provided (also a
    │   │                           LookupError)
    │   ├── ExpressionError         a dependency expression is malformed (also a
    │   │                           ValueError)
    │   └── UnsupportedSchemaError  a tool's argument schema cannot be expressed in
    │                               a provider's definition format
    ├── ConfigError          a tool-set configuration has problems; holds every
    │                        ConfigIssue found, not only the first
    ├── PackLoadError        a pack failed to import or raised in a hook
    ├── StateConflict        a state save was refused: another writer changed the
    │                        key since it was read (nothing was saved)
    └── CenterError          the registry center's store is unreadable, locked or
                             read-only, or an operation names what it does not hold

A tool call never raises out of ``Session.call``: whatever happens inside is turned
into a :class:`ToolError` with one of the :class:`ErrorKind` values.
"""

from __future__ import annotations

import enum
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "PREVIEW_CHARS",
    "CenterError",
    "ConfigError",
    "ConfigIssue",
    "DuplicateToolError",
    "ErrorKind",
    "ExpressionError",
    "MissingResourceError",
    "PackLoadError",
    "StateConflict",
    "ToolError",
    "ToolweaveError",
    "UnsupportedSchemaError",
    "UsageError",
    "describe_exception",
    "exception_text",
    "preview",
]


PREVIEW_CHARS = 200
"""How many characters of a value a message shows by default."""


def preview(value: object, limit: int = PREVIEW_CHARS) -> str:
    """``value`` as text, cut to about ``limit`` characters for a message.

    A model can send a path or a pattern of any size, and a message that echoes it whole
    can be larger than anything the tool would return. Short text comes back unchanged;
    longer text keeps its head, an ellipsis and its full length, so the reader still
    knows what it was and how large.

    Args:
        value: What to show; anything that is not a string is shown through ``str``.
        limit: The most characters of ``value`` kept (at least 1).

    Returns:
        The text, or its first ``limit`` characters followed by
        ``… (N characters)``.

    Example:
        >>> preview("src/app.py")
        'src/app.py'
        >>> preview("x" * 1000, limit=5)
        'xxxxx… (1000 characters)'
    """
    text = value if isinstance(value, str) else str(value)
    limit = max(1, limit)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def exception_text(exc: BaseException) -> str | None:
    """``str(exc)``, or ``None`` when the exception's message cannot be read.

    An exception is foreign code: its ``__str__`` may raise (an attribute its
    ``__init__`` never set, a ``TypeError`` of its own formatting) or return something
    that is not text. Whoever reports a tool's, a pack's or a plugin file's exception
    formats it through this, so a broken message never turns a reported failure into
    a crash. ``KeyboardInterrupt`` raised by ``__str__`` still propagates.

    Example:
        >>> exception_text(ValueError("bad value"))
        'bad value'
    """
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None
    return text if type(text) is str else None


def describe_exception(exc: BaseException, *, empty: str = "") -> str:
    """``"TypeName: message"`` for a message about ``exc``; never raises.

    Args:
        exc: The exception.
        empty: What stands for an empty message (``""``: the type name alone).

    Returns:
        ``"ValueError: bad value"``; ``"ValueError"`` (or ``"ValueError: <empty>"``)
        when its message is empty; ``"BadError (its message could not be read)"``
        when its ``__str__`` fails (see :func:`exception_text`).

    Example:
        >>> describe_exception(KeyError())
        'KeyError'
    """
    name = type(exc).__name__
    text = exception_text(exc)
    if text is None:
        return f"{name} (its message could not be read)"
    text = text or empty
    return f"{name}: {text}" if text else name


_SAFE_REPR = reprlib.Repr()
_SAFE_REPR.maxlevel = 6
_SAFE_REPR.maxstring = 200
_SAFE_REPR.maxother = 200


def _shown(value: Any) -> str:
    """``repr(value)`` for a message; never raises. A value too deep (or too odd) for
    ``repr`` is shown bounded, in depth and length, or by its type."""
    try:
        return repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException:
        pass
    try:
        return _SAFE_REPR.repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return f"<{type(value).__name__}>"


class ErrorKind(enum.StrEnum):
    """The category of a failed tool call, stable across versions."""

    UNIMPLEMENTED = "unimplemented"
    """The tool (or this mode of calling it) is not implemented."""
    INVALID_PARAMS = "invalid_params"
    """The arguments did not validate against the tool's schema."""
    NOT_FOUND = "not_found"
    """No such tool, or the tool's target (a file, a task) does not exist."""
    PERMISSION_DENIED = "permission_denied"
    """The call is not allowed: outside the workspace, refused by a mode or a role."""
    UNAUTHORIZED = "unauthorized"
    """The caller is not authenticated for this tool."""
    TIMEOUT = "timeout"
    """The call passed its deadline and was cancelled."""
    CANCELLED = "cancelled"
    """The call was cancelled by the host."""
    RATE_LIMITED = "rate_limited"
    """Too many calls; try again later."""
    EXECUTION_ERROR = "execution_error"
    """The tool ran and failed."""
    UNAVAILABLE = "unavailable"
    """The tool or a resource it needs is not available right now."""
    CUSTOM = "custom"
    """A tool-specific failure; see the message."""


class ToolweaveError(Exception):
    """Base class of every exception raised by toolweave."""


class ToolError(ToolweaveError):
    """The failed outcome of a tool call.

    Tools raise it to fail with a specific kind; the dispatcher turns every other
    exception into ``ToolError(ErrorKind.EXECUTION_ERROR, ...)``.

    Args:
        kind: The category of the failure.
        message: Text for the model: what went wrong and what to do about it.
        data: Optional JSON-able details for the host.
    """

    __slots__ = ("data", "kind", "message")

    def __init__(self, kind: ErrorKind | str, message: str, data: Any = None) -> None:
        self.kind = ErrorKind(kind)
        self.message = message
        self.data = data
        super().__init__(f"{self.kind.value}: {message}")

    def __repr__(self) -> str:
        return f"ToolError({self.kind.value!r}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolError):
            return NotImplemented
        return (self.kind, self.message, self.data) == (other.kind, other.message, other.data)

    def __hash__(self) -> int:
        return hash((self.kind, self.message))

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON-able data (``{"kind": ..., "message": ...}``)."""
        out: dict[str, Any] = {"kind": self.kind.value, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


class UsageError(ToolweaveError):
    """The host application used the API in a way it does not support."""


class DuplicateToolError(UsageError):
    """Two registrations share one fully qualified tool id.

    Attributes:
        fqid: The fully qualified id (``namespace:id``) registered twice.
        first: Where the first registration came from (a pack name or ``"host"``).
        second: Where the second one came from.
    """

    def __init__(self, fqid: str, first: str, second: str) -> None:
        self.fqid = fqid
        self.first = first
        self.second = second
        super().__init__(f"tool {fqid!r} is registered twice: by {first} and by {second}")


class MissingResourceError(UsageError, LookupError):
    """A resource that a tool requires was not provided.

    Attributes:
        key: The type that was asked for.
    """

    def __init__(self, key: type[Any]) -> None:
        self.key = key
        super().__init__(
            f"resource {key.__module__}.{key.__qualname__} is not available; "
            "provide it with Resources.insert() or from a pack's provide_resources hook"
        )


class ExpressionError(UsageError, ValueError):
    """A dependency expression is malformed.

    Attributes:
        text: The whole expression.
        position: Offset of the offending character in ``text``.
        reason: What is wrong there.
    """

    def __init__(self, text: str, position: int, reason: str) -> None:
        self.text = text
        self.position = position
        self.reason = reason
        super().__init__(f"{reason} at column {position + 1} of {text!r}")


class UnsupportedSchemaError(UsageError):
    """A tool's argument schema cannot be expressed in a provider's format.

    Raised when definitions are rendered, so a host learns about it before the model
    sees a broken listing.

    Attributes:
        tool: The client-visible name of the tool.
        format: The format being rendered (``openai-strict``, ``gemini``, ...).
        path: Where in the schema the problem is (``properties.env``), ``""`` at the root.
        reason: What cannot be expressed, and what to change.
    """

    def __init__(self, tool: str, format: str, path: str, reason: str) -> None:
        self.tool = tool
        self.format = format
        self.path = path
        self.reason = reason
        where = f" at {path}" if path else ""
        super().__init__(f"tool {tool!r} cannot be rendered as {format}{where}: {reason}")


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem found while validating a tool-set configuration.

    Attributes:
        tool_id: The configured tool the problem is about (empty for set-level problems).
        message: What is wrong, in words a person can act on.
        path: Where in the configuration (e.g. ``tools[2].params.max_timeout_ms``).
        expected: What was expected there, if known.
        actual: What was found there, if known.
        tag: A stable category for filtering (``unknown_tool``, ``ambiguous_id``,
            ``unknown_version``, ``invalid_params``, ``duplicate_name``,
            ``invalid_rename``, ``conflict``, ``dependency``, ``template``, ...).
    """

    tool_id: str
    message: str
    path: str = ""
    expected: Any = None
    actual: Any = None
    tag: str = "invalid"

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        who = f"{self.tool_id}: " if self.tool_id else ""
        parts = []
        if self.expected is not None:
            parts.append(f"expected {_shown(self.expected)}")
        if self.actual is not None:
            parts.append(f"got {_shown(self.actual)}")
        extra = f" ({', '.join(parts)})" if parts else ""
        return f"[{self.tag}] {who}{self.message}{where}{extra}"


class ConfigError(ToolweaveError):
    """A configuration has one or more problems; all of them are listed.

    Attributes:
        issues: Every problem found, in the order they were found.
    """

    def __init__(self, issues: Sequence[ConfigIssue]) -> None:
        self.issues: tuple[ConfigIssue, ...] = tuple(issues)
        count = len(self.issues)
        lines = "\n".join(f"  {issue}" for issue in self.issues)
        super().__init__(f"{count} configuration problem{'s' if count != 1 else ''}:\n{lines}")


class PackLoadError(ToolweaveError):
    """A pack failed to load.

    Attributes:
        pack: The pack's entry-point name.
        dist: The distribution that declared it (name and version), if known.
        cause: The exception raised while importing the pack or running its hook.
    """

    def __init__(self, pack: str, dist: str | None, cause: BaseException, stage: str) -> None:
        self.pack = pack
        self.dist = dist
        self.cause = cause
        self.stage = stage
        origin = f" (from {dist})" if dist else ""
        super().__init__(
            f"pack {pack!r}{origin} failed during {stage}: {describe_exception(cause)}"
        )


class StateConflict(ToolweaveError):
    """A compare-and-set save was refused: another writer changed a key since it was read.

    Nothing of the save was stored.

    Args:
        session_id: The session whose keys conflicted.
        current: What the store holds now for each conflicting key (``None``: the key
            is not stored).
    """

    def __init__(self, session_id: str, current: Mapping[str, Any]) -> None:
        self.session_id = session_id
        self.current: dict[str, Any] = dict(current)
        keys = ", ".join(sorted(self.current))
        super().__init__(
            f"state {keys} of session {session_id} was changed by another writer since it "
            "was read; nothing was saved"
        )


CenterProblem = Literal["invalid", "not_found", "conflict", "unavailable"]
"""What kind of failure a :class:`CenterError` is."""


class CenterError(ToolweaveError):
    """The registry center cannot do what was asked: its store is unreadable, locked,
    read-only or unreachable, a name is taken by another source, or an operation names
    something the center does not hold. The message says which and what to do.

    Args:
        message: What went wrong and what to do.
        problem: Which of those it is: ``invalid`` (what was asked is wrong),
            ``not_found`` (it names something the center does not hold), ``conflict``
            (a name is held by another source) or ``unavailable`` (the store cannot be
            read or written now). The admin API answers 400, 404, 409 and 503.
    """

    def __init__(self, message: str, *, problem: CenterProblem = "invalid") -> None:
        super().__init__(message)
        self.problem: CenterProblem = problem
