"""Packs whose hooks return the wrong types: the pack fails or its step is refused,
with its name; the other packs and the host go on.

(Packs raising at import, calling ``sys.exit()`` or failing in their hooks are covered
by ``core/tests/test_loader*.py`` and, as real wheels, by ``tests/test_wheels.py``.)
"""

from __future__ import annotations

from typing import Any

import pytest
from toolweave import PackManager, ToolSetBuilder, hookimpl, tool

pytestmark = pytest.mark.anyio


@tool(blocking=False)
def ping() -> str:
    """Answer pong. Not for real work."""
    return "pong"


class Good:
    """A pack that works."""

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Add ping."""
        builder.add(ping)


class Wrong:
    """Hook implementations returning what their specs do not allow, chosen by name."""

    def __init__(self, what: str) -> None:
        self.what = what

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> Any:
        """Register something that is not a tool, or return a value."""
        if self.what == "not-a-tool":
            builder.add("not a tool")
        return 42

    @hookimpl
    def provide_call_hooks(self, session: Any) -> Any:
        """Return a non-iterable, or strings for hooks."""
        return {"int": 5, "strings": ["junk"]}.get(self.what)

    @hookimpl
    def provide_resources(self, resources: Any, session: Any) -> Any:
        """Return a value nobody asked for."""
        return "ignored"

    @hookimpl
    def before_call(self, call: Any) -> Any:
        """Return a number where a refusal or arguments belong."""
        return 42 if self.what == "before" else None

    @hookimpl
    def after_call(self, call: Any, result: Any) -> Any:
        """Return a number where text belongs."""
        return 42


@pytest.mark.parametrize(
    ("what", "stage"),
    [
        ("not-a-tool", "register_tools"),
        ("int", "provide_call_hooks"),
        ("strings", "provide_call_hooks"),
    ],
)
async def test_a_hook_returning_the_wrong_type_fails_its_pack_only(what: str, stage: str) -> None:
    """A wrong return type fails the pack at the hook that returned it, naming the
    pack and stage; the good pack's tool answers."""
    packs = PackManager()
    packs.add("good", Good())
    packs.add("wrong", Wrong(what))
    session = packs.build().session()
    info = packs.packs["wrong"]
    assert info.status == "failed"
    assert info.error is not None
    assert info.error.stage == stage
    assert "wrong" in str(info.error)
    assert packs.packs["good"].status == "loaded"
    assert (await session.call("ping", {})).text == "pong"


async def test_values_where_none_is_expected_are_ignored_and_checks_fail_closed() -> None:
    """Values returned by register_tools / provide_resources are ignored, a number from
    after_call adds no text, and a number from before_call refuses the call (a check
    that answers nonsense never lets a call through)."""
    packs = PackManager()
    packs.add("good", Good())
    packs.add("odd", Wrong("values"))
    session = packs.build().session()
    assert [p.status for p in packs.packs.values()] == ["loaded", "loaded"]
    assert (await session.call("ping", {})).text == "pong"

    refusing = PackManager()
    refusing.add("good", Good())
    refusing.add("before", Wrong("before"))
    refused = await refusing.build().session().call("ping", {})
    assert refused.error is not None
    assert refused.error.kind == "permission_denied"


class Exiting:
    """A pack whose call hooks call ``sys.exit()``."""

    @hookimpl
    def before_call(self, call: Any) -> Any:
        """Exit before the call."""
        raise SystemExit("before")

    @hookimpl
    def after_call(self, call: Any, result: Any) -> Any:
        """Exit after it."""
        raise SystemExit("after")


async def test_a_hook_calling_sys_exit_fails_closed_not_the_host() -> None:
    """A pack's check that calls ``sys.exit()`` is a failed check (the call is refused,
    as for any check that raises) and the host goes on; without the check, an
    ``after_call`` that exits adds nothing and the call's result stands."""
    packs = PackManager()
    packs.add("good", Good())
    packs.add("exiting", Exiting())
    session = packs.build().session()
    refused = await session.call("ping", {})
    assert refused.error is not None
    assert refused.error.kind == "permission_denied"
    assert (await session.call("ping", {})).error is not None  # still answering

    class AfterOnly:
        @hookimpl
        def after_call(self, call: Any, result: Any) -> Any:
            raise SystemExit("after")

    quiet = PackManager()
    quiet.add("good", Good())
    quiet.add("after", AfterOnly())
    answered = await quiet.build().session().call("ping", {})
    assert answered.error is None
    assert answered.text == "pong"
