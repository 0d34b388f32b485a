"""Description templates: tool descriptions that name other tools as the model sees them.

A description (or a configured override, or a prompt) may contain placeholders::

    {tool:edit}        the client-visible name of the configured tool of kind ``edit``
                       (the first one in configured order when there are several)
    {name:exit_plan}   the client-visible name of the configured tool with this id
                       (``exit_plan`` or ``plan:exit_plan``)

so that a renamed tool is named correctly in every other tool's description. In a
tool's own description, one more names its parameters as the model sees them::

    {param:path}       the client-visible name of this tool's parameter ``path``
                       (``file_path`` when the configuration renames it)

A placeholder is ``{word:value}`` with no spaces; other braces (``{"a": 1}``, ``{path}``)
are left alone. Write ``{{tool:edit}}`` for a literal ``{tool:edit}``.

A placeholder with no configured tool is a problem (a ``template`` issue when a tool set
is built), so a tool whose description names another one cannot be configured without
it. When the other tool is welcome but not needed, give a fallback after ``|``::

    {tool:read|the file reader}    the read tool's name, or "the file reader" without one
    {name:glob|a file-name search} the same by id
    {tool:list_dir|}               the name, or nothing

The fallback is any text without braces or line breaks (empty is allowed) and is used
as written. An unknown placeholder word or an unknown kind is a problem with or without
a fallback. Each problem of a text is reported once, however often its placeholder
appears.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import final

from toolweave.authoring._tool import Kind
from toolweave.errors import ConfigError, ConfigIssue

__all__ = ["Parameters", "TemplateProblem", "TemplateRenderer"]

_PLACEHOLDER = re.compile(
    r"\{\{(\w+:[^{}\s|]*(?:\|[^{}\n]*)?)\}\}"  # {{word:value}}: a literal {word:value}
    r"|\{(\w+):([^{}\s|]*)(?:\|([^{}\n]*))?\}"  # {word:value} or {word:value|fallback}
)
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
class Parameters:
    """A tool's parameters, for ``{param:<name>}`` in its own description.

    Args:
        names: The tool's parameter names (read on first use: only a description
            with a ``{param:...}`` placeholder asks for them).
        renames: Parameter name → client-visible name, for the renamed ones.
    """

    __slots__ = ("_names", "_read", "renames")

    def __init__(
        self, names: Callable[[], Iterable[str]], renames: Mapping[str, str] | None = None
    ) -> None:
        self._read = names
        self._names: frozenset[str] | None = None
        self.renames = renames

    def names(self) -> frozenset[str]:
        """The parameter names."""
        if self._names is None:
            self._names = frozenset(self._read())
        return self._names


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

    def render(
        self, text: str, params: Parameters | None = None
    ) -> tuple[str, list[TemplateProblem]]:
        """Render every placeholder of ``text``.

        Args:
            text: The text.
            params: For a tool's own description: its parameter names and their
                client-visible names (see :class:`Parameters`); without it a
                ``{param:...}`` placeholder is a problem.

        Returns:
            The rendered text and the problems found, one per placeholder word and value
            (``{tool:edit}`` written twice is one problem), in order of first
            appearance; a placeholder with a problem is left as written.
        """
        if "{" not in text:
            return text, []
        problems: dict[tuple[str, str], TemplateProblem] = {}

        def replace(m: re.Match[str]) -> str:
            escaped = m.group(1)
            if escaped is not None:
                return "{" + escaped + "}"
            word, value, fallback = m.group(2), m.group(3), m.group(4)
            problem = _malformed(word, value)
            if problem is None and word == "param":
                if params is not None and value in params.names():
                    return params.renames.get(value, value) if params.renames else value
                if fallback is not None:
                    return fallback
                problem = (
                    f"the tool has no parameter {value!r}"
                    if params is not None
                    else f"{{param:{value}}} names a parameter of the tool it describes; "
                    "it is only for a tool's own description"
                )
            elif problem is None:
                found = (self.by_kind if word == "tool" else self.by_id).get(value)
                if found is not None:
                    return found
                if fallback is not None:
                    return fallback
                what = "of kind" if word == "tool" else "with id"
                problem = f"no configured tool {what} {value!r}"
            problems.setdefault((word, value), TemplateProblem(m.group(0), problem))
            return m.group(0)

        return _PLACEHOLDER.sub(replace, text), list(problems.values())

    def render_strict(
        self, text: str, params: Parameters | None = None, *, tool_id: str = "", path: str = ""
    ) -> str:
        """Render ``text`` (``params``: see :meth:`render`), raising when any placeholder
        cannot be rendered.

        Raises:
            ConfigError: One ``template`` issue per placeholder that failed.
        """
        rendered, problems = self.render(text, params)
        if problems:
            raise ConfigError([problem_issue(p, tool_id, path) for p in problems])
        return rendered


def _malformed(word: str, value: str) -> str | None:
    """What is wrong with a placeholder whatever the set holds (an unknown word or
    kind), or ``None``."""
    if word == "tool":
        return None if value in _KINDS else f"unknown kind {value!r} in {{tool:{value}}}"
    if word == "name" or word == "param":
        return None
    return (
        f"unknown placeholder {{{word}:...}} "
        "(use {tool:<kind>}, {name:<id>} or {param:<name>})"
    )


def problem_issue(problem: TemplateProblem, tool_id: str, path: str) -> ConfigIssue:
    """The ``template`` issue describing ``problem`` in the text at ``path``."""
    return ConfigIssue(
        tool_id,
        problem.message,
        path=path,
        actual=problem.placeholder,
        tag="template",
    )
