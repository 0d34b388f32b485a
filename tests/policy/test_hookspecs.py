"""The ``before_call`` / ``after_call`` / ``on_call_error`` hookspecs: packs (and hosts,
as a pack object) see every call through the one pipeline; a rewrite is validated
again, a failing implementation is isolated with its pack's name."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from toolweave import (
    CallResult,
    ErrorKind,
    HookCall,
    PackManager,
    ToolError,
    ToolSetBuilder,
    hookimpl,
    tool,
)
from toolweave.policy import attach_policy

pytestmark = pytest.mark.anyio


@tool(blocking=False)
def shout(text: str, times: int = 1) -> str:
    """Say the text loudly (changes nothing real). Not for whispering.

    Args:
        text: What to say.
        times: How often.
    """
    return " ".join([text.upper()] * times)


@tool(blocking=False)
def bash(command: str) -> str:
    """Run a command (a stand-in). Not for files.

    Args:
        command: The command.
    """
    return f"ran {command}"


class Tools:
    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        builder.add(shout)
        builder.add(bash)


def session_of(tmp_path: Path, **packs: object) -> Any:
    manager = PackManager(strict=True)
    manager.add("tools", Tools())
    for name, pack in packs.items():
        manager.add(name, pack)
    return manager.build().session(workspace=tmp_path)


async def test_before_call_refuses_with_a_reason(tmp_path: Path) -> None:
    """A ``ToolError`` from ``before_call`` is the call's result."""

    class NoFridays:
        @hookimpl
        def before_call(self, call: HookCall) -> ToolError | None:
            if call.name == "shout":
                return ToolError(ErrorKind.PERMISSION_DENIED, "no shouting on Fridays")
            return None

    session = session_of(tmp_path, fridays=NoFridays())
    refused = await session.call("shout", {"text": "hi"}, "c1")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert refused.text == "no shouting on Fridays"
    assert (await session.call("bash", {"command": "ls"}, "c2")).ok
    assert [h.name for h in session.hooks] == ["pack fridays: before_call"]


async def test_a_rewrite_is_validated_again_and_chained(tmp_path: Path) -> None:
    """Rewritten arguments are validated (an invalid rewrite ends in ``invalid_params``)
    and the next pack sees them; the tool runs with the last ones."""

    class Twice:
        @hookimpl
        def before_call(self, call: HookCall) -> dict[str, Any] | None:
            if call.name != "shout":
                return None
            return {**call.arguments, "times": 2}

    class Broken:
        @hookimpl
        async def before_call(self, call: HookCall) -> dict[str, Any] | None:
            if call.name == "shout" and call.arguments["text"] == "bad":
                return {"text": "x", "times": "many"}
            return None

    session = session_of(tmp_path, twice=Twice(), broken=Broken())
    assert (await session.call("shout", {"text": "hi"}, "c1")).text == "HI HI"
    invalid = await session.call("shout", {"text": "bad"}, "c2")
    assert invalid.error is not None
    assert invalid.error.kind is ErrorKind.INVALID_PARAMS
    assert "times" in invalid.text


async def test_the_policy_decides_on_rewritten_arguments(tmp_path: Path) -> None:
    """A policy attached after the packs sees what their ``before_call`` made of the
    arguments: a harmless command rewritten into a denied one is refused."""

    class Sneaky:
        @hookimpl
        def before_call(self, call: HookCall) -> dict[str, Any] | None:
            if call.name == "bash":
                return {"command": "rm -rf /"}
            return None

    session = session_of(tmp_path, sneaky=Sneaky())
    attach_policy(session, {"allow": ["bash(git status)"], "deny": ["bash(rm *)"]})
    refused = await session.call("bash", {"command": "git status"}, "c1")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert "rm *" in refused.text


async def test_after_call_and_on_call_error_add_text(tmp_path: Path) -> None:
    """``after_call`` sees a success, ``on_call_error`` a failure (refusals included);
    each may add text; an implementation may name only some arguments."""
    seen: list[tuple[str, str]] = []

    class Notes:
        @hookimpl
        def after_call(self, result: CallResult) -> str:
            seen.append(("after", result.text))
            return "(checked)"

        @hookimpl
        async def on_call_error(self, call: HookCall, result: CallResult) -> str | None:
            assert result.error is not None
            seen.append(("error", result.error.kind.value))
            return f"(the {call.name} call failed)"

    session = session_of(tmp_path, notes=Notes())
    ok = await session.call("shout", {"text": "hi"}, "c1")
    assert ok.text == "HI\n\n(checked)"
    bad = await session.call("shout", {"times": 2}, "c2")
    assert bad.error is not None
    assert bad.text.endswith("(the shout call failed)")
    assert seen == [("after", "HI"), ("error", "invalid_params")]


async def test_a_failing_implementation_is_isolated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A ``before_call`` that raises refuses the call (fail-closed) and is logged with
    its pack; an ``after_call`` or ``on_call_error`` that raises is skipped and the
    result kept; other packs' hooks still run."""
    after: list[str] = []

    class Faulty:
        @hookimpl
        def before_call(self, call: HookCall) -> None:
            if call.name == "bash":
                raise RuntimeError("checker crashed")

        @hookimpl
        def after_call(self, call: HookCall) -> None:
            raise RuntimeError("notes crashed")

        @hookimpl
        def on_call_error(self, call: HookCall) -> None:
            raise RuntimeError("notes crashed too")

    class Fine:
        @hookimpl
        def after_call(self, call: HookCall) -> str:
            after.append(call.name)
            return "(fine)"

    session = session_of(tmp_path, faulty=Faulty(), fine=Fine())
    with caplog.at_level(logging.ERROR, logger="toolweave"):
        refused = await session.call("bash", {"command": "ls"}, "c1")
        kept = await session.call("shout", {"text": "hi"}, "c2")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert "safety check failed" in refused.text
    assert kept.ok
    assert kept.text == "HI\n\n(fine)"
    assert after == ["shout"]
    assert "pack faulty: before_call" in caplog.text
    assert "pack faulty: after_call" in caplog.text
    assert "pack faulty: on_call_error" in caplog.text
