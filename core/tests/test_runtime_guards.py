"""Call guards: checks before argument validation, added by hosts and packs."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel
from toolweave import (
    CallResult,
    Context,
    ErrorKind,
    Kind,
    PackManager,
    Progress,
    Resources,
    Session,
    Tool,
    ToolEntry,
    ToolError,
    hookimpl,
    read_only_guard,
)

pytestmark = pytest.mark.anyio


class Path_(BaseModel):
    """A path."""

    path: str
    """Where."""


class Read(Tool[Path_, str]):
    """A read-only tool."""

    id = "read"
    kind = Kind.READ

    async def run(self, ctx: Context, args: Path_) -> str:
        """Pretend to read."""
        return f"read {args.path}"


class Write(Tool[Path_, str]):
    """A writing tool."""

    id = "write"
    kind = Kind.WRITE

    async def run(self, ctx: Context, args: Path_) -> str:
        """Pretend to write."""
        return f"wrote {args.path}"


class Follow(Tool[Path_, str]):
    """A streaming writer."""

    id = "follow"
    kind = Kind.EXECUTE

    async def stream(self, ctx: Context, args: Path_) -> AsyncIterator[Progress | str]:
        """One progress item, then the result."""
        yield Progress("going")
        yield "followed"


class PlanMode:
    """A pack that turns plan mode on in every session: only read-only tools may run."""

    @staticmethod
    @hookimpl
    def register_tools(builder: Any) -> None:
        """The three tools."""
        builder.add_all([Read, Write, Follow])

    @staticmethod
    @hookimpl
    def provide_resources(resources: Resources, session: Session) -> None:
        """Add the plan-mode guard."""
        session.add_guard(read_only_guard("Plan mode is on: only read-only tools may run."))


def plan_session() -> Session:
    packs = PackManager(strict=True)
    packs.add("plan_mode", PlanMode)
    return packs.build().session()


async def test_guard_from_a_pack_refuses_writes_before_validation() -> None:
    """A pack's guard refuses non-read-only tools with permission_denied, even when the
    arguments are invalid; read-only tools still run."""
    s = plan_session()
    refused = await s.call("write", {"path": "a"})
    assert refused.error is not None
    assert refused.error.kind == ErrorKind.PERMISSION_DENIED
    assert refused.text == "write is not allowed: Plan mode is on: only read-only tools may run."
    assert refused.effective_tool == "main:write"
    invalid = await s.call("write", {"nope": 1})
    assert invalid.error is not None
    assert invalid.error.kind == ErrorKind.PERMISSION_DENIED
    assert (await s.call("read", {"path": "a"})).text == "read a"


async def test_guards_apply_to_streams_and_can_be_removed() -> None:
    """Streaming calls are guarded too; removing the guard lets the calls through."""
    s = plan_session()
    items = [item async for item in s.stream("follow", {"path": "x"})]
    assert len(items) == 1
    assert isinstance(items[0], CallResult)
    assert items[0].error is not None
    assert items[0].error.kind == ErrorKind.PERMISSION_DENIED
    (guard,) = s.guards
    assert s.remove_guard(guard)
    assert not s.remove_guard(guard)
    assert (await s.call("write", {"path": "a"})).text == "wrote a"
    assert (await s.call("follow", {"path": "x"})).text == "followed"


async def test_guards_run_in_order_and_a_broken_one_refuses(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first refusal wins; a guard that raises refuses the call and is logged."""
    packs = PackManager()
    packs.add("tools", PlanMode)
    s = packs.build().session()
    seen: list[str] = []

    def record(session: Session, entry: ToolEntry) -> ToolError | None:
        seen.append(entry.name)
        return None

    def broken(session: Session, entry: ToolEntry) -> ToolError | None:
        raise RuntimeError("guard bug")

    s.remove_guard(s.guards[0])
    remove_record = s.add_guard(record)
    s.add_guard(broken)
    with caplog.at_level(logging.ERROR, logger="toolweave"):
        result = await s.call("read", {"path": "a"})
    assert seen == ["read"]
    assert result.error is not None
    assert result.error.kind == ErrorKind.PERMISSION_DENIED
    assert "guard bug" in caplog.text
    remove_record()
    assert s.guards == (broken,)
