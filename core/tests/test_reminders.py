"""Reminders: order, wrapping, dependency filtering, failures, switches."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from toolweave import (
    CallInfo,
    Context,
    ErrorKind,
    Kind,
    Reminder,
    Tool,
    ToolError,
    ToolOutput,
    ToolSetBuilder,
    UsageError,
    reminder,
)
from toolweave.authoring import ToolReminder, wrap_reminder
from toolweave.authoring._reminders import apply_reminders

pytestmark = pytest.mark.anyio


class Text(BaseModel):
    """One text argument."""

    text: str = "hi"
    """The text."""


class Echoed(ToolOutput):
    """The structured output of echo."""

    text: str
    """What was echoed."""

    def to_model(self) -> str:
        """The text itself."""
        return self.text


class Internal(Reminder):
    """Declared by the echo tool itself."""

    id = "echo_internal"

    def collect(self, ctx: Context, call: CallInfo) -> str | None:
        """Remind after every call."""
        return f"internal after {call.name}"


class Echo(Tool[Text, Echoed]):
    """Echoes its argument."""

    id = "echo"
    kind = Kind.READ
    reminders = (Internal,)

    async def run(self, ctx: Context, args: Text) -> Echoed:
        """Echo."""
        return Echoed(text=args.text)


class Fail(Tool[Text, str]):
    """Always fails."""

    id = "fail"

    async def run(self, ctx: Context, args: Text) -> str:
        """Fail with a kind."""
        raise ToolError(ErrorKind.CUSTOM, "no luck")


class Slow(Tool[Text, str]):
    """Sleeps until cancelled."""

    id = "slow"

    async def run(self, ctx: Context, args: Text) -> str:
        """Wait."""
        await anyio.sleep(30)
        return "late"


class First(Reminder):
    """A cross-tool reminder with two fragments."""

    id = "first"

    def collect(self, ctx: Context, call: CallInfo) -> list[str]:
        """Two notes, one of them blank (dropped)."""
        return [f"one ({call.tool})", "   ", f"two ({call.args.text})"]


class Second(Reminder):
    """A cross-tool reminder for echo only."""

    id = "second"

    def collect(self, ctx: Context, call: CallInfo) -> str | None:
        """Only after echo."""
        return "three" if call.name == "echo" else None


def build(*reminders: Any, tools: tuple[Any, ...] = (Echo,), **config: Any) -> Any:
    builder = ToolSetBuilder()
    builder.add_all(tools)
    for rem in reminders:
        builder.add_reminder(rem)
    return builder.build(config or None)


async def test_reminders_are_wrapped_and_appended_in_order(tmp_path: Path) -> None:
    """Tool-internal reminders come first, then cross-tool ones in registration order;
    each fragment gets its own tags and the structured output is untouched."""
    session = build(First(), Second).session(workspace=tmp_path)
    result = await session.call("echo", {"text": "hello"})
    assert result.ok
    assert result.output == {"text": "hello"}
    assert result.text == "\n\n".join(
        [
            "hello",
            wrap_reminder("internal after echo"),
            wrap_reminder("one (main:echo)"),
            wrap_reminder("two (hello)"),
            wrap_reminder("three"),
        ]
    )
    assert wrap_reminder(" x ") == "<system-reminder>\nx\n</system-reminder>"


async def test_reminders_also_follow_a_failed_call_but_not_a_cancelled_one(
    tmp_path: Path,
) -> None:
    """A tool failure gets reminders after its message; a cancelled call gets none."""
    toolset = build(Second, reminder(id="always")(lambda ctx, call: "note"), tools=(Fail, Slow))
    s = toolset.session(workspace=tmp_path)
    failed = await s.call("fail", {})
    assert failed.error is not None
    assert failed.error.kind == ErrorKind.CUSTOM
    assert failed.text == "no luck\n\n" + wrap_reminder("note")
    async with anyio.create_task_group() as tg:

        async def cancel_soon() -> None:
            await anyio.sleep(0.05)
            assert s.cancel("c1")

        tg.start_soon(cancel_soon)
        cancelled = await s.call("slow", {}, "c1")
    assert cancelled.error is not None
    assert cancelled.error.kind == ErrorKind.CANCELLED
    assert "system-reminder" not in cancelled.text


async def test_reminder_filtered_by_its_expression(tmp_path: Path) -> None:
    """A reminder whose `requires` does not hold for the configured set is left out."""

    class NeedsEdit(Reminder):
        id = "needs_edit"
        requires = "kind:edit"

        def collect(self, ctx: Context, call: CallInfo) -> str:
            return "edit reminder"

    class NeedsRead(Reminder):
        id = "needs_read"
        requires = "kind:read and tool:echo"

        def collect(self, ctx: Context, call: CallInfo) -> str:
            return "read reminder"

    toolset = build(NeedsEdit, NeedsRead)
    assert [r.id for r in toolset.reminders] == ["echo_internal", "needs_read"]
    result = await toolset.session(workspace=tmp_path).call("echo", {"text": "x"})
    assert "read reminder" in result.text
    assert "edit reminder" not in result.text


async def test_tool_internal_reminder_leaves_with_its_tool(tmp_path: Path) -> None:
    """A tool's own reminder is active only while the tool is in the set."""
    builder = ToolSetBuilder()
    builder.add_all([Echo, Fail])
    without_echo = builder.build({"tools": ["fail"]})
    assert without_echo.reminders == ()
    with_echo = builder.build()
    assert [r.id for r in with_echo.reminders] == ["echo_internal"]
    result = await without_echo.session(workspace=tmp_path).call("fail", {})
    assert "system-reminder" not in result.text


