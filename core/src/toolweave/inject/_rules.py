"""Rule-based intent: keywords and regular expressions per group, from configuration."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, final

from toolweave.errors import ConfigError, ConfigIssue
from toolweave.inject._classify import Candidate, ToolDoc

__all__ = ["RuleClassifier", "compile_rules"]

_PLAIN = re.compile(r"^[\w\s'-]+$")


def _pattern(text: str) -> re.Pattern[str]:
    """A keyword (letters, digits, spaces, ``-``, ``'``) matches at a word start,
    case-insensitively (``file`` matches ``files``, not ``profile``); anything else is a
    regular expression (case-insensitive)."""
    if _PLAIN.match(text):
        words = r"\s+".join(re.escape(w) for w in text.split())
        return re.compile(rf"\b{words}", re.IGNORECASE)
    return re.compile(text, re.IGNORECASE)


def _nested_repeat(text: str) -> bool:
    r"""Whether the regular expression ``text`` repeats a part that holds an unbounded
    repeat (``(\w+\s?)+``, ``(a*)*``, ``(?:x+y){2,}``): the shape that backtracks
    exponentially on a near miss (26 letters and a ``!`` took seconds). A part made
    atomic (``(?>...)``) or possessive (``a++``) does not count. A pattern the parser
    cannot read counts as nested (it is refused)."""
    try:
        c: Any = importlib.import_module("re._constants")  # CPython's own parser
        tree = importlib.import_module("re._parser").parse(text, re.IGNORECASE)
    except Exception:
        return True
    repeats = (c.MAX_REPEAT, c.MIN_REPEAT)

    def walk(items: Any, repeated: bool) -> bool:
        """Whether ``items`` (inside a repeat when ``repeated``) nest repeats."""
        for op, av in items:
            if op in repeats:
                _lo, hi, body = av
                found = (repeated and hi == c.MAXREPEAT) or walk(body, repeated or hi > 1)
            elif op is c.POSSESSIVE_REPEAT:  # its iterations are not tried again
                found = walk(av[2], False)
            elif op is c.ATOMIC_GROUP:
                found = walk(av, False)
            elif op is c.SUBPATTERN:
                found = walk(av[3], repeated)
            elif op is c.BRANCH:
                found = any(walk(branch, repeated) for branch in av[1])
            elif op in (c.ASSERT, c.ASSERT_NOT):  # atomic in Python
                found = walk(av[1], False)
            elif op is c.GROUPREF_EXISTS:
                found = any(walk(part, repeated) for part in av[1:] if part is not None)
            else:
                found = False
            if found:
                return True
        return False

    try:
        return walk(tree, False)
    except Exception:
        return True


def compile_rules(rules: Mapping[str, Sequence[str] | str]) -> dict[str, list[re.Pattern[str]]]:
    """Compile ``{group: patterns}``; every invalid pattern is reported at once."""
    out: dict[str, list[re.Pattern[str]]] = {}
    issues: list[ConfigIssue] = []
    for group, patterns in rules.items():
        items = [patterns] if isinstance(patterns, str) else list(patterns)
        compiled: list[re.Pattern[str]] = []
        for i, text in enumerate(items):
            text = str(text)
            try:
                pattern = _pattern(text)
            except re.error as exc:
                issues.append(
                    ConfigIssue(
                        "",
                        f"intent rule of group {group!r}: invalid pattern {text!r}: {exc}",
                        path=f"intent.rules.{group}[{i}]",
                        tag="invalid_rule",
                    )
                )
                continue
            if not _PLAIN.match(text) and _nested_repeat(text):
                issues.append(
                    ConfigIssue(
                        "",
                        f"intent rule of group {group!r}: pattern {text!r} repeats a part "
                        "that holds an unbounded repeat (like '(\\w+\\s?)+'), which can "
                        "take exponential time on a short message; use a keyword "
                        "('invoice') or make the inner repeat possessive ('(\\w++\\s?)+')",
                        path=f"intent.rules.{group}[{i}]",
                        tag="unsafe_rule",
                    )
                )
                continue
            compiled.append(pattern)
        out[group] = compiled
    if issues:
        raise ConfigError(issues)
    return out


@final
class RuleClassifier:
    """Intent from rules: a group whose patterns match the request proposes its tools.

    Confidence: ``confidence`` for one matching pattern, each further match halving the
    distance to 1; a match only in the previous turn counts ``history_factor`` as much.
    Candidates come in the order of their confidence, then of the catalogue.

    Args:
        rules: ``{group: [keyword or regular expression, ...]}``.
        confidence: The confidence of a group matched by one pattern.
        history_factor: How much a match in the previous turn counts (0: not at all).
    """

    name = "rules"

    def __init__(
        self,
        rules: Mapping[str, Sequence[str] | str],
        *,
        confidence: float = 0.9,
        history_factor: float = 0.5,
    ) -> None:
        self.rules = compile_rules(rules)
        self.confidence = confidence
        self.history_factor = history_factor
        self._members: dict[str, list[str]] = {}

    def index(self, docs: Sequence[ToolDoc]) -> None:
        """Remember which tools each configured group holds."""
        members: dict[str, list[str]] = {group: [] for group in self.rules}
        for doc in docs:
            for group in doc.groups:
                if group in members:
                    members[group].append(doc.name)
        self._members = members

    def _group_confidence(self, patterns: list[re.Pattern[str]], text: str) -> float:
        hits = sum(1 for p in patterns if p.search(text))
        if not hits:
            return 0.0
        return 1.0 - (1.0 - self.confidence) * 0.5 ** (hits - 1)

    def rank(self, query: str, history: Sequence[str] = (), k: int = 15) -> list[Candidate]:
        """The tools of every group whose patterns match, best first."""
        best: dict[str, Candidate] = {}
        order: list[str] = []
        for group, patterns in self.rules.items():
            members = self._members.get(group)
            if not members:
                continue
            conf = self._group_confidence(patterns, query)
            if not conf and history and self.history_factor > 0:
                conf = self._group_confidence(patterns, history[-1]) * self.history_factor
            if not conf:
                continue
            for name in members:
                seen = best.get(name)
                if seen is None:
                    order.append(name)
                if seen is None or seen.confidence < conf:
                    best[name] = Candidate(name, conf, f"rule {group} {conf:.2f}", (group,))
        ranked = sorted(order, key=lambda n: -best[n].confidence)
        return [best[n] for n in ranked[:k]]
