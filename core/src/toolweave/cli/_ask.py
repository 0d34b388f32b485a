"""Questions from ``ask_user`` answered on the terminal.

The CLI installs it into every session it runs (``toolweave call --ask``), so any
tool that asks through :class:`~toolweave.AskUserHandler` (toolweave-plan's
``ask_user``) reaches the person at the terminal. The question goes to standard error, the answer comes from a
line of standard input: a choice's number (or its exact text), free words when the
question allows them, an empty line (or end of input) to decline.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol, TextIO

import anyio
from rich.text import Text

from toolweave import Answer, AskUserHandler, Question

if TYPE_CHECKING:
    from rich.console import Console

    from toolweave.runtime._session import Session

__all__ = ["Pausable", "TerminalAskUser", "install"]

_POLL = 0.05
"""Seconds between looks at the reader thread (a person types far slower)."""


class Pausable(Protocol):
    """A live display (a spinner, the progress of a call) that steps aside for a question."""

    def stop(self) -> None:
        """Take the display off the terminal."""

    def start(self) -> None:
        """Show the display again."""


class TerminalAskUser(AskUserHandler):
    """Asks on a terminal: the question on ``console``, the answer from ``stdin``.

    Args:
        console: Where questions and prompts are printed.
        stdin: Where answers are read, one line each.

    Attributes:
        spinner: A live display to take off the terminal while a question waits for its
            answer.
    """

    def __init__(self, console: Console, stdin: TextIO) -> None:
        self.console = console
        self.stdin = stdin
        self.spinner: Pausable | None = None
        self._lock = anyio.Lock()
        self._echoed = _is_terminal(stdin)
        """Whether the terminal shows what is typed (else answers are echoed)."""

    async def ask(self, question: Question) -> Answer:
        """Print ``question`` and read answers until one is valid (empty line: declined)."""
        async with self._lock:
            spinner = self.spinner
            if spinner is not None:
                spinner.stop()
            try:
                return await self._ask(question)
            finally:
                if spinner is not None:
                    spinner.start()

    async def _ask(self, question: Question) -> Answer:
        self.console.print(Text.assemble(("? ", "bold cyan"), (question.text, "bold")))
        for number, choice in enumerate(question.choices, 1):
            self.console.print(Text(f"  {number}) {choice}"))
        prompt = _prompt(question)
        while True:
            self.console.print(Text(prompt, style="dim"), end="")
            line = await self._read_line()
            if line is None or not self._echoed:
                self.console.print(Text((line or "").rstrip("\n")))
            if line is None:
                return Answer(declined=True)
            text = line.strip()
            if not text:
                return Answer(declined=True)
            answer = _parse(question, text)
            if answer is not None:
                return answer
            count = len(question.choices)
            self.console.print(Text(f"pick a number from 1 to {count}", style="yellow"))

    async def _read_line(self) -> str | None:
        """One line of input (``None`` at end of input), read without blocking the loop.

        A daemon thread reads, so a cancelled question never keeps the process alive.
        """
        box: list[str | None] = []
        done = threading.Event()

        def read() -> None:
            try:
                line = self.stdin.readline()
            except (OSError, ValueError):
                line = ""
            box.append(line or None)
            done.set()

        threading.Thread(target=read, name="toolweave-ask-user", daemon=True).start()
        # Polled: waking the loop from a foreign thread needs a loop token (anyio 4.11+).
        while not done.is_set():  # noqa: ASYNC110
            await anyio.sleep(_POLL)
        return box[0]


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):
        return False


def _prompt(question: Question) -> str:
    count = len(question.choices)
    if not count:
        return "answer (empty to skip): "
    if question.allow_other:
        return f"answer (1-{count} or your own words; empty to skip): "
    return f"answer (1-{count}; empty to skip): "


def _parse(question: Question, text: str) -> Answer | None:
    """The answer ``text`` stands for, or ``None`` when it is not a valid one."""
    choices = question.choices
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return Answer.pick(question, int(text) - 1)
    for index, choice in enumerate(choices):
        if text.casefold() == choice.casefold():
            return Answer.pick(question, index)
    if question.allow_other or not choices:
        return Answer(text=text)
    return None


def install(session: Session, console: Console, stdin: TextIO) -> TerminalAskUser:
    """Make ``session`` ask its questions on the terminal; returns the handler."""
    handler = TerminalAskUser(console, stdin)
    session.set_resource(handler, AskUserHandler)
    return handler
