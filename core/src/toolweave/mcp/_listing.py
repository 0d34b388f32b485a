"""A server's ``tools/list`` answers, cleared on the wire of the tools the SDK would refuse.

The SDK checks a ``tools/list`` answer as a whole against the negotiated protocol
version: one tool whose ``inputSchema`` is not an object schema (``{"type":
"string"}``, no ``type``, ``properties`` that is not a mapping, ``required`` that is not
a list of strings), or whose name is not a string, makes it refuse the answer, and the
server would go offline with all its tools. The transport's streams pass through a
:class:`ListingGuard`, which takes such tools out of the answer before the SDK reads it
and keeps the reason, so that the pool skips them one by one.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp.types as types
from mcp.types import methods
from pydantic import TypeAdapter, ValidationError

__all__ = ["ListingGuard"]

logger = logging.getLogger("toolweave.mcp")

FALLBACK_VERSION = "2025-11-25"
"""The version the SDK checks answers against before one is negotiated."""
MAX_PROBLEMS = 3
"""Most validation errors quoted in one tool's reason."""
MAX_SHOWN = 40
"""Most characters of a wrong value quoted in a reason."""

_TOOLS: TypeAdapter[list[types.Tool]] = TypeAdapter(list[types.Tool])


def _refusal(result: dict[str, Any], tools: list[Any], version: str) -> ValidationError | None:
    """Why the SDK would refuse ``result`` with ``tools`` as its tools (``None``: it would
    take it, or the version is one this check does not know, which is left to the SDK)."""
    try:
        methods.validate_server_result("tools/list", version, {**result, "tools": tools})
        _TOOLS.validate_python(tools, by_name=False)
    except ValidationError as exc:
        return exc
    except (KeyError, ValueError):
        return None
    return None


def _reason(error: ValidationError) -> str:
    """The reason a tool is skipped: the first problems the SDK found in it."""
    problems: list[str] = []
    in_schema = True
    for item in error.errors(include_url=False):
        loc = list(item["loc"])
        if loc and loc[0] == "tools":
            loc = loc[1:]
        if loc and isinstance(loc[0], int):
            loc = loc[1:]
        in_schema = in_schema and bool(loc) and loc[0] == "inputSchema"
        where = ".".join(str(part) for part in loc) or "(the tool)"
        value = item.get("input")
        got = f" (got {value!r:.{MAX_SHOWN}})" if isinstance(value, (str, int, float)) else ""
        problems.append(f"{where}: {item['msg']}{got}")
    shown = list(dict.fromkeys(problems))
    more = len(shown) - MAX_PROBLEMS
    text = "; ".join(shown[:MAX_PROBLEMS]) + (f" (and {more} more)" if more > 0 else "")
    return ("invalid input schema: " if in_schema else "invalid tool definition: ") + text


def _label(tool: Any, index: int) -> str:
    """What the skipped tool is listed under: its name, else its place in the listing."""
    name = tool.get("name") if isinstance(tool, dict) else None
    return name if isinstance(name, str) and name else f"tools[{index}]"


class ListingGuard:
    """Sees a connection's messages both ways; takes out of each ``tools/list`` answer
    the tools the SDK would refuse, remembering why until :meth:`take`.

    Attributes:
        version: The negotiated protocol version, once known (the SDK's fallback until then).
    """

    def __init__(self) -> None:
        self.version: str | None = None
        self._asked: set[Any] = set()  # ids of the tools/list requests in flight
        self._dropped: dict[str, str] = {}
        self._entries = 0  # tools seen in the answers since the last take()

    def sent(self, message: Any) -> None:
        """Note an outgoing message (a ``SessionMessage``)."""
        inner = getattr(message, "message", None)
        if isinstance(inner, types.JSONRPCRequest) and inner.method == "tools/list":
            self._asked.add(inner.id)

    def received(self, message: Any) -> Any:
        """An incoming message (a ``SessionMessage``, or an exception), cleared when it
        answers a ``tools/list`` request."""
        inner = getattr(message, "message", None)
        if (
            isinstance(inner, (types.JSONRPCResponse, types.JSONRPCError))
            and inner.id in self._asked
        ):
            self._asked.discard(inner.id)
            if isinstance(inner, types.JSONRPCResponse):
                try:
                    self._clear(inner.result)
                except Exception as exc:  # the SDK judges the answer as it came
                    logger.warning("a tools/list answer could not be checked: %r", exc)
        return message

    def take(self) -> dict[str, str]:
        """The tools taken out since the last call, with the reasons, by name."""
        dropped, self._dropped, self._entries = self._dropped, {}, 0
        return dropped

    def _clear(self, result: dict[str, Any]) -> None:
        tools = result.get("tools")
        if not isinstance(tools, list):
            return  # refused as a whole, as it should be
        first, self._entries = self._entries, self._entries + len(tools)
        version = self.version or FALLBACK_VERSION
        if _refusal(result, tools, version) is None:
            return
        if _refusal(result, [], version) is not None:
            return  # the answer itself is wrong, not one of its tools
        kept = []
        for index, tool in enumerate(tools):
            error = _refusal(result, [tool], version)
            if error is None:
                kept.append(tool)
            else:
                self._dropped[_label(tool, first + index)] = _reason(error)
        result["tools"] = kept
