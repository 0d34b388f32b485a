"""Asking the person behind the agent: a question, its answer, and the host's channel.

Tools that need a person (``ask_user`` of toolweave-plan; approvals) find the host's
:class:`AskUserHandler` in the session's resources: a terminal prompt (the
``toolweave`` CLI installs one), a chat message, a web form.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Answer", "AskUserHandler", "Question"]


@dataclass(frozen=True, slots=True)
class Question:
    """A question for the user.

    Attributes:
        text: The question.
        choices: Answers to pick from (may be empty: a free answer).
        allow_other: Whether the user may answer something not among ``choices``.
        session_id: The session asking.
        call_id: The id of the ``ask_user`` call, if any.
    """

    text: str
    choices: tuple[str, ...] = ()
    allow_other: bool = True
    session_id: str = ""
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """The user's answer.

    Attributes:
        text: The answer as text (the chosen option's text when one was picked).
        choice: The index of the chosen option in ``Question.choices``, if one was picked.
        declined: ``True`` when the user chose not to answer.
    """

    text: str = ""
    choice: int | None = None
    declined: bool = False

    @classmethod
    def pick(cls, question: Question, index: int) -> Answer:
        """The answer that picks option ``index`` of ``question``."""
        return cls(text=question.choices[index], choice=index)


class AskUserHandler:
    """How the host asks its user; subclass it and insert an instance into the resources.

    Example:
        ``resources.insert(MyTerminalPrompt(), AskUserHandler)``
    """

    async def ask(self, question: Question) -> Answer:
        """Put ``question`` to the user and return the answer (may take minutes)."""
        raise NotImplementedError
