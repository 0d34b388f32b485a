"""Rules as users write them: precedence, defaults, roles, names and globs, and how the
configuration is loaded and checked."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from toolweave import ErrorKind
from toolweave.errors import ConfigError
from toolweave.policy import Effect, Policy, PolicyConfig, attach_policy, parse_rule
from toolweave.runtime import Session

pytestmark = pytest.mark.anyio


def decide(session: Session, config: object, tool: str, role: str | None = None, **args: object):
    policy = Policy(config)  # type: ignore[arg-type]
    entry = session.resolve(tool)
    assert entry is not None
    arguments = entry.parse(dict(args))
    return policy.decide(entry, arguments, str(session.workspace), role=role)


def test_deny_beats_ask_beats_allow(make_session: Callable[..., Session]) -> None:
    """The same call matched by rules of all three kinds is denied; by ask and allow,
    asked; by allow alone, allowed."""
    session = make_session()
    every = {"allow": ["write_file"], "ask": ["write_file(*.md)"], "deny": ["write_file(docs/**)"]}
    assert decide(session, every, "write_file", path="docs/a.md", content="").effect is Effect.DENY
    assert decide(session, every, "write_file", path="a.md", content="").effect is Effect.ASK
    assert decide(session, every, "write_file", path="a.txt", content="").effect is Effect.ALLOW
    # Order in the file does not matter: a deny listed "before" an allow still wins.
    flipped = {"deny": ["write_file"], "allow": ["write_file(*.md)"]}
    assert decide(session, flipped, "write_file", path="a.md", content="").effect is Effect.DENY


def test_defaults_read_only_runs_everything_else_asks(make_session: Callable[..., Session]) -> None:
    """Without rules a read-only tool runs and a tool that changes things asks; both
    defaults can be set per deployment, and per role."""
    session = make_session()
    assert decide(session, None, "read_file", path="x").effect is Effect.ALLOW
    assert decide(session, None, "write_file", path="x", content="").effect is Effect.ASK
    strict = {"default": "deny", "read_only": "ask", "roles": {"ops": {"default": "allow"}}}
    assert decide(session, strict, "read_file", path="x").effect is Effect.ASK
    assert decide(session, strict, "write_file", path="x", content="").effect is Effect.DENY
    assert decide(session, strict, "write_file", role="ops", path="x", content="").effect is (
        Effect.ALLOW
    )


def test_role_rules_add_to_the_configuration(make_session: Callable[..., Session]) -> None:
    """A role's rules count for sessions of that role only; a role-less session gets
    the configuration's."""
    session = make_session()
    config = {"deny": ["mcp__github__*"], "roles": {"admin": {"allow": ["bash(git push)"]}}}
    assert decide(session, config, "bash", command="git push").effect is Effect.ASK
    assert decide(session, config, "bash", role="admin", command="git push").effect is Effect.ALLOW
    assert decide(session, config, "mcp__github__create_issue", title="x").effect is Effect.DENY


async def test_a_glob_of_names_and_the_hook_on_a_session(
    make_session: Callable[..., Session],
) -> None:
    """``mcp__github__*`` refuses the tool through the session's pipeline with
    ``permission_denied`` naming the rule; the role may be a function asked per call."""
    session = make_session()
    role = {"now": None}
    attach_policy(
        session,
        {"deny": ["mcp__github__*"], "roles": {"admin": {"allow": ["mcp__github__*"]}}},
        role=lambda: role["now"],
    )
    refused = await session.call("mcp__github__create_issue", {"title": "t"}, "c1")
    assert refused.error is not None
    assert refused.error.kind is ErrorKind.PERMISSION_DENIED
    assert refused.error.data == {"rule": "mcp__github__*"}
    assert "mcp__github__*" in refused.text
    role["now"] = "admin"
    # deny still beats the role's allow
    again = await session.call("mcp__github__create_issue", {"title": "t"}, "c2")
    assert again.error is not None
    assert again.error.kind is ErrorKind.PERMISSION_DENIED


def test_rules_parse_as_written() -> None:
    """A name, a glob, and a tool with a pattern; an empty pattern is a mistake."""
    rule = parse_rule("bash(npm run test *)", "allow")
    assert (rule.tool, rule.pattern, rule.effect) == ("bash", "npm run test *", Effect.ALLOW)
    assert parse_rule("mcp__github__*", "deny").pattern is None
    assert parse_rule("read_file(src/**)", "ask").names("read_file")
    with pytest.raises(ValueError, match="empty pattern"):
        parse_rule("bash()", "allow")
    with pytest.raises(ValueError, match="not a rule"):
        parse_rule("bash(git status", "allow")


def test_configuration_loads_from_toml_and_json(tmp_path: Path) -> None:
    """TOML (top level or a ``[policy]`` table) and JSON files give the same rules."""
    (tmp_path / "p.toml").write_text(
        'allow = ["bash(git status)"]\ndeny = ["bash(rm *)"]\n[roles.admin]\nallow = ["bash"]\n'
    )
    (tmp_path / "t.toml").write_text(
        '[policy]\nallow = ["bash(git status)"]\ndeny = ["bash(rm *)"]\n'
    )
    (tmp_path / "p.json").write_text(
        json.dumps({"allow": ["bash(git status)"], "deny": ["bash(rm *)"]})
    )
    configs = [PolicyConfig.load(tmp_path / n) for n in ("p.toml", "t.toml", "p.json")]
    assert {tuple(c.allow) for c in configs} == {("bash(git status)",)}
    assert configs[0].roles["admin"].allow == ["bash"]
    assert [r.text for r in configs[0].rules("admin")] == ["bash(rm *)", "bash(git status)", "bash"]


def test_every_problem_of_a_configuration_is_listed(tmp_path: Path) -> None:
    """Bad rules, unknown keys and a limit above 50 are all reported in one error."""
    with pytest.raises(ConfigError) as caught:
        PolicyConfig.load(
            {"allow": ["bash(", "ok"], "deny": ["x()"], "colour": "red", "max_commands": 99}
        )
    text = str(caught.value)
    assert "bash(" in text
    assert "x()" in text
    assert "colour" in text
    assert "max_commands" in text
    with pytest.raises(ConfigError, match=r"unterminated|quotation|closing"):
        Policy({"allow": ['bash(echo "open)']})
    (tmp_path / "broken.toml").write_text("allow = [")
    with pytest.raises(ConfigError, match="cannot read"):
        PolicyConfig.load(tmp_path / "broken.toml")
