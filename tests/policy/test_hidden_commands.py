"""Commands that hide where the shell analysis used to look past them: a command
substitution inside a parameter expansion (``${x:-$(rm y)}``), wrappers whose options
take forms the tools accept (``sudo -Eu root``, ``env -``, ``flock FILE -c``,
``bash -c --``) and ``trap``. Each is checked against a real bash too: the command
really runs ``rm``, and a deny rule for ``rm`` refuses it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolweave import ErrorKind, load_packs
from toolweave.policy import Effect, attach_policy

ECHO = {"allow": ["bash(echo *)"]}
DENY_RM = {"allow": ["bash(echo *)"], "deny": ["bash(rm *)"]}
DENY_RM_DEFAULT_ALLOW = {"deny": ["bash(rm *)"], "default": "allow"}

BASH = shutil.which("bash")


def _rm_runs_in_real_bash(command: str, tmp_path: Path, needs: str | None = None) -> None:
    """``command`` (``VICTIM`` standing for a file) removes that file when a real bash
    runs it, with ``u`` and ``v`` unset and ``x=abc``."""
    if BASH is None:
        pytest.skip("no bash on this machine")
    if needs is not None and shutil.which(needs) is None:
        pytest.skip(f"no {needs} on this machine")
    victim = tmp_path / "victim"
    victim.write_text("x")
    (tmp_path / "src").mkdir(exist_ok=True)
    text = command.replace("VICTIM", shlex.quote(str(victim)))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "x": "abc"}
    subprocess.run(
        [BASH, "-c", text],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    for _ in range(100):  # a process substitution may finish after bash
        if not victim.exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"real bash did not run rm in {text!r}")


# -- command substitutions inside parameter expansions --------------------------------------

EXPANSIONS = [
    "echo ${u:-$(rm -f VICTIM)}",
    "echo ${u:=`rm -f VICTIM`}",
    "echo ${x/a/$(rm -f VICTIM)}",
    "echo ${u[$(rm -f VICTIM)]}",
    'echo "${u:-$(rm -f VICTIM)}"',
    "echo ${u:-<(rm -f VICTIM)}",
    "echo a${u:-$(rm -f VICTIM)}b",
    "echo ${x:+$(rm -f VICTIM)}",
    "echo ${u:-$(echo ${v:-$(rm -f VICTIM)})}",
    "echo ${u:-`echo \\`rm -f VICTIM\\``}",
    "echo ${u:-$(echo \\); rm -f VICTIM)}",
]


@pytest.mark.parametrize("command", EXPANSIONS)
def test_a_command_hidden_in_a_parameter_expansion_meets_deny_rules(
    shell_effect: Callable[..., Effect], tmp_path: Path, command: str
) -> None:
    """bashlex leaves ``${...}`` unread: the rm inside is read now, so ``bash(rm *)``
    refuses it, and ``bash(echo *)`` alone never allows it (it asks, even where the
    default is allow)."""
    _rm_runs_in_real_bash(command, tmp_path)
    line = command.replace("VICTIM", "victim")
    assert shell_effect(line, DENY_RM) is Effect.DENY
    assert shell_effect(line, DENY_RM_DEFAULT_ALLOW) is Effect.DENY
    assert shell_effect(line, ECHO) is Effect.ASK
    assert shell_effect(line, {**ECHO, "default": "allow"}) is Effect.ASK


def test_an_expansion_the_parser_cannot_read_is_never_allowed(
    shell_effect: Callable[..., Effect], tmp_path: Path
) -> None:
    """A ``}`` inside the substitution confuses bashlex: the line is never allowed, and
    its words, read loosely, still meet the deny rule."""
    command = "echo ${u:-$(echo }; rm -f VICTIM)}"
    _rm_runs_in_real_bash(command, tmp_path)
    line = command.replace("VICTIM", "victim")
    assert shell_effect(line, DENY_RM_DEFAULT_ALLOW) is Effect.DENY
    assert shell_effect(line, {**ECHO, "default": "allow"}) is Effect.ASK


@pytest.mark.parametrize(
    "command",
    ["echo ${HOME}/x", "echo ${u:-default}", "echo ${#u}", "echo ${u:-a} ${v/b/c}", "echo '${u:-$(rm x)}'"],
)  # fmt: skip
def test_plain_parameter_expansions_are_still_allowed(
    shell_effect: Callable[..., Effect], command: str
) -> None:
    """An expansion without a command in it is only dynamic: a trailing ``*`` covers it
    (single quotes expand nothing)."""
    assert shell_effect(command, DENY_RM) is Effect.ALLOW


def test_the_real_shell_tool_refuses_a_hidden_rm(tmp_path: Path) -> None:
    """Through toolweave-shell's real ``bash``: the call is refused and the file stays."""
    victim = tmp_path / "victim"
    victim.write_text("x")
    session = load_packs(include=["shell"], strict=True).build().session(workspace=tmp_path)
    attach_policy(session, DENY_RM)

    async def main() -> None:
        async with session:
            command = f"echo ${{u:-$(rm -f {shlex.quote(str(victim))})}}"
            result = await session.call("bash", {"command": command}, "c1")
            assert result.error is not None
            assert result.error.kind is ErrorKind.PERMISSION_DENIED
            ran = await session.call("bash", {"command": "echo ${u:-fine}"}, "c2")
            assert ran.ok, ran.text
            assert "fine" in ran.text

    anyio.run(main)
    assert victim.exists()


