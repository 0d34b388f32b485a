"""One turn's selection: the tools chosen, why each, what was left out and why, and its
definitions in a provider's format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from toolweave.inject._injector import Injector

__all__ = ["OFFLINE_HINT", "Choice", "Dropped", "Reason", "Selection"]

Reason = Literal["global", "explicit", "intent", "search"]
"""Why a tool is in a turn: a global group, named by the host, predicted from the
message, or found by the model's search."""

OFFLINE_HINT = (
    "The tools of the MCP server {server} ({tools}) are offline right now and are not in "
    "your tool list; do not call them, and tell the user if the task needs them."
)
"""The standard hint a selection carries for each offline MCP server whose tools it
would have injected (``{server}``, ``{tools}``)."""

OFFLINE_TOOLS_HINT = (
    "These tools are offline right now and are not in your tool list: {tools}; do not call them."
)
"""The same hint for offline tools that are not an MCP server's."""

NEGATIVE_HINT = (
    "Close to this request but not for it (do not call them, they are not in your tool "
    "list): {tools}."
)
"""The negative samples' note (``{tools}``)."""


@dataclass(frozen=True, slots=True)
class Choice:
    """A tool in a turn's selection.

    Attributes:
        name: The tool's client name.
        reason: ``global``, ``explicit``, ``intent`` or ``search``.
        confidence: The classifier's confidence (intent and search), else ``None``.
        tags: The intent tags (groups) that led to it: the global groups it belongs to,
            or the classifier's tags.
        detail: The classifier's own words (``bm25 12.3``); for a search, ``query``
            and the digest of the query (never its text); for a tool named explicitly
            that a global group also holds, ``global`` and the group.
    """

    name: str
    reason: Reason
    confidence: float | None = None
    tags: tuple[str, ...] = ()
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        data: dict[str, Any] = {"name": self.name, "reason": self.reason}
        if self.confidence is not None:
            data["confidence"] = round(self.confidence, 4)
        if self.tags:
            data["tags"] = list(self.tags)
        if self.detail:
            data["detail"] = self.detail
        return data


@dataclass(frozen=True, slots=True)
class Dropped:
    """A tool the selection left out.

    Attributes:
        name: The tool's client name.
        why: ``cap`` (trimmed: over the cap), ``below_threshold`` (a candidate under the
            confidence threshold), ``role`` (the session's role may not use it),
            ``disabled``, ``quarantined``, ``offline``, ``circuit_open``, ``policy``
            (the session's permission rules refuse every call of it), ``unlisted``
            (the session does not list it) or ``unknown`` (no such tool).
        wanted: What would have brought it in (``global``, ``explicit``, ``intent``,
            ``search``).
        confidence: The classifier's confidence, if it was a candidate.
        detail: More about it (the operator's reason, the MCP server).
    """

    name: str
    why: str
    wanted: Reason
    confidence: float | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        data: dict[str, Any] = {"name": self.name, "why": self.why, "wanted": self.wanted}
        if self.confidence is not None:
            data["confidence"] = round(self.confidence, 4)
        if self.detail:
            data["detail"] = self.detail
        return data


@dataclass(eq=False, slots=True)
class Selection:
    """The tools of one turn of one session (made by :meth:`Injector.select
    <toolweave.inject.Injector.select>`); temporary: the injector forgets it when the
    next turn starts, :meth:`Injector.end_turn <toolweave.inject.Injector.end_turn>` is
    called or the session closes.

    Attributes:
        session_id: The session.
        turn: The turn's number in the session (from 1).
        chosen: The injected tools in order: global groups first, then explicit names,
            then intent candidates by confidence.
        found: Tools the model's search found during the turn, in the order found
            (listed after ``chosen``, so the prompt prefix stays cache-stable).
        trimmed: Tools over the cap, in the order they were trimmed (lowest
            confidence last in, first out), and intent candidates below the threshold.
        filtered: Tools left out by role, status, breaker or listing.
        negatives: Close-but-excluded tools named in :attr:`note` as not to be called.
        offline: Offline MCP servers (``mcp:<server>``) whose tools were left out, with
            those tools.
        search: Whether the model is offered the search meta-tool this turn.
        duration_ms: How long the selection took.
    """

    injector: Injector = field(repr=False)
    session_id: str
    turn: int
    chosen: tuple[Choice, ...]
    trimmed: tuple[Dropped, ...] = ()
    filtered: tuple[Dropped, ...] = ()
    negatives: tuple[str, ...] = ()
    offline: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    search: bool = True
    duration_ms: float = 0.0
    found: list[Choice] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """Client names of the chosen tools, then of the found ones."""
        return [c.name for c in self.chosen] + [c.name for c in self.found]

    def reason_of(self, name: str) -> Choice | None:
        """Why ``name`` is in the selection (``None``: it is not)."""
        for choice in (*self.chosen, *self.found):
            if choice.name == name:
                return choice
        return None

    @property
    def note(self) -> str:
        """Text for the model (the system prompt or the turn's message): the standard
        hint for offline MCP servers and the negative samples; ``""`` when there is
        nothing to say."""
        lines: list[str] = []
        for server, tools in self.offline.items():
            shown = ", ".join(tools)
            if server.startswith("mcp:"):
                lines.append(OFFLINE_HINT.format(server=server[4:], tools=shown))
            else:
                lines.append(OFFLINE_TOOLS_HINT.format(tools=shown))
        if self.negatives:
            lines.append(NEGATIVE_HINT.format(tools=", ".join(self.negatives)))
        return "\n".join(lines)

    def definitions(self, format: str = "openai", *, native: bool | None = None) -> list[Any]:
        """The definitions to send for this turn, in a provider's ``format``: the chosen
        tools (as the session lists them: the center's routed versions), then the found
        ones, then the search meta-tool.

        Args:
            format: Any format of :func:`toolweave.formats.render`.
            native: Use the provider's own deferred loading where it has one
                (``anthropic``: the other usable tools with ``defer_loading: true`` and a
                search answered with ``tool_reference`` blocks; ``openai-responses``: a
                client ``tool_search``); the default. ``False``: the plain
                ``search_tools`` function everywhere.

        Returns:
            A new list of read-only definitions (copy one with ``copy.deepcopy`` to edit).
        """
        return self.injector._definitions(self, format, native)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (what the log keeps)."""
        return {
            "session": self.session_id,
            "turn": self.turn,
            "chosen": [c.to_dict() for c in self.chosen],
            "found": [c.to_dict() for c in self.found],
            "trimmed": [d.to_dict() for d in self.trimmed],
            "filtered": [d.to_dict() for d in self.filtered],
            "negatives": list(self.negatives),
            "offline": {k: list(v) for k, v in self.offline.items()},
            "search": self.search,
            "duration_ms": round(self.duration_ms, 3),
        }
