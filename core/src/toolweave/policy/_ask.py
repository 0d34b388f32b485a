"""Approvers that ask a person: on the human channel the session already has (the
host's :class:`~toolweave.AskUserHandler`, which ``ask_user`` of toolweave-plan uses
too), or on a terminal."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from toolweave.authoring import AskUserHandler, Question
from toolweave.policy._approval import Approval, ApprovalAnswer, ApprovalRequest

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["ask_user_approver", "describe_request", "terminal_approver"]

CHOICES = ("Allow once", "Always allow", "Deny")
_ANSWERS = (Approval.ONCE, Approval.ALWAYS, Approval.DENY)
_SHOWN = 400
"""Characters of the arguments shown in a question."""


def describe_request(request: ApprovalRequest) -> str:
    """The question for a person: the tool, what it would do, and why it asks."""
    args = request.arguments
    command = args.get("command") if isinstance(args.get("command"), str) else None
    what = command if command is not None else json.dumps(args, ensure_ascii=False)
    if len(what) > _SHOWN:
        what = what[:_SHOWN] + " …"
    text = f"Allow {request.tool}: {what}\n  ({request.reason})"
    if request.suggestions:
        text += f"\n  'Always' adds: {', '.join(request.suggestions)}"
    return text


def ask_user_approver(
    handler: AskUserHandler,
) -> Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]:
    """An approver that asks through ``handler``, the host's human channel (the
    ``toolweave`` CLI's terminal prompt, a chat message, a web form): the same one
    ``ask_user`` questions take, so the two never talk over each other.

    The question offers ``Allow once``, ``Always allow`` and ``Deny``; a declined
    question is ``Deny``.
    """

    async def approve(request: ApprovalRequest) -> ApprovalAnswer:
        question = Question(
            describe_request(request),
            CHOICES if request.suggestions else (CHOICES[0], CHOICES[2]),
            allow_other=False,
            session_id=request.session_id,
            call_id=request.call_id,
        )
        answer = await handler.ask(question)
        if answer.declined or answer.choice is None:
            return ApprovalAnswer(Approval.DENY, answer.text)
        picked = question.choices[answer.choice]
        return ApprovalAnswer(_ANSWERS[CHOICES.index(picked)])

    return approve


def terminal_approver(console: Any) -> Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]:
    """An approver that prompts on a terminal: the request is printed on ``console``
    (a ``rich.console.Console``, or anything with ``print`` and ``input``) and a line
    is read: ``y`` (allow once), ``a`` (always), ``n`` or an empty line (deny).

    Prompts are taken one at a time; the line is read in a worker thread, so the
    event loop goes on meanwhile.
    """
    lock = anyio.Lock()

    def read(prompt: str) -> str:
        try:
            return str(console.input(prompt))
        except EOFError:
            return ""

    async def approve(request: ApprovalRequest) -> ApprovalAnswer:
        async with lock:
            console.print(describe_request(request))
            always = "/a always" if request.suggestions else ""
            prompt = f"[y once{always}/N deny] "
            while True:
                line = await anyio.to_thread.run_sync(read, prompt, abandon_on_cancel=True)
                word = line.strip().lower()
                if word in ("y", "yes", "once"):
                    return ApprovalAnswer(Approval.ONCE)
                if word in ("a", "always") and request.suggestions:
                    return ApprovalAnswer(Approval.ALWAYS)
                if word in ("", "n", "no", "deny"):
                    return ApprovalAnswer(Approval.DENY, "refused at the terminal")
                console.print(f"answer y, {'a, ' if always else ''}or n")

    return approve