# -- wrappers' options, as the tools read them ------------------------------------------------

REAL = [
    # (command, the tool it needs to run for real)
    ("env -iC src rm -f VICTIM", "env"),
    ("env - rm -f VICTIM", "env"),
    ("env -i - A=1 rm -f VICTIM", "env"),
    ("env -iS'rm -f VICTIM'", "env"),
    ("env --split-string='rm -f VICTIM'", "env"),
    ("flock lock -c 'rm -f VICTIM'", "flock"),
    ("flock -w5 lock --command 'rm -f VICTIM'", "flock"),
    ("bash -c -- 'rm -f VICTIM'", None),
    ("bash -ec 'rm -f VICTIM'", None),
    ("bash -o errexit -c 'rm -f VICTIM'", None),
    ("bash -c -e 'rm -f VICTIM'", None),
    ("trap 'rm -f VICTIM' EXIT", None),
    ("trap -- 'rm -f VICTIM' EXIT", None),
    ("eval -- 'rm -f VICTIM'", None),
    ("nice -5 rm -f VICTIM", "nice"),
    ("nice -n5 rm -f VICTIM", "nice"),
    ("timeout -sKILL 5 rm -f VICTIM", "timeout"),
    ("timeout --sig KILL 5 rm -f VICTIM", "timeout"),
    ("ionice -t rm -f VICTIM", "ionice"),
    ("setsid -fw rm -f VICTIM", "setsid"),
    ("stdbuf -oL -eL rm -f VICTIM", "stdbuf"),
    ("taskset -c 0 rm -f VICTIM", "taskset"),
    ("printf %s VICTIM | xargs -0n1 rm -f", "xargs"),
    ("watch -x -n1 -g rm -f VICTIM", "watch"),
    ("nohup -- rm -f VICTIM", "nohup"),
]


@pytest.mark.parametrize(("command", "needs"), REAL)
def test_a_wrapper_runs_rm_and_the_deny_rule_meets_it(
    shell_effect: Callable[..., Effect], tmp_path: Path, command: str, needs: str | None
) -> None:
    """Combined short flags, attached values, ``--opt value``, ``--`` and ``env -``
    are read as the tools read them (checked against the real tool), ``flock -c``,
    ``env -S`` and ``trap`` strings are read for deny rules."""
    if command.startswith("watch"):
        line = command.replace("VICTIM", "victim")  # watch never ends: policy only
    else:
        _rm_runs_in_real_bash(command, tmp_path, needs)
        line = command.replace("VICTIM", "victim")
    assert shell_effect(line, DENY_RM_DEFAULT_ALLOW) is Effect.DENY


