"""The environment of commands: the host's secrets stay out unless the host opts in."""

from __future__ import annotations

import os
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
