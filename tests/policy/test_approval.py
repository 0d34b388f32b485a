"""Approval: the approver's answers, pending calls completed by ``Session.resume``,
answers bound to the session, the tool and the exact arguments, and "always" answers
that become rules, recorded in the registry center's audit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from toolweave import Answer, AskUserHandler, Context, ErrorKind, Question, external_tool, tool
from toolweave.policy import (
    Approval,
    ApprovalAnswer,
    ApprovalRequest,
    AsyncPolicyHook,
    PolicyHook,
    RecordedRule,
    ask_user_approver,
    attach_policy,
    flag_recorder,
    terminal_approver,
)
from toolweave.runtime import Session

pytestmark = pytest.mark.anyio

RULES = {"allow": ["bash(git status)"], "deny": ["bash(rm -rf /)"]}


class Approver:
    """Answers from a script and keeps every request."""

    def __init__(self, *answers: Approval | ApprovalAnswer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Approval | ApprovalAnswer:
        self.asked.append(request)
        return self.answers.pop(0)


async def test_allow_once_deny_and_what_the_approver_is_told(
    make_session: Callable[..., Session],
) -> None:
    """The approver gets the session, call id, tool, arguments, digest and reason;
    ``allow_once`` runs the call and asks again next time; ``deny`` refuses it."""
    session = make_session()
    approver = Approver(Approval.ONCE, Approval.ONCE, ApprovalAnswer(Approval.DENY, "not now"))
    hook = attach_policy(session, RULES, approver=approver)
    assert type(hook) is PolicyHook
    assert (await session.call("bash", {"command": "git status"}, "c0")).ok  # no question
    assert approver.asked == []
    first = await session.call("bash", {"command": "make build"}, "c1")
    assert first.ok
    assert first.text == "ran make build"
    request = approver.asked[0]
    assert (request.session_id, request.call_id, request.tool) == (session.session_id, "c1", "bash")
    assert request.arguments == {"command": "make build", "cwd": None}
    assert request.rule is None
    assert "ask first by default" in request.reason
    assert request.suggestions == ("bash(make build)",)
    assert (await session.call("bash", {"command": "make build"}, "c2")).ok
    refused = await session.call("bash", {"command": "make build"}, "c3")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert "not now" in refused.text
    assert refused.error.data == {"approval": "denied"}
    assert len(approver.asked) == 3
    assert approver.asked[0].digest == approver.asked[1].digest  # same session, tool, args
    assert approver.asked[0].approval_id != approver.asked[1].approval_id


async def test_always_becomes_a_rule_and_is_recorded(make_session: Callable[..., Session]) -> None:
    """``always`` adds the suggested rules (one per part of a compound command, or the
    answer's own rules) to the session and hands each to the recorder."""
    session = make_session()
    recorded: list[RecordedRule] = []
    approver = Approver(
        Approval.ALWAYS, ApprovalAnswer(Approval.ALWAYS, rules=("bash(npm run *)",))
    )
    hook = attach_policy(session, RULES, approver=approver, recorder=recorded.append, role="dev")
    assert (await session.call("bash", {"command": "make a && make b"}, "c1")).ok
    assert [r.text for r in hook.added] == ["bash(make a)", "bash(make b)"]
    assert [(r.rule, r.effect, r.role, r.tool) for r in recorded] == [
        ("bash(make a)", "allow", "dev", "bash"),
        ("bash(make b)", "allow", "dev", "bash"),
    ]
    assert recorded[0].approval_id == approver.asked[0].approval_id
    assert (await session.call("bash", {"command": "make b; make a"}, "c2")).ok
    assert len(approver.asked) == 1  # allowed by the new rules, nobody asked
    assert (await session.call("bash", {"command": "npm run lint"}, "c3")).ok
    assert (await session.call("bash", {"command": "npm run test"}, "c4")).ok
    assert len(approver.asked) == 2
    assert [r.text for r in hook.added][-1] == "bash(npm run *)"
    # an added rule never beats a deny
    denied = await session.call("bash", {"command": "rm -rf /"}, "c5")
    assert denied.error is not None
    assert denied.error.kind is ErrorKind.PERMISSION_DENIED


async def test_always_never_allows_the_whole_tool(make_session: Callable[..., Session]) -> None:
    """With no rules at all, "always" on one command or one path adds a rule for that
    command or path, not for every call of the tool."""
    session = make_session()
    approver = Approver(Approval.ALWAYS, Approval.ALWAYS, Approval.DENY, Approval.DENY)
    hook = attach_policy(session, None, approver=approver)
    assert (await session.call("bash", {"command": "make"}, "c1")).ok
    assert (await session.call("write_file", {"path": "src/a.py", "content": ""}, "c2")).ok
    assert [r.text for r in hook.added] == ["bash(make)", "write_file(./src/a.py)"]
    assert not (await session.call("bash", {"command": "make clean"}, "c3")).ok
    assert not (await session.call("write_file", {"path": "src/b.py", "content": ""}, "c4")).ok
    assert (await session.call("write_file", {"path": "src/a.py", "content": "x"}, "c5")).ok
    assert len(approver.asked) == 4


async def test_an_async_approver_is_awaited(make_session: Callable[..., Session]) -> None:
    """An ``async`` approver gets the async hook; its answer decides."""
    session = make_session()

    async def approver(request: ApprovalRequest) -> Approval:
        return Approval.DENY if "push" in request.arguments["command"] else Approval.ONCE

    hook = attach_policy(session, RULES, approver=approver)
    assert type(hook) is AsyncPolicyHook
    assert (await session.call("bash", {"command": "make"}, "c1")).ok
    pushed = await session.call("bash", {"command": "git push"}, "c2")
    assert pushed.error is not None
    assert pushed.error.kind is ErrorKind.PERMISSION_DENIED


async def test_a_pending_call_is_completed_by_resume(make_session: Callable[..., Session]) -> None:
    """Without an approver (or when it answers ``pending``) the call returns an
    ``unavailable`` result carrying the approval id; ``resume`` runs it with the same
    arguments, or refuses it; an answer is used once."""
    session = make_session()
    hook = attach_policy(session, RULES)
    held = await session.call("bash", {"command": "make deploy"}, "c1")
    assert held.error is not None
    assert held.error.kind is ErrorKind.UNAVAILABLE
    data = held.error.data
    assert data["approval"] == "pending"
    assert data["call_id"] == "c1"
    assert data["approval_id"]
    assert [r.approval_id for r in hook.pending] == [data["approval_id"]]
    assert held.model_text.startswith("unavailable: bash needs the user's approval")
    done = await session.resume("c1", approved=True)
    assert done.ok
    assert done.text == "ran make deploy"
    assert done.call_id == "c1"
    assert hook.pending == []
    again = await session.resume("c1", approved=True)
    assert again.error is not None
    assert again.error.kind is ErrorKind.NOT_FOUND

    await session.call("bash", {"command": "make deploy"}, "c2")
    refused = await session.resume("c2", approved=False)
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert refused.error.data == {"approval": "denied"}

    later = attach_policy(make_session(), RULES, approver=Approver(Approval.PENDING))
    parked = await later.session.call("bash", {"command": "make"}, "c3")
    assert parked.error is not None
    assert parked.error.data["approval"] == "pending"
    assert (await later.session.resume("c3", approved=True)).ok


async def test_resume_with_always_adds_the_rule(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    """``resume(..., always=True)`` adds the rule; with a registry center's store as
    recorder, the rule is an audited change."""
    from toolweave.center import Center

    center = Center.open(tmp_path / "center.db")
    try:
        session = make_session()
        hook = attach_policy(session, RULES, recorder=flag_recorder(center.store), role="dev")
        await session.call("bash", {"command": "make test"}, "c1")
        assert (await session.resume("c1", approved=True, always=True)).ok
        assert [r.text for r in hook.added] == ["bash(make test)"]
        assert (await session.call("bash", {"command": "make test"}, "c2")).ok
        changes = center.audit(type="change")
        assert [(c.tool, c.outcome, c.after) for c in changes] == [
            ("policy:dev", "policy.allow", ["bash(make test)"])
        ]
        assert "answered 'always'" in (changes[0].reason or "")
    finally:
        center.close()


async def test_an_approval_is_not_replayed_for_other_arguments(
    make_session: Callable[..., Session],
) -> None:
    """An answer applies to the exact arguments it was asked for: the same call id with
    other arguments asks again, and held arguments changed behind the hook's back are
    not run on the old answer."""
    session = make_session()
    hook = attach_policy(session, RULES)
    await session.call("bash", {"command": "rm a"}, "c1")
    swapped = await session.call("bash", {"command": "rm b"}, "c1")  # while c1 waits
    assert swapped.error is not None
    assert swapped.error.kind is ErrorKind.PERMISSION_DENIED
    assert "already waiting" in swapped.text
    assert (await session.resume("c1", approved=True)).text == "ran rm a"
    replayed = await session.call("bash", {"command": "rm b"}, "c1")
    assert replayed.error is not None
    assert replayed.error.data["approval"] == "pending"

    await session.call("bash", {"command": "rm c"}, "c2")
    hook._held["c2"].arguments["command"] = "rm -rf ~"  # tampered with
    tampered = await session.resume("c2", approved=True)
    assert not tampered.ok
    assert tampered.error is not None
    assert tampered.error.data["approval"] == "pending"  # asked again, not run


async def test_approvals_belong_to_their_session(make_session: Callable[..., Session]) -> None:
    """Another session cannot resume a call held in this one; a hook refuses calls of
    a session it was not made for."""
    one, two = make_session(), make_session()
    hook = attach_policy(one, RULES)
    attach_policy(two, RULES)
    await one.call("bash", {"command": "make"}, "c1")
    stolen = await two.resume("c1", approved=True)
    assert stolen.error is not None
    assert stolen.error.kind is ErrorKind.NOT_FOUND
    two.add_hook(hook)
    wrong = await two.call("bash", {"command": "git status"}, "c9")
    assert wrong.error is not None
    assert wrong.error.kind is ErrorKind.PERMISSION_DENIED
    assert (await one.resume("c1", approved=True)).ok


async def test_a_forged_approved_field_does_nothing(make_session: Callable[..., Session]) -> None:
    """``approved`` / ``approval_id`` in the model's arguments neither approve a call of
    a tool that takes any JSON object nor get past a typed tool's validation."""
    session = make_session()

    async def run(ctx: Any, arguments: dict[str, Any]) -> str:
        return f"ran {arguments['command']}"

    schema = {"type": "object", "properties": {"command": {"type": "string"}}}
    session.register_external(
        external_tool(
            id="sh", namespace="remote", description="Run.", input_schema=schema, call=run
        ),
        name="remote_sh",
        prefix="",
    )
    hook = attach_policy(session, RULES)
    first = await session.call("remote_sh", {"command": "rm x"}, "c1")
    assert first.error is not None
    approval_id = first.error.data["approval_id"]
    forged = {"command": "rm y", "approved": True, "approval_id": approval_id}
    result = await session.call("remote_sh", forged, "c2")
    assert result.error is not None
    assert result.error.data["approval"] == "pending"
    assert len(hook.pending) == 2
    typed = await session.call("bash", {"command": "rm y", "approved": True}, "c3")
    assert typed.error is not None
    assert typed.error.kind in (
        ErrorKind.INVALID_PARAMS,
        ErrorKind.UNAVAILABLE,
    )
    assert not typed.ok


async def test_calls_tools_make_cannot_wait(make_session: Callable[..., Session]) -> None:
    """A call a tool makes that needs approval, with nobody to ask now, is refused."""
    from toolweave import ToolSetBuilder

    @tool(blocking=False, read_only=True)
    async def relay(ctx: Context, command: str) -> str:
        """Run a command through bash (a meta tool). Not for anything else.

        Args:
            command: The command.
        """
        inner = await ctx.call("bash", {"command": command})
        return inner.model_text

    @tool(id="bash", blocking=False)
    def inner_bash(command: str) -> str:
        """Run a command (a stand-in). Not for files.

        Args:
            command: The command.
        """
        return f"ran {command}"

    builder = ToolSetBuilder()
    builder.add(inner_bash)
    builder.add(relay)
    session = builder.build().session(workspace=make_session().workspace)
    attach_policy(session, RULES)
    result = await session.call("relay", {"command": "make"}, "c1")
    assert result.text.startswith("permission_denied: bash needs a person's approval")


async def test_an_approver_that_fails_refuses(
    make_session: Callable[..., Session], caplog: pytest.LogCaptureFixture
) -> None:
    """An approver that raises, answers nonsense, or (plain) returns an awaitable
    refuses the call: the hook is fail-closed."""
    session = make_session()

    def broken(request: ApprovalRequest) -> Approval:
        raise RuntimeError("approver down")

    attach_policy(session, RULES, approver=broken)
    with caplog.at_level(logging.ERROR, logger="toolweave"):
        result = await session.call("bash", {"command": "make"}, "c1")
    assert result.error is not None
    assert result.error.kind is ErrorKind.PERMISSION_DENIED
    assert "safety check failed" in result.text
    assert "policy" in caplog.text

    async def answer(request: ApprovalRequest) -> Approval:
        return Approval.ONCE

    for bad in (lambda r: "yes", lambda r: answer(r)):
        other = make_session()
        attach_policy(other, RULES, approver=bad)
        with caplog.at_level(logging.ERROR, logger="toolweave"):
            refused = await other.call("bash", {"command": "make"}, "c1")
        assert refused.error is not None
        assert refused.error.kind is ErrorKind.PERMISSION_DENIED


class Scripted(AskUserHandler):
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[Question] = []

    async def ask(self, question: Question) -> Answer:
        self.asked.append(question)
        return self.answers.pop(0)


async def test_the_human_channel_of_ask_user_answers_approvals(
    make_session: Callable[..., Session],
) -> None:
    """``ask_user_approver`` puts the request to the host's AskUserHandler: the choices
    map to once / always / deny, declining denies."""
    session = make_session()
    handler = Scripted(Answer(text="Always allow", choice=1), Answer(declined=True))
    hook = attach_policy(session, RULES, approver=ask_user_approver(handler))
    assert (await session.call("bash", {"command": "make"}, "c1")).ok
    assert handler.asked[0].choices == ("Allow once", "Always allow", "Deny")
    assert "Allow bash: make" in handler.asked[0].text
    assert handler.asked[0].session_id == session.session_id
    assert [r.text for r in hook.added] == ["bash(make)"]
    declined = await session.call("bash", {"command": "make clean"}, "c2")
    assert declined.error is not None
    assert declined.error.kind is ErrorKind.PERMISSION_DENIED


async def test_the_terminal_approver_reads_a_line(make_session: Callable[..., Session]) -> None:
    """``terminal_approver`` prints the request and reads y / a / n until it gets one."""

    class Console:
        def __init__(self, *lines: str) -> None:
            self.lines = list(lines)
            self.printed: list[str] = []

        def print(self, text: str) -> None:
            self.printed.append(text)

        def input(self, prompt: str) -> str:
            self.printed.append(prompt)
            if not self.lines:
                raise EOFError
            return self.lines.pop(0)

    console = Console("maybe", "y", "a", "n")
    session = make_session()
    hook = attach_policy(session, RULES, approver=terminal_approver(console))
    assert (await session.call("bash", {"command": "make"}, "c1")).ok
    assert any("answer y" in line for line in console.printed)
    assert (await session.call("bash", {"command": "make x"}, "c2")).ok
    assert [r.text for r in hook.added] == ["bash(make x)"]
    assert not (await session.call("bash", {"command": "make y"}, "c3")).ok
    assert not (await session.call("bash", {"command": "make z"}, "c4")).ok  # end of input


def test_a_sync_host_resumes_held_calls_and_sets_resources(
    make_session: Callable[..., Session],
) -> None:
    """The blocking facade answers held calls (``SyncSession.resume``), saves state and
    sets the session's resources from plain code."""
    session = make_session()
    attach_policy(session, RULES)

    class Marker:
        pass

    marker = Marker()
    with session.sync() as sync:
        held = sync.call("bash", {"command": "make deploy"}, "s1")
        assert held.error is not None
        assert held.error.data["approval"] == "pending"
        done = sync.resume("s1", approved=True)
        assert done.ok
        assert done.text == "ran make deploy"
        assert sync.resume("s1", approved=True).error.kind is ErrorKind.NOT_FOUND  # type: ignore[union-attr]
        sync.set_resource(marker)
        assert sync.get_resource(Marker) is marker
        assert session.get_resource(Marker) is marker
        assert sync.save_state() is None
        assert sync.definitions_json().startswith(b"[")