@pytest.mark.parametrize(
    "command",
    [
        "sudo -Eu root rm -rf x",
        "sudo -nu root rm -rf x",
        "sudo --user=root rm x",
        "sudo --us root rm x",  # an unambiguous prefix of --user
        "sudo FOO=1 rm x",
        "sudo -h host rm x",  # -h may or may not take the next word
        "doas -nu root rm -rf x",
        "env -i HOME=/ -u PATH rm -rf src",
        "chrt -o 0 rm x",
        "chrt -o rm x",  # newer chrt: no priority for SCHED_OTHER
        "exec -cla name rm x",
        "command -- rm x",
        "chroot --userspec u:g / rm x",
        "strace --follow-forks rm x",  # an option the table does not know
        "sudo -Z rm x",
        "su -c 'rm x'",
        "runuser -l user --command='rm x'",
        "script -qc 'rm x' /dev/null",
        "bash $X 'rm x'",  # $X may be -c
    ],
)
def test_wrappers_the_machine_lacks_still_meet_deny_rules(
    shell_effect: Callable[..., Effect], command: str
) -> None:
    assert shell_effect(command, DENY_RM_DEFAULT_ALLOW) is Effect.DENY


@pytest.mark.parametrize(
    "command",
    [
        "sudo -Z make build",  # an unknown option: where the command starts is unsure
        "env $VARS make build",
        "strace --follow-forks make build",
        "flock lock -c 'make build'",
        "trap 'make build' EXIT",
        "env -S 'make build'",
        "echo make | sh",  # a shell reading commands from its input
    ],
)
def test_what_a_wrapper_runs_unsurely_is_never_allowed_by_a_pattern(
    shell_effect: Callable[..., Effect], command: str
) -> None:
    """Patterns covering every word still do not allow a line whose command the
    analysis cannot be sure of; it asks, even where the default is allow."""
    config = {
        "allow": [
            f"bash({w} *)" for w in ("sudo", "env", "strace", "flock", "trap", "make", "echo", "sh")
        ]
        + ["bash(sh)"],
        "default": "allow",
    }
    assert shell_effect(command, config) is Effect.ASK


@pytest.mark.parametrize(
    "command",
    [
        "sudo -Eu root make build",
        "sudo --user root make build",
        "nice -n 5 make build",
        "timeout -s KILL 5 make build",
        "env -i FOO=1 make build",
        "xargs -0 -n1 make",
    ],
)
def test_wrappers_read_for_sure_are_allowed_when_every_part_is(
    shell_effect: Callable[..., Effect], command: str
) -> None:
    config = {
        "allow": [f"bash({w} *)" for w in ("sudo", "nice", "timeout", "env", "xargs", "make")]
    }
    assert shell_effect(command, config) is Effect.ALLOW
    assert shell_effect(command, {"allow": ["bash(make *)"]}) is Effect.ASK


# -- programs that run a command named in their arguments -----------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "time rm -f VICTIM",
        "time -p rm -f VICTIM | cat",
        "coproc rm -f VICTIM",
        "echo ok; coproc rm -f VICTIM",
    ],
)
def test_what_the_parser_cannot_read_still_meets_deny_rules(
    shell_effect: Callable[..., Effect], tmp_path: Path, command: str
) -> None:
    """bashlex cannot read ``time`` or ``coproc``; the line's words, read loosely, still
    meet the deny rule (they used to ask), and it is never allowed by a pattern."""
    _rm_runs_in_real_bash(command, tmp_path)
    line = command.replace("VICTIM", "victim")
    assert shell_effect(line, DENY_RM_DEFAULT_ALLOW) is Effect.DENY
    assert shell_effect(line, {"allow": ["bash(time *)", "bash(coproc *)", "bash(echo *)"]}) is (
        Effect.ASK
    )


