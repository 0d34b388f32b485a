"""``ask_user``: a question to the person behind the agent, answered through the host.

The host decides how questions reach a person by putting an
:class:`~toolweave.AskUserHandler` (defined in core, with :class:`~toolweave.Question`
and :class:`~toolweave.Answer`, re-exported here) into the session's resources (a terminal prompt, a chat message, a web form). Without
one, ``ask_user`` fails as ``unavailable`` and tells the model to go on by itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator
from toolweave import (
    Answer,
    AskUserHandler,
    Capabilities,
    Context,
    ErrorKind,
    Kind,
    Question,
    Tool,
    ToolError,
    ToolOutput,
)

from toolweave_plan._todos import NOT_BLANK

__all__ = [
    "Answer",
    "AskUser",
    "AskUserArgs",
    "AskUserHandler",
    "AskUserOutput",
    "Question",
    "ScriptedAskUser",
]


class ScriptedAskUser(AskUserHandler):
    """Answers questions from a script, for tests and demos.

    Each answer is a string (matched against the choices: an exact option is picked,
    anything else is a free answer), an int (the option with that index), an
    :class:`Answer`, or ``None`` (the user declines).

    Args:
        answers: The answers to give, in order.

    Attributes:
        answers: The answers still to give.
        asked: Every question received so far.
    """

    def __init__(self, answers: Iterable[str | int | Answer | None] = ()) -> None:
        self.answers: list[str | int | Answer | None] = list(answers)
        self.asked: list[Question] = []

    def __repr__(self) -> str:
        return f"ScriptedAskUser(left={len(self.answers)}, asked={len(self.asked)})"

    async def ask(self, question: Question) -> Answer:
        """Return the next scripted answer.

        Raises:
            LookupError: The script has run out of answers.
        """
        self.asked.append(question)
        if not self.answers:
            raise LookupError(f"no scripted answer left for {question.text!r}")
        scripted = self.answers.pop(0)
        if scripted is None:
            return Answer(declined=True)
        if isinstance(scripted, Answer):
            return scripted
        if isinstance(scripted, int):
            return Answer.pick(question, scripted)
        if scripted in question.choices:
            return Answer.pick(question, question.choices.index(scripted))
        return Answer(text=scripted)


_Choices = Annotated[
    list[Annotated[str, Field(min_length=1, pattern=NOT_BLANK)]],
    Field(max_length=10, json_schema_extra={"uniqueItems": True}),
]
"""Answers to pick from: at most ten, none blank, no two alike (``uniqueItems``; the
validator also counts two that differ only in surrounding spaces as alike)."""


class AskUserArgs(BaseModel):
    """Arguments of ``ask_user``."""

    model_config = ConfigDict(regex_engine="python-re")  # `\S` as JSON Schema checkers read it

    question: str = Field(
        min_length=1,
        max_length=2_000,
        description="One clear, specific question, with the context the user needs to answer.",
    )
    """The question."""

    choices: _Choices | None = Field(
        default=None,
        description=(
            "Two to ten short, distinct answers to pick from; put the one you recommend "
            "first. Omit for an open question."
        ),
    )
    """Answers to pick from."""

    allow_other: bool = Field(
        default=True,
        description="With `choices`: whether the user may also answer in their own words.",
    )
    """Whether answers outside ``choices`` are allowed."""

    @field_validator("choices", mode="before")
    @classmethod
    def _distinct_choices(cls, value: object) -> object:
        """Refuse blank and repeated answers in words (before the schema's pattern); two
        answers that differ only in surrounding spaces are the same answer."""
        if isinstance(value, list) and all(isinstance(c, str) for c in value):
            cleaned = [c.strip() for c in value]
            if any(not c for c in cleaned):
                raise ValueError("must not hold a blank answer")
            if len(set(cleaned)) != len(cleaned):
                raise ValueError("must hold distinct answers")
        return value

    @field_validator("choices")
    @classmethod
    def _clean_choices(cls, value: list[str] | None) -> list[str] | None:
        if not value:
            return None
        return [c.strip() for c in value]


class AskUserOutput(ToolOutput):
    """What ``ask_user`` returns."""

    question: str
    """The question asked."""

    answer: str
    """The answer ("" when the user declined)."""

    choice: int | None = None
    """The index of the chosen option, when one was picked."""

    declined: bool = False
    """Whether the user chose not to answer."""

    def to_model(self) -> str:
        """The answer, in a sentence."""
        if self.declined:
            return (
                "The user did not answer. Do not ask again; make the most reasonable "
                "choice yourself and say which one you made."
            )
        return f"The user answered: {self.answer}"


class AskUser(Tool[AskUserArgs, AskUserOutput]):
    """Ask the user a question and wait for the answer."""

    id = "ask_user"
    namespace = "plan"
    kind = Kind.ASK_USER
    description = """\
Ask the user a question and wait for the answer. Offer `{param:choices}` when the answer is \
one of a few options (put your recommendation first); ask open questions only when \
you need free text.

Use it when the request is ambiguous in a way that changes what you build, to choose \
between approaches with real trade-offs, or for facts only the user knows \
(credentials, preferences, the intended behaviour). Do not use it for things you can \
find out by reading the code or running a command, to ask permission for routine \
steps, or to check in on progress. Ask one question per call and keep it short."""
    capabilities = Capabilities(read_only=True, scope="none", timeout=3_600.0)

    async def run(self, ctx: Context, args: AskUserArgs) -> AskUserOutput:
        """Forward the question to the host's handler."""
        handler = ctx.get(AskUserHandler)
        if handler is None:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "No one can answer questions in this session. Do not ask again: make the "
                "most reasonable assumption, say what you assumed, and continue.",
            )
        choices = tuple(args.choices or ())
        question = Question(
            text=args.question,
            choices=choices,
            allow_other=args.allow_other or not choices,
            session_id=ctx.session_id,
            call_id=ctx.call_id,
        )
        answer = await handler.ask(question)
        if answer.declined:
            return AskUserOutput(question=args.question, answer="", declined=True)
        choice = answer.choice
        if choice is not None and not 0 <= choice < len(choices):
            choice = None
        text = choices[choice] if choice is not None and not answer.text else answer.text
        return AskUserOutput(question=args.question, answer=text, choice=choice)
