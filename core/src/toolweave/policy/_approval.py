"""Approvals: what a person is asked, what they may answer, and how an answer is bound
to the exact call it was given for."""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, final

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry

__all__ = [
    "Approval",
    "ApprovalAnswer",
    "ApprovalRequest",
    "Approver",
    "FlagStore",
    "RecordedRule",
    "RuleRecorder",
    "call_digest",
    "client_arguments",
    "flag_recorder",
]

logger = logging.getLogger("toolweave")


class Approval(enum.StrEnum):
    """A person's answer to an :class:`ApprovalRequest`."""

    ONCE = "allow_once"
    """Run this call."""
    ALWAYS = "always"
    """Run this call, and from now on calls like it (the request's ``suggestions``
    become ``allow`` rules of the session, recorded through the recorder)."""
    DENY = "deny"
    """Refuse this call (``permission_denied``)."""
    PENDING = "pending"
    """No answer now: the call returns a pending result, and the host calls
    :meth:`Session.resume <toolweave.Session.resume>` once the person has answered."""


@final
@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is asked about one call.

    Attributes:
        approval_id: The request's id (also in a pending result's ``error.data``).
        session_id: The session the call runs in.
        call_id: The model's id for the call (``None`` for calls tools make).
        tool: The tool's client name.
        tool_id: The tool's fully qualified id.
        arguments: The validated arguments, JSON-able, with client names.
        digest: A digest of the session, the tool and the exact arguments; an answer
            applies to this digest only.
        rule: The rule that asks (``None``: the default asks).
        reason: Why the call needs approval, in words.
        suggestions: The rules an ``always`` answer adds (empty: it cannot add one, so
            it counts as ``allow_once``).
    """

    approval_id: str
    session_id: str
    call_id: str | None
    tool: str
    tool_id: str
    arguments: Mapping[str, Any]
    digest: str
    rule: str | None
    reason: str
    suggestions: tuple[str, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """An answer with details (an approver may return a bare :class:`Approval`).

    Attributes:
        approval: The answer.
        reason: Why (shown to the model on ``deny``).
        rules: For ``always``: the rules to add instead of the request's suggestions
            (``bash(npm run test *)`` rather than the exact command).
    """

    approval: Approval
    reason: str = ""
    rules: tuple[str, ...] = ()


Approver = Callable[
    [ApprovalRequest],
    "Approval | ApprovalAnswer | Awaitable[Approval | ApprovalAnswer]",
]
"""What the host provides to answer ``ask`` decisions: a plain function (called in the
event loop, so it must answer at once or say ``pending``) or an ``async`` function (may
wait for a person)."""


@final
@dataclass(frozen=True, slots=True)
class RecordedRule:
    """A rule a person added by answering ``always``, for the audit.

    Attributes:
        rule: The rule (``bash(git status)``).
        effect: Its effect (``allow``).
        session_id: The session it was added in.
        role: The session's role, if any.
        tool: The tool's client name.
        approval_id: The request that was answered.
        at: When (seconds since the epoch).
    """

    rule: str
    effect: str
    session_id: str
    role: str | None
    tool: str
    approval_id: str
    at: float = field(default_factory=time.time)


RuleRecorder = Callable[[RecordedRule], None]
"""Called with every rule an ``always`` answer adds (a host's audit, the registry
center's through :func:`flag_recorder`). One that raises is logged; the rule stays."""


class FlagStore(Protocol):
    """The part of a registry center's store :func:`flag_recorder` writes to
    (:class:`toolweave.center.CenterStore` has it)."""

    def update_flag(
        self,
        scope: str,
        target: str,
        flag: str,
        update: Callable[[Any], Any],
        *,
        actor: str,
        reason: str,
        action: str,
    ) -> Any:
        """Read-modify-write one flag in one transaction, audited as ``action``."""
        ...


def flag_recorder(store: FlagStore, *, actor: str = "user") -> RuleRecorder:
    """A recorder that keeps "always" rules in a registry center's store, so each is
    one audited change (``center.audit(type="change")`` lists it, action
    ``policy.allow``, target ``policy:<role or *>``).

    The rules are kept as the flag ``allow`` of scope ``policy`` and target the role
    (``*`` without one): a sorted list, which a host may read back into its
    configuration.

    Example:
        ``attach_policy(session, config, recorder=flag_recorder(center.store))``
    """

    def record(rule: RecordedRule) -> None:
        def add(old: Any) -> Any:
            kept = set(old) if isinstance(old, list) else set()
            return sorted(kept | {rule.rule})

        store.update_flag(
            "policy",
            rule.role or "*",
            rule.effect,
            add,
            actor=actor,
            reason=(
                f"answered 'always' in session {rule.session_id} "
                f"(approval {rule.approval_id}, tool {rule.tool})"
            ),
            action=f"policy.{rule.effect}",
        )

    return record


def _plain(arguments: Any) -> Any:
    if isinstance(arguments, BaseModel):
        return arguments.model_dump(mode="json", by_alias=True)
    return to_jsonable_python(arguments, fallback=repr)


def client_arguments(entry: ToolEntry, arguments: Any) -> dict[str, Any]:
    """Validated ``arguments`` as JSON-able data with client parameter names: what a
    model would send to get exactly them again."""
    plain: Any = _plain(arguments)
    if not isinstance(plain, dict):
        return {}
    to_client = entry.to_client
    if to_client:
        return {str(to_client.get(k, k)): v for k, v in plain.items()}
    return plain


def call_digest(session_id: str, entry: ToolEntry, arguments: Any) -> str:
    """A digest binding the session, the tool (client name and id) and the exact
    validated arguments."""
    body = json.dumps(
        [session_id, entry.name, entry.tool.fqid, _plain(arguments)],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=repr,
    )
    return hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
