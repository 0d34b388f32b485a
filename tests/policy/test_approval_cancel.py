"""Cancelling a call while an ``async`` approver is deciding it: by id through the
session, by the host's own cancel scope, and inside the approver itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio
import anyio.lowlevel
import pytest
from toolweave import CallResult, ErrorKind
from toolweave.policy import Approval, ApprovalRequest, attach_policy
from toolweave.runtime import Session

pytestmark = pytest.mark.anyio

RULES = {"allow": ["bash(git status)"]}


class Waiting:
    """An async approver that waits until it is told the answer."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.answer = anyio.Event()

    async def __call__(self, request: ApprovalRequest) -> Approval:
        self.asked.set()
        await self.answer.wait()
        return Approval.ONCE


async def test_a_call_waiting_for_approval_is_running_and_cancelled_by_id(
    make_session: Callable[..., Session],
) -> None:
    """While its approval is pending the call is in ``session.running``;
    ``cancel(call_id)`` ends it as ``cancelled`` and the tool never runs."""
    session = make_session()
    approver = Waiting()
    attach_policy(session, RULES, approver=approver)
    results: list[CallResult] = []

    async def call() -> None:
        results.append(await session.call("bash", {"command": "make"}, "k1"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await approver.asked.wait()
        assert session.running == ["k1"]
        assert session.cancel("k1")
    [result] = results
    assert result.error is not None
    assert result.error.kind is ErrorKind.CANCELLED
    assert result.call_id == "k1"
    assert session.running == []
    approver.answer.set()
    done = await session.call("bash", {"command": "make"}, "k2")  # the session goes on
    assert done.ok
    assert done.text == "ran make"
    assert session.running == []


async def test_a_host_cancelling_a_call_waiting_for_approval_still_cancels_it(
    make_session: Callable[..., Session],
) -> None:
    """The host's own cancel scope still cancels the waiting call (its task is
    cancelled), and the call is no longer listed as running afterwards."""
    session = make_session()
    approver = Waiting()
    attach_policy(session, RULES, approver=approver)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call, "bash", {"command": "make"}, "k1")
            await approver.asked.wait()
            assert session.running == ["k1"]
            scope.cancel()
    assert scope.cancelled_caught
    assert session.running == []


async def test_an_approval_cancelled_inside_the_approver_is_a_refusal(
    make_session: Callable[..., Session],
) -> None:
    """An approver whose own wait is cancelled (the question was dropped) refuses the
    call with ``permission_denied``; the host's task is not cancelled."""
    session = make_session()

    async def dropped(request: ApprovalRequest) -> Approval:
        question = asyncio.get_running_loop().create_future()
        question.cancel()
        result: Approval = await question
        return result

    attach_policy(session, RULES, approver=dropped)
    refused = await session.call("bash", {"command": "make"}, "c1")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert "the approval was cancelled" in refused.text
    assert refused.error.data == {"approval": "cancelled"}
    await anyio.lowlevel.checkpoint()  # still running: nobody cancelled this task
    assert (await session.call("bash", {"command": "git status"}, "c2")).ok
