"""The rules against the real built-in packs: toolweave-shell's ``bash`` and
toolweave-fs's file tools, whose argument names the defaults expect."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave import ErrorKind, load_packs
from toolweave.policy import attach_policy

pytestmark = pytest.mark.anyio


async def test_bash_and_file_tools_under_rules(tmp_path: Path) -> None:
    """An allowed command runs for real; one with a redirection waits for approval and
    runs on resume; ``write_file`` is allowed in src only, a deny wins for .env."""
    (tmp_path / "src").mkdir()
    session = load_packs(include=["fs", "shell"], strict=True).build().session(workspace=tmp_path)
    attach_policy(
        session,
        {"allow": ["bash(echo *)", "write_file(src/**)"], "deny": ["read_file(*.env)"]},
    )
    async with session:
        ran = await session.call("bash", {"command": "echo hello"}, "c1")
        assert ran.ok
        assert "hello" in ran.text
        held = await session.call("bash", {"command": "echo hi > note.txt"}, "c2")
        assert held.error is not None
        assert held.error.data["approval"] == "pending"
        assert not (tmp_path / "note.txt").exists()
        assert (await session.resume("c2", approved=True)).ok
        assert (tmp_path / "note.txt").read_text() == "hi\n"
        wrote = await session.call("write_file", {"path": "src/a.py", "content": "x"}, "c3")
        assert wrote.ok
        outside = await session.call("write_file", {"path": "b.py", "content": "x"}, "c4")
        assert outside.error is not None
        assert outside.error.kind is ErrorKind.UNAVAILABLE
        (tmp_path / ".env").write_text("KEY=1\n")
        secret = await session.call("read_file", {"path": ".env"}, "c5")
        assert secret.error is not None
        assert secret.error.kind is ErrorKind.PERMISSION_DENIED
