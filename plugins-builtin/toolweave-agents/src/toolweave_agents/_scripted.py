"""A model runner that plays a :class:`toolweave.testing.ScriptedModel`: for tests and demos."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolweave_agents._runner import Message, Reply, definition_name

if TYPE_CHECKING:
    from toolweave.testing import ScriptedModel

__all__ = ["ScriptedRunner"]


class ScriptedRunner:
    """A :class:`~toolweave_agents.ModelRunner` whose turns are a scripted model's replies.

    Turn ``n`` is the scripted model's reply ``n`` (its steps as tool calls, written in
    the model's provider format); once the script is played, every turn is the final
    ``answer``. What the sub-agent was shown is kept for tests to read.

    Example:
        >>> from toolweave.testing import step
        >>> runner = ScriptedRunner(ScriptedModel([step("read_file", {"path": "a"})]), "ok")
        >>> runner.provider
        'openai'

    Args:
        model: The script (its ``provider`` is the runner's).
        answer: The final text, once the script is played.

    Attributes:
        offered: The tool names offered at each turn.
        conversations: The messages the runner was given at each turn.
    """

    def __init__(self, model: ScriptedModel, answer: str = "done") -> None:
        self.model = model
        self.provider = model.provider
        self.answer = answer
        self.offered: list[list[str]] = []
        self.conversations: list[list[Message]] = []

    @property
    def turns(self) -> int:
        """How many turns were asked for."""
        return len(self.conversations)

    async def reply(self, messages: list[Message], tools: list[dict[str, Any]]) -> Reply:
        """The next scripted reply, or the final answer once the script is played."""
        turn = len(self.conversations)
        self.conversations.append(list(messages))
        self.offered.append([definition_name(t) for t in tools])
        if turn < len(self.model.replies):
            return Reply.from_message(self.model.reply(turn), self.provider)
        return Reply.answer(self.answer, self.provider)
