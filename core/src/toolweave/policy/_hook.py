"""The policy's call hook: decides every call of a session after its arguments are
validated, asks the host's approver, holds calls that wait for an answer, and
completes them on :meth:`Session.resume <toolweave.Session.resume>`."""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from toolweave.errors import ErrorKind, ToolError
from toolweave.policy._approval import (
    Approval,
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    RecordedRule,
    RuleRecorder,
    call_digest,
    client_arguments,
)
from toolweave.policy._config import Effect, PolicyConfig, Rule, parse_rule
from toolweave.policy._decide import Decision, EntryRules, Policy
from toolweave.resources import Workspace
from toolweave.runtime import CallHook, HookCall

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.runtime import Session

__all__ = ["PolicyHook", "attach_policy"]

logger = logging.getLogger("toolweave")

GRANT_SECONDS = 60.0
"""How long an answer given through ``resume`` waits for its call to reach the
policy again (it is used once)."""
MAX_PENDING = 100
"""Calls one session may have waiting for an answer; more are refused."""

Role = str | Callable[[], "str | None"] | None
"""The session's role: a name, or a function asked on every call (a registry
center's hook: ``lambda: hook.role``)."""


@dataclass(slots=True)
class _Held:
    request: ApprovalRequest
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class _Grant:
    digest: str
    approved: bool
    until: float


