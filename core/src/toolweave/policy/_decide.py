"""Deciding one call: which rules are about its tool, which match its arguments, and
what wins (deny beats ask beats allow; then the defaults)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, TypeVar, final

from pydantic import BaseModel

from toolweave.errors import ConfigError, ConfigIssue
from toolweave.policy._config import Effect, PolicyConfig, Rule
from toolweave.policy._paths import Located, PathPattern, escape, glob_chars, locate
from toolweave.policy._shell import (
    Command,
    CommandPattern,
    ShellAnalysis,
    analyse,
    require_parser,
)

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry

__all__ = ["Decision", "EntryRules", "Policy", "arguments_of"]

T = TypeVar("T")


@final
@dataclass(frozen=True, slots=True)
class Decision:
    """What the rules decide for one call.

    Attributes:
        effect: Allow, ask or deny.
        rule: The rule that decided (``None``: no rule matched, the default did).
        reason: Why, in words for people and the model.
        suggestions: Rules that would allow exactly this call (what "always allow"
            adds); empty when none can be written (an opaque shell command).
    """

    effect: Effect
    rule: Rule | None
    reason: str
    suggestions: tuple[str, ...] = ()


def arguments_of(arguments: Any) -> Mapping[str, Any]:
    """Validated arguments as a mapping of canonical names (a model's fields, a
    function's keyword arguments, an external tool's JSON object)."""
    if isinstance(arguments, BaseModel):
        return dict(arguments)
    if isinstance(arguments, Mapping):
        return arguments
    return {}


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@final
class Policy:
    """Compiled permission rules of a :class:`PolicyConfig`, shared by sessions.

    Args:
        config: The configuration (a mapping is validated first; ``None``: no rules,
            the defaults alone).

    Raises:
        ConfigError: The configuration or a pattern is invalid.
        UsageError: A rule has a shell-command pattern and ``bashlex`` is not
            installed (``pip install 'toolweave[policy]'``).
    """

    __slots__ = ("_commands", "_paths", "_roles", "config")

    def __init__(self, config: PolicyConfig | Mapping[str, Any] | None = None) -> None:
        if config is None:
            config = PolicyConfig()
        elif not isinstance(config, PolicyConfig):
            config = PolicyConfig.load(config)
        self.config = config
        self._commands: dict[str, CommandPattern] = {}
        self._paths: dict[str, PathPattern] = {}
        self._roles: dict[str | None, list[Rule]] = {}
        issues: list[ConfigIssue] = []
        for role in (None, *config.roles):
            for rule in self.rules(role):
                self._compile(rule, issues)
        if issues:
            raise ConfigError(issues)

    def __repr__(self) -> str:
        c = self.config
        return f"<Policy allow={len(c.allow)} ask={len(c.ask)} deny={len(c.deny)}>"

    def rules(self, role: str | None = None) -> list[Rule]:
        """The configured rules in force for ``role`` (cached)."""
        found = self._roles.get(role)
        if found is None:
            found = self._roles[role] = self.config.rules(role)
        return found

    def _compile(self, rule: Rule, issues: list[ConfigIssue]) -> None:
        pattern = rule.pattern
        if pattern is None:
            return
        if any(fnmatchcase(s, rule.tool) or fnmatchcase(rule.tool, s) for s in self.shell_tools):
            require_parser()
            try:
                self.command_pattern(pattern)
            except ValueError as exc:
                issues.append(ConfigIssue("", f"{rule.text}: {exc}", rule.origin, tag="rule"))
        self.path_pattern(pattern)

    @property
    def shell_tools(self) -> list[str]:
        """Globs of the tools whose pattern is a shell command."""
        return self.config.shell_tools

    def command_pattern(self, text: str) -> CommandPattern:
        """The compiled shell pattern ``text`` (cached)."""
        found = self._commands.get(text)
        if found is None:
            found = self._commands[text] = CommandPattern(text)
        return found

    def path_pattern(self, text: str) -> PathPattern:
        """The compiled path pattern ``text`` (cached)."""
        found = self._paths.get(text)
        if found is None:
            found = self._paths[text] = PathPattern(text)
        return found

    def for_entry(
        self, entry: ToolEntry, role: str | None = None, extra: Iterable[Rule] = ()
    ) -> EntryRules:
        """The rules about ``entry``'s tool for ``role``, with ``extra`` ones (rules a
        session gained), ready to decide its calls."""
        names = (entry.name, entry.tool.id, entry.tool.fqid)
        rules = [r for r in (*self.rules(role), *extra) if r.names(*names)]
        shell = any(fnmatchcase(n, s) for s in self.shell_tools for n in names)
        return EntryRules(self, entry, rules, shell, self.config.defaults(role))

    def decide(
        self,
        entry: ToolEntry,
        arguments: Any,
        root: str,
        *,
        role: str | None = None,
        extra: Iterable[Rule] = (),
    ) -> Decision:
        """Decide a call of ``entry`` with validated ``arguments`` in the workspace
        ``root`` (see :meth:`EntryRules.decide`)."""
        return self.for_entry(entry, role, extra).decide(arguments, root)


@final
class EntryRules:
    """The rules about one tool, for one role: decides its calls.

    Attributes:
        rules: The rules about the tool, deny first, then ask, then allow.
        shell: Whether the tool's patterns are shell commands.
        fixed: The decision when it is the same for every call (no rule has a
            pattern, and it does not ask).
    """

    __slots__ = ("_defaults", "_policy", "entry", "fixed", "rules", "shell")

    def __init__(
        self,
        policy: Policy,
        entry: ToolEntry,
        rules: Sequence[Rule],
        shell: bool,
        defaults: tuple[Effect, Effect],
    ) -> None:
        self._policy = policy
        self.entry = entry
        order = {Effect.DENY: 0, Effect.ASK: 1, Effect.ALLOW: 2}
        self.rules = sorted(rules, key=lambda r: order[r.effect])
        self.shell = shell
        self._defaults = defaults
        self.fixed: Decision | None = None
        if all(r.pattern is None for r in self.rules):
            fixed = self._by_name()
            # A call that asks is read for the rules an "always" answer would add (the
            # command or the paths, never the whole tool); a shell command allowed
            # only by default is still read: what cannot be, or runs outside the
            # workspace, asks.
            if fixed.effect is not Effect.ASK and not (
                shell and fixed.rule is None and fixed.effect is Effect.ALLOW
            ):
                self.fixed = fixed

    def _default(self) -> Effect:
        read_only, other = self._defaults
        return read_only if self.entry.read_only else other

    def _by_name(self) -> Decision:
        for rule in self.rules:
            return Decision(rule.effect, rule, f"the rule {rule.effect.value} {rule.text}")
        effect = self._default()
        return Decision(effect, None, _default_reason(effect, self.entry.read_only))

    def decide(self, arguments: Any, root: str) -> Decision:
        """Decide one call with validated ``arguments`` in the workspace ``root``."""
        if self.fixed is not None:
            return self.fixed
        config = self._policy.config
        args = arguments_of(arguments)
        cwd: str | None = root
        for name in config.cwd_arguments:
            given = _path_text(args.get(name))
            if given:
                where = locate(given, root)
                cwd = where.real if where is not None and _within(where.real, root) else None
        if self.shell:
            return self._shell(args.get(config.shell_argument), root, cwd)
        return self._files(args, root, cwd)

    def _judge(
        self,
        parts: Sequence[T],
        hit: Callable[[Rule, T], bool | None],
        covers: Callable[[Rule, T], bool],
        blocked: str,
        suggest: Callable[[], tuple[str, ...]],
    ) -> Decision:
        """Decide from the call's ``parts`` (a shell command's simple commands, a file
        tool's paths): a deny or ask rule that ``hit`` s any part decides (a deny that
        only might match asks); else an allow rule without a pattern, or allow rules
        that together cover every part (unless ``blocked`` says why none may); else the
        default, which asks instead of allowing when ``blocked``."""
        maybe_deny: Rule | None = None
        for rule in self.rules:
            if rule.effect is Effect.ALLOW:
                break
            found = True if rule.pattern is None else _any(hit(rule, p) for p in parts)
            if found is True or (found is None and rule.effect is Effect.ASK):
                why = f"the rule {rule.effect.value} {rule.text}"
                return Decision(
                    rule.effect, rule, why, suggest() if rule.effect is Effect.ASK else ()
                )
            if found is None and maybe_deny is None:
                maybe_deny = rule
        if maybe_deny is not None:
            why = f"it might be what the rule deny {maybe_deny.text} refuses"
            return Decision(Effect.ASK, maybe_deny, why, ())
        allows = [r for r in self.rules if r.effect is Effect.ALLOW]
        for rule in allows:
            if rule.pattern is None:
                return Decision(Effect.ALLOW, rule, f"the rule allow {rule.text}")
        if not blocked and parts and allows:
            used: Rule | None = None
            for part in parts:
                cover = next((r for r in allows if covers(r, part)), None)
                if cover is None:
                    break
                used = used or cover
            else:
                assert used is not None
                return Decision(Effect.ALLOW, used, f"the rule allow {used.text}")
        effect = self._default()
        reason = _default_reason(effect, self.entry.read_only)
        if blocked:
            reason = f"no rule can allow it: {blocked}"
            if effect is Effect.ALLOW:
                effect = Effect.ASK
        return Decision(effect, None, reason, suggest())

    # -- shell tools --------------------------------------------------------------------

    def _shell(self, command: Any, root: str, cwd: str | None) -> Decision:
        policy = self._policy
        if not isinstance(command, str):
            analysis = ShellAnalysis(opaque="it has no command text")
        else:
            analysis = analyse(command, root, cwd, policy.config.max_commands)

        def hit(rule: Rule, part: Command) -> bool | None:
            return policy.command_pattern(rule.pattern or "").match(part, root, allow=False)

        def covers(rule: Rule, part: Command) -> bool:
            pattern = policy.command_pattern(rule.pattern or "")
            return pattern.match(part, root, allow=True) is True

        def suggest() -> tuple[str, ...]:
            if analysis.opaque or not analysis.commands:
                return ()
            if any(w.dynamic for c in analysis.commands for w in c.words):
                return ()
            name = self.entry.name
            return tuple(dict.fromkeys(f"{name}({c.text})" for c in analysis.commands))

        return self._judge(analysis.commands, hit, covers, analysis.opaque, suggest)

    # -- tools with path arguments -------------------------------------------------------

    def _path_names(self) -> list[str]:
        """The arguments of the tool that name files: those named in ``path_arguments``
        by their own name or by the name the model sees (a renamed parameter)."""
        named = self._policy.config.path_arguments
        renamed = self.entry.to_canonical or {}
        return list(dict.fromkeys([*named, *(renamed[n] for n in named if n in renamed)]))

    def _files(self, args: Mapping[str, Any], root: str, cwd: str | None) -> Decision:
        policy = self._policy
        paths: list[Located | None] = []
        for name in self._path_names():
            value = args.get(name)
            values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
            for item in values:
                text = _path_text(item)
                if text is not None:
                    paths.append(locate(text, cwd) if cwd is not None else None)
        blocked = ""
        if cwd is None:
            blocked = "its working directory leads outside the workspace"
        elif None in paths:
            blocked = "a path cannot be resolved"

        # A call with no path a pattern could meet: a rule written for this very tool
        # might still be about it (its path is in an argument not listed in
        # path_arguments), so it asks; a rule for a glob of tools meets only tools
        # that have paths.
        missing = not paths

        def hit(rule: Rule, part: Located | None) -> bool | None:
            if part is None:
                return False if missing and glob_chars(rule.tool) else None
            return policy.path_pattern(rule.pattern or "").hits(part, root)

        def covers(rule: Rule, part: Located | None) -> bool:
            return part is not None and policy.path_pattern(rule.pattern or "").allows(part, root)

        return self._judge(
            paths or [None], hit, covers, blocked, lambda: self._path_suggestions(paths, root)
        )

    def _path_suggestions(self, paths: list[Located | None], root: str) -> tuple[str, ...]:
        name = self.entry.name
        if not paths:
            return (name,)
        out: list[str] = []
        for where in paths:
            if where is None:
                return ()
            real = where.real
            if _within(real, root) and real != root:
                spelled = "./" + escape(os.path.relpath(real, root))
            else:
                spelled = escape(real)
            out.append(f"{name}({spelled})")
        return tuple(dict.fromkeys(out))


def _path_text(value: Any) -> str | None:
    """A path argument as text: a string, or a path object (``pathlib.Path``, any
    ``os.PathLike`` of ``str``) as it is spelled; ``None`` for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        text = os.fspath(value)
        return text if isinstance(text, str) else None
    return None


def _any(hits: Iterable[bool | None]) -> bool | None:
    """``True`` if any is ``True``, else ``None`` if any is ``None``, else ``False``."""
    unsure = False
    for hit in hits:
        if hit is True:
            return True
        if hit is None:
            unsure = True
    return None if unsure else False


def _default_reason(effect: Effect, read_only: bool) -> str:
    what = "read-only tools" if read_only else "tools that change things"
    return f"no rule matches, and {what} {_VERB[effect]} by default"


_VERB = {Effect.ALLOW: "run", Effect.ASK: "ask first", Effect.DENY: "are refused"}
