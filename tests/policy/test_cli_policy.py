"""`toolweave call --policy FILE`: rules decide, `ask` goes to the terminal (the
ask_user prompt's channel), and without one the call stays pending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolweave.center import Center
from toolweave.cli import app
from typer.testing import CliRunner

pytest.importorskip("toolweave_fs", reason="toolweave-fs is not installed")

runner = CliRunner()


def call(workspace: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(
        app, ["call", *args, "--workspace", str(workspace), "--no-plugins", "--no-mcp"],
        input=stdin,
    )  # fmt: skip
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.md").write_text("hello\n")
    (tmp_path / "policy.toml").write_text(
        'allow = ["read_file(*.md)"]\nask = ["write_file"]\ndeny = ["read_file(.env)"]\n'
    )
    (tmp_path / ".env").write_text("SECRET=1\n")
    return tmp_path


def test_rules_allow_deny_and_leave_ask_pending_without_a_terminal(workspace: Path) -> None:
    policy = str(workspace / "policy.toml")
    code, out, _ = call(workspace, "read_file", '{"path": "notes.md"}', "--policy", policy)
    assert code == 0
    assert "hello" in out
    code, _, err = call(workspace, "read_file", '{"path": ".env"}', "--policy", policy)
    assert code == 1
    assert "permission_denied" in err
    code, out, _ = call(
        workspace, "write_file", '{"path": "new.md", "content": "x"}', "--policy", policy,
        "--no-ask", "--json",
    )  # fmt: skip
    assert code == 1
    error = json.loads(out)["error"]
    assert error["data"]["approval"] == "pending"
    assert not (workspace / "new.md").exists()


def test_ask_is_answered_on_the_terminal_and_always_is_audited(workspace: Path) -> None:
    policy = str(workspace / "policy.toml")
    store = str(workspace / "center.db")
    args = '{"path": "new.md", "content": "x"}'
    code, _, _ = call(workspace, "write_file", args, "--policy", policy, "--ask", stdin="3\n")
    assert code == 1  # the third choice denies
    assert not (workspace / "new.md").exists()
    code, _, err = call(
        workspace, "write_file", args, "--policy", policy, "--ask", "--center", store,
        stdin="2\n",
    )  # fmt: skip
    assert code == 0, err
    assert (workspace / "new.md").read_text() == "x"
    with Center.open(store) as center:
        changes = [e for e in center.audit(type="change") if e.outcome == "policy.allow"]
        assert changes
        assert "write_file" in json.dumps(changes[0].after)
