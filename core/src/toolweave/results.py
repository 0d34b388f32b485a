"""Progress items and the result of a call, the two things a tool stream carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolweave.errors import ToolError

__all__ = ["CallResult", "Progress"]


@dataclass(slots=True, frozen=True)
class Progress:
    """One progress item of a running call.

    Attributes:
        message: Human-readable progress text (e.g. a line of command output).
        data: Optional JSON-able details (e.g. ``{"stream": "stderr"}``).
        progress: How far the work is, in units of ``total`` (or unbounded).
        total: The amount of work, when known.
    """

    message: str = ""
    data: Any = None
    progress: float | None = None
    total: float | None = None


@dataclass(slots=True)
class CallResult:
    """The outcome of one tool call, success or failure.

    Attributes:
        output: The structured output, JSON-able (``None`` on error).
        text: What the model reads: the tool's model text plus any reminders, or the
            error message on failure.
        error: The failure, or ``None`` on success.
        call_id: The id the host gave the call, if any.
        effective_tool: The fully qualified id of the tool that actually ran (a
            meta-tool reports the tool it delegated to).
        name: The client-visible name the call was addressed to.
    """

    output: Any
    text: str
    error: ToolError | None = None
    call_id: str | None = None
    effective_tool: str | None = None
    name: str = ""

    @property
    def ok(self) -> bool:
        """``True`` when the call succeeded."""
        return self.error is None

    @property
    def model_text(self) -> str:
        """What a provider's tool-result message carries: :attr:`text`, preceded on
        failure by the error kind (``"permission_denied: write is not allowed: ..."``),
        so the model reads the kind together with the message."""
        error = self.error
        if error is None:
            return self.text
        return f"{error.kind.value}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-able data."""
        return {
            "name": self.name,
            "call_id": self.call_id,
            "effective_tool": self.effective_tool,
            "output": self.output,
            "text": self.text,
            "error": None if self.error is None else self.error.to_dict(),
        }
