"""The environment of commands: the host's secrets stay out unless the host opts in."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from toolweave import Environment, Session

pytestmark = pytest.mark.anyio

SessionFactory = Callable[..., Session]

SECRETS = {
    "OPENAI_API_KEY": "sk-test-openai",
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "AWS_SECRET_ACCESS_KEY": "aws-test-secret",
    "GITHUB_TOKEN": "ghp_test",
}


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host process holds API keys and tokens, and a locale variable."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_TW_TEST", "C.UTF-8")
    monkeypatch.setenv("TW_PROJECT_SETTING", "visible-when-passed")


def _names(env_output: str) -> set[str]:
    return {line.split("=", 1)[0] for line in env_output.splitlines() if "=" in line}


async def _background_env(session: Session, workspace: Path) -> set[str]:
    started = await session.call("bash", {"command": "env > env.txt", "is_background": True})
    assert started.error is None, started.text
    waited = await session.call(
        "wait_tasks", {"task_ids": [started.output["task_id"]], "timeout": 10_000}
    )
    assert waited.error is None, waited.text
    assert waited.output["timed_out"] is False
    return _names((workspace / "env.txt").read_text())


async def test_secrets_reach_no_command_by_default(
    secrets: None, make_session: SessionFactory, workspace: Path
) -> None:
    """Neither a foreground nor a background `env` shows the host's API keys and tokens;
    the allow-listed variables (PATH, HOME, LC_*) are there."""
    session = make_session()
    foreground = await session.call("bash", {"command": "env"})
    assert foreground.error is None, foreground.text
    for names in (_names(foreground.output["output"]), await _background_env(session, workspace)):
        assert names.isdisjoint(SECRETS), names & set(SECRETS)
        assert "TW_PROJECT_SETTING" not in names
        assert {"PATH", "LC_TW_TEST"} <= names
        assert ("HOME" in names) == ("HOME" in os.environ)


async def test_the_host_opts_in_to_more(
    secrets: None, make_session: SessionFactory, workspace: Path
) -> None:
    """``env_passthrough`` adds host variables by pattern, ``env`` sets variables, and
    ``inherit_env`` passes everything, secrets included (an explicit choice)."""
    params = {"env_passthrough": ["TW_PROJECT_*"], "env": {"TW_SET": "yes"}}
    session = make_session({"tools": [{"id": "bash", "params": params}]})
    result = await session.call("bash", {"command": 'echo "$TW_PROJECT_SETTING $TW_SET"; env'})
    first, _, rest = result.output["output"].partition("\n")
    assert first == "visible-when-passed yes"
    assert _names(rest).isdisjoint(SECRETS)

    inherit = {"id": "bash", "params": {"inherit_env": True}}
    everything = make_session({"tools": [inherit, "wait_tasks"]})
    result = await everything.call("bash", {"command": "env"})
    assert set(SECRETS) <= _names(result.output["output"])
    assert set(SECRETS) <= await _background_env(everything, workspace)


async def test_a_host_environment_resource_is_used_as_given(
    secrets: None, make_session: SessionFactory
) -> None:
    """An ``Environment`` the host put in the resources is the command's environment,
    whatever the host process holds; the ``env`` param still goes on top."""
    session = make_session({"tools": [{"id": "bash", "params": {"env": {"TW_SET": "yes"}}}]})
    session.set_resource(Environment({"PATH": os.environ["PATH"], "ONLY": "this"}))
    result = await session.call("bash", {"command": "env"})
    assert _names(result.output["output"]) - {"PWD", "SHLVL", "_"} == {
        "PATH",
        "ONLY",
        "TW_SET",
        "TOOLWEAVE_PROCESS_TREE",
    }


_READ_HOST = r"""
import asyncio, ctypes, json, os, sys
import toolweave

workspace = sys.argv[1]
toolset = toolweave.load_packs(include=["shell"]).build()


async def main():
    session = toolset.session(workspace=workspace)
    warm = await session.call("bash", {"command": "true"})  # every import done as root
    assert warm.error is None, warm.text
    # Become an ordinary user's process: another user, and dumpable as such a process is.
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)
    for command in (f"cat /proc/{os.getpid()}/environ", "cat /proc/$PPID/environ"):
        result = await session.call("bash", {"command": command})
        print(json.dumps({"text": result.text}))
    await session.aclose()


asyncio.run(main())
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="needs Linux and root, to run the host as an ordinary user of its own",
)
async def test_a_command_cannot_read_the_host_start_up_environment() -> None:
    """A command runs as the host's user, who may read any of that user's processes'
    /proc/<pid>/environ: the environment the host was started with, API keys included.
    The host is not dumpable while it runs commands, so the command is refused."""
    import json
    import shutil
    import tempfile

    import anyio

    # Under /tmp itself: pytest's folders are closed to other users.
    workspace = tempfile.mkdtemp(prefix="tw-environ-", dir="/tmp")
    os.chmod(workspace, 0o777)
    env = {**os.environ, "OPENAI_API_KEY": "sk-host-start-up-secret"}
    env.pop("TOOLWEAVE_HOST_DUMPABLE", None)
    try:
        with anyio.fail_after(120):
            done = await anyio.run_process(
                [sys.executable, "-c", _READ_HOST, workspace], env=env, check=False
            )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answers = [json.loads(line)["text"] for line in out.splitlines() if line.startswith("{")]
    assert len(answers) == 2, out
    for text in answers:
        assert "sk-host-start-up-secret" not in text
        assert "environ: Permission denied" in text, text
