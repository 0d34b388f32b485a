"""A scripted model: a fixed list of tool calls that drives a session like a model would."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolweave.errors import ErrorKind
from toolweave.formats import parse_tool_calls, tool_result_messages
from toolweave.formats._calls import ToolCall, _without_optional_nulls, provider
from toolweave.results import CallResult, Progress

if TYPE_CHECKING:
    from toolweave.runtime._session import Session

__all__ = ["ScriptedModel", "Step", "Transcript", "Turn", "step"]

OK = "ok"
"""The expectation of a step that must succeed."""


@dataclass(frozen=True, slots=True)
class Step:
    """One tool call of a script and what it must do.

    Attributes:
        name: The client-visible tool name the model calls.
        arguments: The arguments (a dict, or JSON text sent as is).
        expect: ``"ok"`` (must succeed), an error kind it must fail with, or ``None``
            (anything goes).
        contains: Texts the model text must contain (all of them).
        note: What the step shows, for people reading a transcript.
        check: Extra check of the result; returns a problem description or ``None``.
        call_id: The call id (default: ``call_<n>``).
        needs: Other tools this step only makes sense with (``enter_plan`` before a
            write that plan mode must refuse); with ``skip_missing`` the step is
            skipped when one of them is not in the session.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    expect: str | ErrorKind | None = OK
    contains: tuple[str, ...] = ()
    note: str = ""
    check: Callable[[CallResult], str | None] | None = None
    call_id: str | None = None
    needs: tuple[str, ...] = ()

    def problem(self, result: CallResult) -> str | None:
        """Why ``result`` is not what this step expects, or ``None`` when it is."""
        if self.expect == OK and result.error is not None:
            return f"expected success, got {result.error.kind.value}: {result.error.message}"
        if self.expect not in (OK, None):
            want = ErrorKind(self.expect)
            if result.error is None:
                return f"expected {want.value}, but the call succeeded"
            if result.error.kind != want:
                return (
                    f"expected {want.value}, got {result.error.kind.value}: {result.error.message}"
                )
        for text in self.contains:
            if text not in result.text:
                return f"expected the model text to contain {text!r}"
        if self.check is not None:
            return self.check(result)
        return None


def step(
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    expect: str | ErrorKind | None = OK,
    contains: str | Sequence[str] = (),
    note: str = "",
    check: Callable[[CallResult], str | None] | None = None,
    call_id: str | None = None,
    needs: Sequence[str] = (),
) -> Step:
    """A :class:`Step`; ``contains`` may be one string or several."""
    texts = (contains,) if isinstance(contains, str) else tuple(contains)
    return Step(name, arguments or {}, expect, texts, note, check, call_id, tuple(needs))


@dataclass(slots=True)
class Turn:
    """What happened to one step.

    Attributes:
        step: The scripted step.
        call: The call as parsed back from the provider-format reply.
        result: The call's result.
        progress: Progress items the call reported, in order.
        seconds: Wall-clock time of the call.
        problem: Why the call did not behave as the step expects (``None``: it did).
        skipped: ``True`` when the tool is not in the session and the model skips
            missing tools (nothing ran).
        missing: The tools the step needed that the session lacks (when skipped).
    """

    step: Step
    call: ToolCall
    result: CallResult
    progress: list[Progress] = field(default_factory=list)
    seconds: float = 0.0
    problem: str | None = None
    skipped: bool = False
    missing: tuple[str, ...] = ()


@dataclass(slots=True)
class Transcript:
    """Everything a scripted run did.

    Attributes:
        turns: One per step, in order.
        messages: The conversation in the provider's format: each model reply followed
            by its tool-result messages.
        seconds: Wall-clock time of the whole run.
    """

    turns: list[Turn] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """``True`` when every step that ran behaved as expected."""
        return not self.problems

    @property
    def problems(self) -> list[str]:
        """One line per step that did not behave as expected."""
        return [
            f"step {i} ({t.step.name}): {t.problem}"
            for i, t in enumerate(self.turns, 1)
            if t.problem is not None
        ]

    @property
    def skipped(self) -> list[Turn]:
        """Steps whose tool is not in the session."""
        return [t for t in self.turns if t.skipped]

    @property
    def calls(self) -> int:
        """How many calls ran."""
        return sum(1 for t in self.turns if not t.skipped)

    @property
    def errors_by_kind(self) -> Counter[str]:
        """How many calls failed, by error kind."""
        return Counter(
            t.result.error.kind.value
            for t in self.turns
            if t.result.error is not None and not t.skipped
        )


ProgressHook = Callable[[Step, Progress], Awaitable[None] | None]
TurnHook = Callable[[Turn], Awaitable[None] | None]
StepHook = Callable[[Step], Awaitable[None] | None]


