"""Permission rules as users write them, and the configuration that holds them.

A rule is a tool name (``read_file``), a glob of names (``mcp__github__*``), or a
tool with an argument pattern (``bash(git status)``, ``bash(npm run test *)``,
``read_file(src/**)``, ``write_file(*.md)``). The configuration is a separate
:class:`PolicyConfig`, not part of the tool set's configuration: a tool set is
immutable and shared by sessions, while rules belong to a deployment, a role and a
session, and change while it runs ("always allow this").
"""

from __future__ import annotations

import enum
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolweave.errors import ConfigError, ConfigIssue

__all__ = ["Effect", "PolicyConfig", "RoleRules", "Rule", "parse_rule"]


class Effect(enum.StrEnum):
    """What a rule (or the default) decides for a call."""

    ALLOW = "allow"
    """The call runs."""
    ASK = "ask"
    """A person is asked first (see :class:`~toolweave.policy.ApprovalRequest`)."""
    DENY = "deny"
    """The call is refused (``permission_denied``)."""


_RULE = re.compile(r"^\s*([^\s()]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)

EffectName = Literal["allow", "ask", "deny"]


@final
@dataclass(frozen=True, slots=True)
class Rule:
    """One parsed rule.

    Attributes:
        effect: What it decides.
        tool: The glob of tool names it is about (client names or tool ids).
        pattern: The argument pattern (``None``: any arguments).
        text: The rule as written.
        origin: Where it came from (``config``, ``role:<name>``, ``session``).
    """

    effect: Effect
    tool: str
    pattern: str | None
    text: str
    origin: str = "config"

    def names(self, *names: str) -> bool:
        """Whether the rule is about a tool known by any of ``names``."""
        return any(fnmatchcase(n, self.tool) for n in names)

    def __str__(self) -> str:
        return self.text


def parse_rule(text: str, effect: Effect | str, origin: str = "config") -> Rule:
    """Parse ``text`` (``bash(git status)``) into a :class:`Rule`.

    Raises:
        ValueError: It is not a tool name, optionally followed by a pattern in
            parentheses, or the pattern is empty.
    """
    if not isinstance(text, str):
        raise ValueError(f"a rule is text, not {type(text).__name__}")
    found = _RULE.match(text)
    if found is None:
        raise ValueError(
            f"{text!r} is not a rule: write a tool name, a glob of names "
            "(mcp__github__*), or a tool with a pattern (bash(git status))"
        )
    tool, pattern = found.group(1), found.group(2)
    if pattern is not None and not pattern.strip():
        raise ValueError(f"{text!r} has an empty pattern: write the tool name alone instead")
    return Rule(Effect(effect), tool, pattern.strip() if pattern else None, text.strip(), origin)


def _check_rules(value: list[str]) -> list[str]:
    problems = []
    for text in value:
        try:
            parse_rule(text, Effect.ALLOW)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))
    return value


