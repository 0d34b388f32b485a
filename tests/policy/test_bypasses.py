"""Deny rules hold where a command or a path hides: behind an absolute path or a
wrapper that runs it (``sudo``, ``env``, ``xargs``, ``find -exec`` ...), and in a
file tool whose path argument has another name, or is renamed for the model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolweave import ErrorKind, ToolSetBuilder, tool
from toolweave.policy import Effect, Policy, attach_policy

DENY_RM = {"allow": ["bash(echo *)", "bash(make *)", "bash(nice *)"], "deny": ["bash(rm *)"]}


@pytest.fixture
def effect(shell_effect: Callable[..., Effect]) -> Callable[[str], Effect]:
    return lambda command: shell_effect(command, DENY_RM)


@pytest.mark.parametrize(
    "command",
    [
        "/bin/rm -rf src",
        "./rm -rf src",
        "command rm -rf src",
        "builtin rm x",
        "env rm -rf src",
        "env -i HOME=/ -u PATH rm -rf src",
        "sudo -u root rm -rf src",
        "doas rm x",
        "nice -n 10 rm -rf src",
        "nohup rm x",
        "timeout 5 rm x",
        "timeout -s KILL 5 rm x",
        "time rm x",
        "stdbuf -oL rm x",
        "setsid rm x",
        "flock /tmp/lock rm x",
        "busybox rm x",
        "exec rm x",
        "echo src | xargs rm -rf",
        "echo src | xargs -n 1 rm",
        "find . -name '*.o' -exec rm {} \\;",
        "find . -execdir rm -f {} +",
        "sudo nice env /usr/bin/rm x",
        "echo x && sudo rm x",
    ],
)
def test_a_deny_rule_meets_the_command_behind_a_path_or_a_wrapper(
    effect: Callable[[str], Effect], command: str
) -> None:
    """``bash(rm *)`` refuses rm however it is reached (or, where the wrapper's own
    words cannot be told apart, asks): never allowed."""
    assert effect(command) is not Effect.ALLOW
    assert effect(command) is Effect.DENY or command.startswith(("time ", "exec "))


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("nice make build", Effect.ALLOW),  # nice and make are both allowed
        ("nice cargo build", Effect.ASK),  # what nice runs must be allowed too
        ("watch -n 1 rm x", Effect.DENY),  # a string it runs: read for deny rules
        ("timeout $T rm x", Effect.DENY),
        ("echo rm", Effect.ALLOW),  # an argument is not a command
    ],
)
def test_what_a_wrapper_runs_must_be_allowed_too(
    effect: Callable[[str], Effect], command: str, expected: Effect
) -> None:
    assert effect(command) is expected


@tool(blocking=False, read_only=True)
def read_file(file: str) -> str:
    """Read a file. Not for writing.

    Args:
        file: The file.
    """
    return f"read {file}"


@pytest.mark.parametrize(
    ("config", "argument", "expected"),
    [
        # 'file' is not a listed path argument: the rule might be about it, so it asks
        (None, "file", "it might be what the rule deny read_file"),
        # renamed for the model to 'path', a listed name: matched, denied
        ({"tools": [{"id": "read_file", "rename": {"file": "path"}}]}, "path", "the rule deny read_file"),
    ],
)  # fmt: skip
def test_a_deny_rule_on_a_file_tool_holds_whatever_its_path_argument_is_called(
    tmp_path: Path, config: dict[str, object] | None, argument: str, expected: str
) -> None:
    """A rule written for the tool is not skipped because its path argument is not in
    path_arguments (the call is asked about, never run), and a parameter renamed for
    the model to a listed name is matched like the listed name."""
    (tmp_path / ".env").write_text("SECRET")
    builder = ToolSetBuilder()
    builder.add(read_file)
    session = builder.build(config).session(workspace=tmp_path)
    attach_policy(session, {"deny": ["read_file(*.env)", "read_file(.env)"]})
    result = anyio.run(session.call, "read_file", {argument: ".env"}, "c1")
    assert result.error is not None, result.text
    assert result.error.kind is not ErrorKind.EXECUTION_ERROR
    assert expected in result.text
    allowed = anyio.run(session.call, "read_file", {argument: "notes.txt"}, "c2")
    assert (allowed.error is None) is (config is not None), allowed.text


def test_a_link_loop_cannot_carry_a_path_past_an_allow_rule(tmp_path: Path) -> None:
    """``loop/../out.txt`` (loop links to itself, out.txt leads outside): the rules
    cannot tell where it leads, so an allow rule does not cover it; it is asked about."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "loop").symlink_to("loop")
    (workspace / "out.txt").symlink_to(outside / "secret.txt")

    @tool(blocking=False, read_only=True)
    def read_text(path: str) -> str:
        """Read a file. Not for writing.

        Args:
            path: The file.
        """
        return f"read {path}"

    builder = ToolSetBuilder()
    builder.add(read_text)
    session = builder.build().session(workspace=workspace)
    entry = session.resolve("read_text")
    assert entry is not None
    policy = Policy({"allow": ["read_text(./**)"], "read_only": "ask"})
    root = str(workspace.resolve())
    assert policy.decide(entry, entry.parse({"path": "notes.txt"}), root).effect is Effect.ALLOW
    looped = entry.parse({"path": "loop/../out.txt"})
    assert policy.decide(entry, looped, root).effect is Effect.ASK