class PolicyHook(CallHook):
    """Permission rules and approvals on one session (made by :func:`attach_policy`).

    Its ``before`` step decides each call from its validated arguments: ``deny``
    refuses it (``permission_denied``), ``allow`` lets it run, ``ask`` asks the
    approver. A call that waits for an answer returns at once with an ``unavailable``
    error whose ``data`` holds ``{"approval": "pending", "approval_id", "call_id"}``;
    :meth:`Session.resume <toolweave.Session.resume>` completes it. An answer is
    bound to the session, the tool and a digest of the exact arguments, and is used
    once.

    Attributes:
        policy: The compiled rules.
        session: The session it decides for (it refuses calls of any other).
        approver: Who answers ``ask`` (``None``: every ``ask`` waits for ``resume``).
        recorder: Called with each rule an ``always`` answer adds.
        added: The rules this session gained by ``always`` answers.
    """

    name = "policy"
    fail_closed = True

    def __init__(
        self,
        policy: Policy,
        session: Session,
        *,
        role: Role = None,
        approver: Approver | None = None,
        recorder: RuleRecorder | None = None,
    ) -> None:
        self.policy = policy
        self.session = session
        self.approver = approver
        self.recorder = recorder
        self._role = role
        self.added: list[Rule] = []
        self._plans: dict[tuple[ToolEntry, str | None], EntryRules] = {}
        self._held: dict[str, _Held] = {}
        self._grants: dict[str, _Grant] = {}

    def __repr__(self) -> str:
        return f"<PolicyHook {self.session.session_id} role={self.role!r}>"

    @property
    def role(self) -> str | None:
        """The session's role now."""
        role = self._role
        return role() if callable(role) else role

    @property
    def pending(self) -> list[ApprovalRequest]:
        """The requests of calls waiting for an answer, oldest first."""
        return [held.request for held in self._held.values()]

    def add_rule(self, rule: str, effect: Effect | str = Effect.ALLOW) -> Rule:
        """Add a rule to this session (as an ``always`` answer does; not recorded).

        Raises:
            ValueError: The rule does not parse.
            ConfigError: Its pattern is invalid.
        """
        parsed = parse_rule(rule, effect, "session")
        self._add(parsed)
        return parsed

    def _add(self, rule: Rule) -> None:
        from toolweave.errors import ConfigError, ConfigIssue

        issues: list[ConfigIssue] = []
        self.policy._compile(rule, issues)
        if issues:
            raise ConfigError(issues)
        self.added.append(rule)
        self._plans.clear()

    # -- deciding -----------------------------------------------------------------------

    def decide(self, call: HookCall) -> Decision:
        """What the rules say about ``call`` (its arguments validated)."""
        role = self.role
        key = (call.entry, role)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self.policy.for_entry(call.entry, role, self.added)
        if plan.fixed is not None:
            return plan.fixed
        root = str(self.session.resources.require(Workspace).root)
        return plan.decide(call.arguments, root)

    def _verdict(self, call: HookCall) -> ToolError | ApprovalRequest | None:
        """``None`` (run), a refusal, or the request to put to the approver."""
        if call.session is not self.session:
            return ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{call.name} cannot run: this session's permission check belongs to "
                "another session.",
            )
        grant = self._grants.pop(call.call_id, None) if self._grants and call.call_id else None
        decision = self.decide(call)
        if decision.effect is Effect.ALLOW:
            return None
        if decision.effect is Effect.DENY:
            return _refusal(call.name, decision)
        digest = call_digest(self.session.session_id, call.entry, call.arguments)
        if grant is not None and grant.digest == digest and grant.until >= time.monotonic():
            if grant.approved:
                return None
            return _declined(call.name, "")
        return ApprovalRequest(
            approval_id=secrets.token_urlsafe(12),
            session_id=self.session.session_id,
            call_id=call.call_id,
            tool=call.name,
            tool_id=call.entry.tool.fqid,
            arguments=client_arguments(call.entry, call.arguments),
            digest=digest,
            rule=decision.rule.text if decision.rule is not None else None,
            reason=decision.reason,
            suggestions=decision.suggestions,
        )

    def before(self, call: HookCall) -> ToolError | None:
        verdict = self._verdict(call)
        if not isinstance(verdict, ApprovalRequest):
            return verdict
        if self.approver is None:
            return self._hold(call, verdict)
        answer = self.approver(verdict)
        if inspect.isawaitable(answer):
            _close(answer)
            logger.error("the approver returned an awaitable; give attach_policy an async one")
            answer = Approval.DENY
        return self._answer(call, verdict, answer)

    def _answer(self, call: HookCall, request: ApprovalRequest, answer: Any) -> ToolError | None:
        if isinstance(answer, Approval):
            answer = ApprovalAnswer(answer)
        if not isinstance(answer, ApprovalAnswer):
            logger.error("the approver answered %r; refusing %s", answer, call.name)
            return _declined(call.name, "")
        approval = answer.approval
        if approval is Approval.ONCE:
            return None
        if approval is Approval.ALWAYS:
            self._always(request, answer.rules)
            return None
        if approval is Approval.PENDING:
            return self._hold(call, request)
        return _declined(call.name, answer.reason)

    def _always(self, request: ApprovalRequest, rules: tuple[str, ...]) -> None:
        for text in rules or request.suggestions:
            try:
                rule = parse_rule(text, Effect.ALLOW, "session")
                self._add(rule)
            except Exception:
                logger.exception("the rule %r of an 'always' answer is invalid", text)
                continue
            if self.recorder is None:
                continue
            try:
                self.recorder(
                    RecordedRule(
                        rule.text,
                        rule.effect.value,
                        request.session_id,
                        self.role,
                        request.tool,
                        request.approval_id,
                    )
                )
            except Exception:
                logger.exception("recording the rule %s failed", rule.text)

    # -- waiting for an answer -----------------------------------------------------------

    def _hold(self, call: HookCall, request: ApprovalRequest) -> ToolError:
        call_id = call.call_id
        if call_id is None or call.depth > 0:
            return ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{call.name} needs a person's approval, and none can be asked for here.",
                {"approval": "unavailable", "reason": request.reason},
            )
        if not isinstance(call_id, str) or call_id in self._held:
            return ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{call.name} was not run: another call with the id {call_id!r} is "
                "already waiting for approval.",
            )
        if len(self._held) >= MAX_PENDING:
            return ToolError(
                ErrorKind.PERMISSION_DENIED,
                f"{call.name} was not run: too many calls are waiting for approval.",
            )
        self._held[call_id] = _Held(request, call.name, dict(request.arguments))
        return ToolError(
            ErrorKind.UNAVAILABLE,
            f"{call.name} needs the user's approval ({request.reason}); they have been "
            "asked, and the result will follow once they answer. Do not call it again "
            "meanwhile.",
            {
                "approval": "pending",
                "approval_id": request.approval_id,
                "call_id": call_id,
                "tool": call.name,
                "rule": request.rule,
            },
        )

    def release_call(
        self, session: Session, call_id: str, *, approved: bool, always: bool = False
    ) -> tuple[str, Any] | None:
        """For :meth:`Session.resume <toolweave.Session.resume>`: the held call
        ``call_id`` (its client name and arguments) to run again, its answer set for
        the policy to find; ``None`` when no such call waits here."""
        if session is not self.session:
            return None
        try:
            held = self._held.pop(call_id, None)
        except TypeError:
            return None
        if held is None:
            return None
        request = held.request
        if approved and always:
            self._always(request, ())
        self._grants[call_id] = _Grant(request.digest, approved, time.monotonic() + GRANT_SECONDS)
        return held.name, held.arguments