class RoleRules(BaseModel):
    """The rules of one role, added to the configuration's own."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    """Rules that let calls run."""
    ask: list[str] = Field(default_factory=list)
    """Rules that ask a person first."""
    deny: list[str] = Field(default_factory=list)
    """Rules that refuse calls."""
    default: EffectName | None = None
    """For this role, what calls no rule matches get (default: the configuration's)."""
    read_only: EffectName | None = None
    """For this role, what read-only tools no rule matches get."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def valid_rules(cls, value: list[str]) -> list[str]:
        """Every rule parses (all problems reported at once)."""
        return _check_rules(value)


class PolicyConfig(BaseModel):
    """Permission rules of a deployment, loaded from TOML or JSON.

    Precedence: a ``deny`` rule that matches beats an ``ask`` rule, which beats an
    ``allow`` rule; a call no rule matches gets ``read_only`` (read-only tools) or
    ``default`` (every other tool). A role's rules are added to these.

    Example:
        ```toml
        allow = ["read_file(src/**)", "bash(git status)", "bash(npm run test *)"]
        ask = ["write_file(*.md)"]
        deny = ["bash(rm *)", "mcp__github__*"]
        default = "ask"

        [roles.admin]
        allow = ["mcp__github__*"]
        ```
    """

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    """Rules that let calls run."""
    ask: list[str] = Field(default_factory=list)
    """Rules that ask a person first."""
    deny: list[str] = Field(default_factory=list)
    """Rules that refuse calls."""
    default: EffectName = "ask"
    """What a call of a tool that changes things gets when no rule matches (fail
    closed: ``ask``)."""
    read_only: EffectName = "allow"
    """What a call of a read-only tool gets when no rule matches."""
    roles: dict[str, RoleRules] = Field(default_factory=dict)
    """Rules per role (the host's word for the session, never the model's)."""
    shell_tools: list[str] = Field(default_factory=lambda: ["bash"])
    """Tools (names or globs, client names or ids) whose pattern is a shell command."""
    shell_argument: str = "command"
    """The argument of a shell tool that holds the command."""
    path_arguments: list[str] = Field(
        default_factory=lambda: ["path", "file_path", "source", "destination", "target"]
    )
    """Arguments that name files, matched by the patterns of other tools."""
    cwd_arguments: list[str] = Field(
        default_factory=lambda: ["cwd", "workdir", "working_directory"]
    )
    """Arguments that set the directory a tool works in. One that leads outside the
    workspace (or cannot be resolved) makes path and command patterns match nothing."""
    max_commands: int = Field(default=50, ge=1, le=50)
    """A shell command line with more simple commands than this is never allowed by a
    pattern (50 at most)."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def valid_rules(cls, value: list[str]) -> list[str]:
        """Every rule parses (all problems reported at once)."""
        return _check_rules(value)

    @classmethod
    def load(cls, source: str | Path | Mapping[str, Any]) -> PolicyConfig:
        """Read a configuration from a ``.toml`` or ``.json`` file (its top level, or
        its ``policy`` table), or from a mapping.

        Raises:
            ConfigError: The file cannot be read, or the configuration is invalid
                (every problem listed).
        """
        if isinstance(source, Mapping):
            data: Any = dict(source)
            where = "policy"
        else:
            path = Path(source)
            where = str(path)
            try:
                text = path.read_text(encoding="utf-8")
                data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
            except (OSError, ValueError) as exc:
                raise ConfigError([ConfigIssue("", f"cannot read {where}: {exc}")]) from exc
        if isinstance(data, dict) and set(data) == {"policy"}:
            data = data["policy"]
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            issues = [
                ConfigIssue(
                    "",
                    str(err["msg"]),
                    ".".join(str(p) for p in err["loc"]),
                    tag="invalid_policy",
                )
                for err in exc.errors()
            ]
            raise ConfigError(issues) from exc

    def rules(self, role: str | None = None) -> list[Rule]:
        """The rules in force for ``role``: the configuration's, then the role's."""
        out = [
            parse_rule(text, effect)
            for effect, texts in ((Effect.DENY, self.deny), (Effect.ASK, self.ask))
            for text in texts
        ]
        out += [parse_rule(text, Effect.ALLOW) for text in self.allow]
        extra = self.roles.get(role) if role is not None else None
        if extra is not None:
            origin = f"role:{role}"
            for effect, texts in (
                (Effect.DENY, extra.deny),
                (Effect.ASK, extra.ask),
                (Effect.ALLOW, extra.allow),
            ):
                out += [parse_rule(text, effect, origin) for text in texts]
        return out

    def defaults(self, role: str | None = None) -> tuple[Effect, Effect]:
        """What calls no rule matches get for ``role``: (read-only tools, others)."""
        extra = self.roles.get(role) if role is not None else None
        read_only = (extra.read_only if extra is not None else None) or self.read_only
        default = (extra.default if extra is not None else None) or self.default
        return Effect(read_only), Effect(default)