@pytest.mark.parametrize(
    "command",
    [
        "runuser -u root rm -rf x",
        "runuser -u root -- rm x",
        "pkexec --user root rm x",
        "setpriv --reuid 0 --regid 0 --clear-groups rm x",
        "nsenter -t 1 -m -u rm x",
        "unshare -r rm x",
        "systemd-run --user --wait rm x",
        "firejail --quiet rm x",
        "gdb -batch -ex run --args rm x",
        "ssh host rm -rf x",
        "ssh -p 22 host 'rm -rf x; ls'",
        "ssh -o ProxyCommand='rm x' host",
        "sg wheel 'rm -rf x'",
        "sg wheel -c 'rm x'",
        "parallel 'rm {}' ::: x",
        "tmux new-session -d 'rm x'",
    ],
)
def test_programs_that_run_a_command_meet_deny_rules(
    shell_effect: Callable[..., Effect], command: str
) -> None:
    """``runuser -u``, ``pkexec``, namespaces and sandboxes, debuggers, and programs that
    run their words as a shell string (``ssh host ...``, ``sg``, ``parallel``, ``tmux``):
    their options are not read, so every later word may start the command."""
    assert shell_effect(command, DENY_RM_DEFAULT_ALLOW) is Effect.DENY


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("runuser -u builder make build", "runuser"),
        ("pkexec make build", "pkexec"),
        ("ssh host make build", "ssh"),
        ("sg builders 'make build'", "sg"),
    ],
)
def test_what_such_a_program_runs_is_never_allowed_by_a_pattern(
    shell_effect: Callable[..., Effect], command: str, runner: str
) -> None:
    config = {"allow": [f"bash({runner} *)", "bash(make *)"], "default": "allow"}
    assert shell_effect(command, config) is Effect.ASK


def test_a_line_of_many_unsure_wrappers_is_read_in_bounded_work() -> None:
    """Each unsure wrapper may start its command at any later word; 20 of them used to
    give over a million commands to match (and 25 took most of a minute). The same words
    reached through another wrapper are read once, and past a budget the line is
    opaque."""
    from toolweave.policy._shell import analyse

    line = "env -i A=1 -u X " * 20 + "rm x"
    analysis = analyse(line, "/tmp", "/tmp")
    assert len(analysis.commands) <= 4096
    assert analysis.opaque
    assert any([w.text for w in c.words] == ["rm", "x"] for c in analysis.commands)


@pytest.mark.parametrize(
    "line",
    [
        "pkexec " + "a " * 20000,  # longer than the parser is given: read loosely
        "sudo -Z " + "a " * 3000,  # each later word may start the command
        "ssh host " + "a " * 2000,  # each later word may start the remote string
        "time " + "a " * 3000,  # the parser cannot read it: read loosely
    ],
)
def test_long_lines_are_read_in_bounded_work(line: str) -> None:
    """A line of thousands of words after a wrapper used to give a quadratic number of
    words to match (20,000 after ``sudo -Z``: 2 GB and most of a minute); the words
    collected are now bounded, and the line is opaque."""
    from toolweave.policy._shell import analyse

    analysis = analyse(line, "/tmp", "/tmp")
    assert analysis.opaque
    assert sum(len(c.words) for c in analysis.commands) <= 1 << 15


def test_a_long_line_still_meets_the_deny_rule_near_its_start(
    shell_effect: Callable[..., Effect],
) -> None:
    assert shell_effect("sudo -Z rm -rf x " + "a " * 3000, DENY_RM_DEFAULT_ALLOW) is Effect.DENY
    assert shell_effect("time rm -rf x " + "a " * 9000, DENY_RM_DEFAULT_ALLOW) is Effect.DENY
