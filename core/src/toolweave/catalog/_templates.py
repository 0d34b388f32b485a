"""Description templates: tool descriptions that name other tools as the model sees them.

A description (or a configured override, or a prompt) may contain placeholders::

    {tool:edit}        the client-visible name of the configured tool of kind ``edit``
                       (the first one in configured order when there are several)
    {name:exit_plan}   the client-visible name of the configured tool with this id
                       (``exit_plan`` or ``plan:exit_plan``)

so that a renamed tool is named correctly in every other tool's description. A
placeholder is ``{word:value}`` with no spaces; other braces (``{"a": 1}``, ``{path}``)
are left alone. Write ``{{tool:edit}}`` for a literal ``{tool:edit}``.

An unknown placeholder, an unknown kind, or a kind or id with no configured tool is a
problem (a ``template`` issue when a tool set is built).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import final

from toolweave.authoring._tool import Kind
from toolweave.errors import ConfigError, ConfigIssue

__all__ = ["TemplateProblem", "TemplateRenderer"]

_PLACEHOLDER = re.compile(r"\{\{(\w+:[^{}\s]*)\}\}|\{(\w+):([^{}\s]*)\}")
_KINDS = frozenset(k.value for k in Kind)


@dataclass(frozen=True, slots=True)
class TemplateProblem:
    """One placeholder that could not be rendered.

    Attributes:
        placeholder: The placeholder as written (``{tool:edit}``).
        message: Why it could not be rendered.
    """

    placeholder: str
    message: str


@final
class TemplateRenderer:
    """Renders placeholders from the configured set: kind and id → client-visible name.

    Args:
        by_kind: Kind value → client-visible name.
        by_id: Bare id and ``namespace:id`` → client-visible name.
    """

    __slots__ = ("by_id", "by_kind")

    def __init__(self, by_kind: Mapping[str, str], by_id: Mapping[str, str]) -> None:
        self.by_kind = dict(by_kind)
        self.by_id = dict(by_id)

    @classmethod
    def from_tools(cls, tools: Iterable[tuple[str, str, str]]) -> TemplateRenderer:
        """Build from ``(fqid, kind, client name)`` triples in configured order.

        The first tool of a kind (or with an id) wins.
        """
        by_kind: dict[str, str] = {}
        by_id: dict[str, str] = {}
        for fqid, kind, name in tools:
            by_kind.setdefault(str(kind), name)
            by_id.setdefault(fqid, name)
            by_id.setdefault(fqid.split(":", 1)[1], name)
        return cls(by_kind, by_id)

    def render(self, text: str) -> tuple[str, list[TemplateProblem]]:
        """Render every placeholder of ``text``.

        Returns:
            The rendered text and the problems found; a placeholder with a problem is
            left as written.
        """
        if "{" not in text:
            return text, []
        problems: list[TemplateProblem] = []

        def replace(m: re.Match[str]) -> str:
            escaped = m.group(1)
            if escaped is not None:
                return "{" + escaped + "}"
            word, value = m.group(2), m.group(3)
            found, problem = self._lookup(word, value)
            if problem is not None:
                problems.append(TemplateProblem(m.group(0), problem))
                return m.group(0)
            assert found is not None
            return found

        return _PLACEHOLDER.sub(replace, text), problems

    def render_strict(self, text: str, *, tool_id: str = "", path: str = "") -> str:
        """Render ``text``, raising when any placeholder cannot be rendered.

        Raises:
            ConfigError: One ``template`` issue per placeholder that failed.
        """
        rendered, problems = self.render(text)
        if problems:
            raise ConfigError([problem_issue(p, tool_id, path) for p in problems])
        return rendered

    def _lookup(self, word: str, value: str) -> tuple[str | None, str | None]:
        if word == "tool":
            if value not in _KINDS:
                return None, f"unknown kind {value!r} in {{tool:{value}}}"
            name = self.by_kind.get(value)
            if name is None:
                return None, f"no configured tool of kind {value!r}"
            return name, None
        if word == "name":
            name = self.by_id.get(value)
            if name is None:
                return None, f"no configured tool with id {value!r}"
            return name, None
        return None, f"unknown placeholder {{{word}:...}} (use {{tool:<kind>}} or {{name:<id>}})"


def problem_issue(problem: TemplateProblem, tool_id: str, path: str) -> ConfigIssue:
    """The ``template`` issue describing ``problem`` in the text at ``path``."""
    return ConfigIssue(
        tool_id,
        problem.message,
        path=path,
        actual=problem.placeholder,
        tag="template",
    )