async def _maybe(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


class ScriptedModel:
    """A model that makes a fixed list of tool calls: for end-to-end tests and demos.

    Each element of the script is a model reply: one :class:`Step`, or several made in
    one reply (parallel calls). Every reply is written in the provider's own format,
    parsed back with :func:`~toolweave.formats.parse_tool_calls`, run through the
    session in streaming mode (so progress is recorded), and answered with
    :func:`~toolweave.formats.tool_result_messages`, so a script exercises exactly the
    path a host's loop takes.

    Example:
        >>> import anyio
        >>> from toolweave import ToolSetBuilder, tool
        >>> @tool(blocking=False)
        ... def echo(text: str) -> str:
        ...     '''Repeat the text.'''
        ...     return text
        >>> builder = ToolSetBuilder()
        >>> _ = builder.add(echo)
        >>> session = builder.build().session()
        >>> model = ScriptedModel([
        ...     step("echo", {"text": "hi"}, contains="hi"),
        ...     step("echo", {}, expect="invalid_params"),
        ... ])
        >>> transcript = anyio.run(model.run, session)
        >>> transcript.ok, transcript.calls, dict(transcript.errors_by_kind)
        (True, 2, {'invalid_params': 1})

    Args:
        script: The replies, in order.
        provider: The provider whose message format the replies use (``openai``,
            ``openai-responses``, ``anthropic`` or ``gemini``).
        skip_missing: Skip steps whose tool is not in the session (they are listed in
            :attr:`Transcript.skipped`) instead of calling it, which fails with
            ``not_found``; steps that expect ``not_found`` still run.
    """

    def __init__(
        self,
        script: Sequence[Step | Sequence[Step]],
        *,
        provider: str = "openai",
        skip_missing: bool = False,
    ) -> None:
        self.replies: list[list[Step]] = [
            [item] if isinstance(item, Step) else list(item) for item in script
        ]
        self.provider = provider
        self.skip_missing = skip_missing

    @property
    def steps(self) -> list[Step]:
        """Every step, in order."""
        return [s for reply in self.replies for s in reply]

    def reply(self, index: int) -> Any:
        """Model reply ``index`` in the provider's format."""
        start = sum(len(r) for r in self.replies[:index])
        steps = self.replies[index]
        ids = [s.call_id or f"call_{start + i + 1}" for i, s in enumerate(steps)]
        return _reply(self.provider, steps, ids)

    async def run(
        self,
        session: Session,
        *,
        on_call: StepHook | None = None,
        on_progress: ProgressHook | None = None,
        on_result: TurnHook | None = None,
    ) -> Transcript:
        """Play the script against ``session``.

        Args:
            session: The session to drive.
            on_call: Called before each call runs.
            on_progress: Called with each progress item of a call.
            on_result: Called with each finished :class:`Turn`.

        Returns:
            The transcript; it never raises for a step that misbehaves (see
            :attr:`Transcript.problems`).
        """
        prov = provider(self.provider)
        transcript = Transcript()
        started = time.perf_counter()
        for index, steps in enumerate(self.replies):
            message = self.reply(index)
            transcript.messages.append(message)
            calls = parse_tool_calls(message, prov.name)
            results: list[CallResult] = []
            for scripted, call in zip(steps, calls, strict=True):
                turn = await self._one(session, scripted, call, on_call, on_progress)
                transcript.turns.append(turn)
                results.append(turn.result)
                if on_result is not None:
                    await _maybe(on_result(turn))
            transcript.messages.extend(tool_result_messages(results, prov.name))
        transcript.seconds = time.perf_counter() - started
        return transcript

    async def _one(
        self,
        session: Session,
        scripted: Step,
        call: ToolCall,
        on_call: StepHook | None,
        on_progress: ProgressHook | None,
    ) -> Turn:
        wanted = list(scripted.needs)
        if scripted.expect != ErrorKind.NOT_FOUND:
            wanted.insert(0, call.name)
        missing = tuple(n for n in wanted if session.resolve(n) is None)
        if self.skip_missing and missing:
            absent = await session.call(call.name, call.arguments, call.call_id)
            return Turn(scripted, call, absent, skipped=True, missing=missing)
        if on_call is not None:
            await _maybe(on_call(scripted))
        call = _without_optional_nulls(session, call)
        progress: list[Progress] = []
        result: CallResult | None = None
        started = time.perf_counter()
        async with session.stream(call.name, call.arguments, call.call_id) as items:
            async for item in items:
                if isinstance(item, CallResult):
                    result = item
                else:
                    progress.append(item)
                    if on_progress is not None:
                        await _maybe(on_progress(scripted, item))
        assert result is not None
        turn = Turn(scripted, call, result, progress, time.perf_counter() - started)
        turn.problem = scripted.problem(result)
        return turn


def _arguments_text(arguments: Mapping[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(dict(arguments))


def _arguments_object(arguments: Mapping[str, Any] | str) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return dict(arguments)


def _reply(provider_name: str, steps: list[Step], ids: list[str]) -> Any:
    """The model reply holding ``steps`` as tool calls, in the provider's format."""
    name = provider(provider_name).name
    if name == "openai":
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": s.name, "arguments": _arguments_text(s.arguments)},
                }
                for s, cid in zip(steps, ids, strict=True)
            ],
        }
    if name == "openai-responses":
        return [
            {
                "type": "function_call",
                "call_id": cid,
                "name": s.name,
                "arguments": _arguments_text(s.arguments),
            }
            for s, cid in zip(steps, ids, strict=True)
        ]
    if name == "anthropic":
        return {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": cid,
                    "name": s.name,
                    "input": _arguments_object(s.arguments),
                }
                for s, cid in zip(steps, ids, strict=True)
            ],
        }
    if name == "gemini":
        return {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "id": cid,
                        "name": s.name,
                        "args": _arguments_object(s.arguments),
                    }
                }
                for s, cid in zip(steps, ids, strict=True)
            ],
        }
    raise ValueError(f"the scripted model cannot write replies for provider {provider_name!r}")