class AsyncPolicyHook(PolicyHook):
    """:class:`PolicyHook` with an ``async`` approver: its ``before`` step awaits it."""

    async def before(self, call: HookCall) -> ToolError | None:  # type: ignore[override]
        verdict = self._verdict(call)
        if not isinstance(verdict, ApprovalRequest):
            return verdict
        assert self.approver is not None
        answer = self.approver(verdict)
        if inspect.isawaitable(answer):
            try:
                answer = await answer
            except asyncio.CancelledError:
                if _cancelling():
                    raise
                # The approver's own wait was cancelled (its question was dropped), not
                # this call: a refusal, not a cancellation of the host's task.
                return ToolError(
                    ErrorKind.PERMISSION_DENIED,
                    f"{call.name} was not run: the approval was cancelled.",
                    {"approval": "cancelled"},
                )
        return self._answer(call, verdict, answer)


def _cancelling() -> bool:
    """Whether the running task is being cancelled: asyncio's cancel count of the task,
    or (anyio, any event loop) an enclosing cancel scope that was cancelled."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # not on asyncio
        task = None
    if task is not None and task.cancelling():
        return True
    return anyio.current_effective_deadline() == -math.inf


def _close(value: Awaitable[Any]) -> None:
    close = getattr(value, "close", None)
    if close is not None:
        close()


def _refusal(name: str, decision: Decision) -> ToolError:
    rule = decision.rule
    return ToolError(
        ErrorKind.PERMISSION_DENIED,
        f"{name} is not allowed here ({decision.reason}).",
        {"rule": rule.text if rule is not None else None},
    )


def _declined(name: str, reason: str) -> ToolError:
    why = f": {reason}" if reason else "."
    return ToolError(
        ErrorKind.PERMISSION_DENIED,
        f"The user did not allow this call of {name}{why} Do not try it another way; "
        "ask them what to do instead.",
        {"approval": "denied"},
    )


def _is_async(approver: Approver | None) -> bool:
    if approver is None:
        return False
    if inspect.iscoroutinefunction(approver):
        return True
    call = getattr(approver, "__call__", None)  # noqa: B004 - an object's async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def attach_policy(
    session: Session,
    config: Policy | PolicyConfig | Mapping[str, Any] | None = None,
    *,
    role: Role = None,
    approver: Approver | None = None,
    recorder: RuleRecorder | None = None,
) -> PolicyHook:
    """Put ``session``'s calls under permission rules.

    The hook is added after the session's other hooks, so it decides on the arguments
    as every earlier ``before`` step left them; attach it once the session is built
    (after the packs' hooks). A registry center's hook still runs first.

    Args:
        session: The session.
        config: The rules: a :class:`Policy` (compiled once, shared by sessions), a
            :class:`PolicyConfig`, or a mapping (``None``: the defaults alone).
        role: The session's role (its rules are added), or a function asked per call.
        approver: Who answers ``ask``: a plain or an ``async`` function receiving an
            :class:`ApprovalRequest`. ``None``: every ``ask`` waits for
            :meth:`Session.resume <toolweave.Session.resume>`.
        recorder: Called with each rule an ``always`` answer adds (e.g.
            :func:`flag_recorder` for a registry center).

    Returns:
        The hook (``session.remove_hook(hook)`` detaches it).

    Raises:
        ConfigError: The configuration is invalid.
        UsageError: A shell-command pattern needs ``toolweave[policy]``.
    """
    policy = config if isinstance(config, Policy) else Policy(config)
    cls = AsyncPolicyHook if _is_async(approver) else PolicyHook
    hook = cls(policy, session, role=role, approver=approver, recorder=recorder)
    session.add_hook(hook)
    return hook