async def test_reminder_declared_by_two_tools_registers_once() -> None:
    """The same reminder class declared by two tools is one reminder, active with either."""

    class Other(Tool[Text, str]):
        id = "other"
        reminders = (Internal,)

        async def run(self, ctx: Context, args: Text) -> str:
            return args.text

    builder = ToolSetBuilder()
    builder.add_all([Echo, Other])
    (only,) = builder.reminders
    assert isinstance(only, ToolReminder)
    assert only.tools == ["main:echo", "main:other"]
    assert only.requires == "tool:main:echo or tool:main:other"
    assert [r.id for r in builder.build({"tools": ["other"]}).reminders] == ["echo_internal"]


async def test_raising_reminder_is_logged_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reminder that raises (or returns junk) never fails the call; the others still run."""

    @reminder(id="boom")
    def boom(ctx: Context, call: CallInfo) -> str:
        raise RuntimeError("reminder bug")

    @reminder(id="junk")
    def junk(ctx: Context, call: CallInfo) -> Any:
        return 42

    session = build(boom, junk, Second).session(workspace=tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        result = await session.call("echo", {"text": "ok"})
    assert result.ok
    assert result.text.endswith(wrap_reminder("three"))
    assert "reminder 'boom' raised" in caplog.text
    assert "reminder 'junk' returned int" in caplog.text


async def test_reminders_switched_off_by_config_and_by_session(tmp_path: Path) -> None:
    """`reminders = false` in the config, or `reminders=False` on the session, turns them off."""
    off = build(Second, reminders=False)
    assert off.reminders == ()
    assert (await off.session(workspace=tmp_path).call("echo", {})).text == "hi"
    on = build(Second)
    assert (await on.session(workspace=tmp_path, reminders=False).call("echo", {})).text == "hi"
    assert "three" in (await on.session(workspace=tmp_path).call("echo", {})).text


def test_duplicate_reminder_id_is_refused() -> None:
    """Two cross-tool reminders with one id are a usage error naming the id."""
    builder = ToolSetBuilder()
    builder.add_reminder(Second)
    with pytest.raises(UsageError, match="'second' is registered twice"):
        builder.add_reminder(Second())
    with pytest.raises(TypeError, match="not a Reminder"):
        builder.add_reminder(object())  # type: ignore[arg-type]


def test_apply_reminders_without_text() -> None:
    """An empty model text gets only the reminders, with no leading blank lines."""

    class Always(Reminder):
        id = "always"

        def collect(self, ctx: Context, call: CallInfo) -> str:
            return "note"

    info = CallInfo("echo", "main:echo", None, None)  # type: ignore[arg-type]
    assert apply_reminders([Always()], None, info, "") == wrap_reminder("note")  # type: ignore[arg-type]
