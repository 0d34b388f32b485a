"""Dependency expressions: what a tool or a reminder needs from the configured set.

An expression is parsed once (at build time) by a small grammar of its own and then
evaluated against a :class:`SetView` of the configured tools; nothing is ever passed
to ``eval``.

Predicates (each holds when **some** configured tool matches)::

    tool:exit_plan                        a tool with this id (any namespace)
    exit_plan                             the same: a bare id means tool:<id>
    tool:plan:exit_plan                   a tool with this fully qualified id
    kind:read                             a tool of this kind (a Kind value)
    namespace:fs    (or  ns:fs)           a tool from this namespace
    param:bash.enabled_background         the tool's effective param is truthy
    param:bash.enabled_background == true the param compares to a JSON literal
    param:*.max_timeout_ms >= 60000       ... for any configured tool (``*``)
    schema:edit_file.old_string           the tool's input schema has this field
    schema:*.run_in_background            ... for any configured tool

``param:`` takes a dotted path into the tool's effective params
(``param:bash.limits.cpu``); comparisons are ``== != < <= > >=`` against ``true``,
``false``, ``null``, a number or a quoted string. A missing tool or path makes the
predicate false, whatever the operator; ordering operators hold only between two
numbers or two strings. Schema fields are the canonical argument names (renames are a
client-facing matter and do not change them).

Predicates combine with ``not``, ``and``, ``or`` (in that order of precedence; also
written ``!``, ``&&``, ``||``) and parentheses::

    kind:read
    tool:exit_plan and not kind:execute
    read_file && !bash
    param:bash.enabled_background == true or schema:*.run_in_background
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

from toolweave.authoring._tool import Kind
from toolweave.errors import ExpressionError

if TYPE_CHECKING:
    from toolweave.catalog._erasure import ErasedTool
    from toolweave.catalog._toolset import ToolEntry

__all__ = [
    "Expression",
    "ExpressionError",
    "SetView",
    "ToolFacts",
    "compile_expression",
]


# -- the configured set, as expressions see it ------------------------------------------


def arg_fields(tool: ErasedTool) -> frozenset[str]:
    """The top-level argument names of a tool, as its input schema spells them.

    Read from an ``@tool`` function's signature when its schema is composed without a
    model (see :meth:`ErasedTool.argument_names`), else from the ``Args`` model's
    fields (no JSON Schema is generated), or from the schema's ``properties`` for
    JSON-only tools.
    """
    return tool.argument_names()


def _dump_params(params: Any) -> Mapping[str, Any]:
    if params is None:
        return {}
    if isinstance(params, Mapping):
        return params
    dumped: Mapping[str, Any] = params.model_dump(mode="json")
    return dumped


@final
class ToolFacts:
    """What an expression may ask about one configured tool.

    ``params`` and ``fields`` of facts made with :meth:`of` are worked out on first
    access: only ``param:`` and ``schema:`` predicates read them, and only for the
    tools they name, so a set whose expressions ask nothing of the kind never dumps
    params nor reads argument names (which, for some tools, means creating a model).

    Attributes:
        fqid: ``namespace:id``.
        kind: The effective kind (after any configured override), as its string value.
        params: The effective params as JSON-able data (empty when the tool has none).
        fields: Top-level argument names of the tool's input schema (canonical).
        name: The client-visible name (for messages only).
        unknown: Top-level params whose value is not known (``*``: all of them), in
            the stand-ins the build uses to tell follow-on problems from new ones: a
            ``param:`` predicate on one of them holds, as it might once the
            configuration is fixed.
    """

    __slots__ = ("_fields", "_params", "_tool", "fqid", "kind", "name", "unknown")

    def __init__(
        self,
        fqid: str,
        kind: str,
        params: Mapping[str, Any] | None = None,
        fields: frozenset[str] | None = None,
        name: str = "",
        *,
        unknown: frozenset[str] = frozenset(),
        _tool: ErasedTool | None = None,
    ) -> None:
        self.fqid = fqid
        self.kind = kind
        self.name = name
        self.unknown = unknown
        self._params: Any = {} if params is None else params
        self._fields: frozenset[str] | None = (
            frozenset() if fields is None and _tool is None else fields
        )
        self._tool = _tool

    @property
    def params(self) -> Mapping[str, Any]:
        """The effective params as JSON-able data (dumped on first access)."""
        params = self._params
        if isinstance(params, Mapping):
            return params
        dumped = self._params = _dump_params(params)
        return dumped

    @property
    def fields(self) -> frozenset[str]:
        """Top-level argument names of the tool's input schema (read on first access)."""
        fields = self._fields
        if fields is None:
            assert self._tool is not None
            fields = self._fields = arg_fields(self._tool)
        return fields

    @property
    def id(self) -> str:
        """The bare id."""
        return self.fqid.split(":", 1)[1]

    @property
    def namespace(self) -> str:
        """The namespace."""
        return self.fqid.split(":", 1)[0]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolFacts):
            return NotImplemented
        return (self.fqid, self.kind, self.name, self.params, self.fields) == (
            other.fqid,
            other.kind,
            other.name,
            other.params,
            other.fields,
        )

    def __hash__(self) -> int:
        return hash((self.fqid, self.kind, self.name))

    def __repr__(self) -> str:
        return (
            f"ToolFacts(fqid={self.fqid!r}, kind={self.kind!r}, params={self.params!r}, "
            f"fields={self.fields!r}, name={self.name!r})"
        )

    @classmethod
    def of(
        cls,
        tool: ErasedTool,
        *,
        kind: Kind | str | None = None,
        params: Any = None,
        name: str = "",
        unknown: frozenset[str] = frozenset(),
    ) -> ToolFacts:
        """Facts about an erased handle, with the configured kind and effective params
        (a mapping, or a params model dumped when first asked for)."""
        return cls(
            tool.fqid,
            str(Kind(kind if kind is not None else tool.kind).value),
            {} if params is None else params,
            None,
            name or tool.id,
            unknown=unknown,
            _tool=tool,
        )


@final
@dataclass(frozen=True, slots=True)
class SetView:
    """The configured tools of a set, as dependency expressions see them.

    Attributes:
        tools: One entry per configured tool, in configured order.
    """

    tools: tuple[ToolFacts, ...] = ()

    @classmethod
    def from_entries(cls, entries: Iterable[ToolEntry]) -> SetView:
        """The view of built entries (what a :class:`~toolweave.ToolSet` holds)."""
        return cls(
            tuple(ToolFacts.of(e.tool, kind=e.kind, params=e.params, name=e.name) for e in entries)
        )

    def matching(self, ref: str) -> Iterable[ToolFacts]:
        """Tools that a reference (``*``, ``id`` or ``namespace:id``) names."""
        if ref == "*":
            return self.tools
        if ":" in ref:
            return (t for t in self.tools if t.fqid == ref)
        return (t for t in self.tools if t.id == ref)


# -- the expression tree ------------------------------------------------------------------

_Test = Callable[[SetView], bool]
_MISSING: Any = object()


def _lookup(params: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = params
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    return bool(left == right)


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    comparable = (_is_number(left) and _is_number(right)) or (
        isinstance(left, str) and isinstance(right, str)
    )
    if not comparable:
        return False
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _param_test(ref: str, path: tuple[str, ...], op: str | None, literal: Any) -> _Test:
    def test(view: SetView) -> bool:
        for facts in view.matching(ref):
            unknown = facts.unknown
            if unknown and (path[0] in unknown or "*" in unknown):
                return True
            value = _lookup(facts.params, path)
            if value is _MISSING:
                continue
            if (bool(value) if op is None else _compare(op, value, literal)) is True:
                return True
        return False

    return test


@final
class Expression:
    """A parsed dependency expression; evaluate it against any number of views.

    Build one with :func:`compile_expression`.

    Attributes:
        text: The source text.
    """

    __slots__ = ("_test", "text")

    def __init__(self, text: str, test: _Test) -> None:
        self.text = text
        self._test = test

    def evaluate(self, view: SetView) -> bool:
        """Whether the expression holds for the configured set ``view``."""
        return self._test(view)

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    def __str__(self) -> str:
        return self.text


# -- tokens and grammar -------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<paren>[()])
  | (?P<op>==|!=|<=|>=|<|>)
  | (?P<sym>&&|\|\||!)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_*][\w:.*-]*)
    """,
    re.VERBOSE,
)
_NAME = r"[A-Za-z_][\w-]*"
_TOOL_REF = re.compile(rf"\*|{_NAME}(?::{_NAME})?")
_PATH = re.compile(rf"{_NAME}(?:\.{_NAME})*")
_KINDS = frozenset(k.value for k in Kind)
_KEYWORDS = frozenset({"and", "or", "not"})
_SYMBOLS = {"&&": "and", "||": "or", "!": "not"}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExpressionError(text, pos, f"unexpected character {text[pos]!r}")
        kind = m.lastgroup
        assert kind is not None
        if kind == "sym":
            tokens.append(_Token("word", _SYMBOLS[m.group()], pos))
        elif kind != "space":
            tokens.append(_Token(kind, m.group(), pos))
        pos = m.end()
    return tokens


class _Parser:
    """Recursive descent over ``or_expr := and_expr ("or" and_expr)*`` and so on."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def fail(self, reason: str, token: _Token | None = None) -> ExpressionError:
        pos = token.pos if token is not None else len(self.text)
        return ExpressionError(self.text, pos, reason)

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            raise self.fail("unexpected end of expression")
        self.i += 1
        return token

    def at_word(self, word: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "word" and token.text == word

    def parse(self) -> _Test:
        if not self.tokens:
            raise self.fail("empty expression")
        test = self.or_expr()
        token = self.peek()
        if token is not None:
            raise self.fail(f"unexpected {token.text!r}", token)
        return test

    def or_expr(self) -> _Test:
        parts = [self.and_expr()]
        while self.at_word("or"):
            self.i += 1
            parts.append(self.and_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda view: any(p(view) for p in parts)

    def and_expr(self) -> _Test:
        parts = [self.not_expr()]
        while self.at_word("and"):
            self.i += 1
            parts.append(self.not_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda view: all(p(view) for p in parts)

    def not_expr(self) -> _Test:
        if self.at_word("not"):
            self.i += 1
            inner = self.not_expr()
            return lambda view: not inner(view)
        return self.atom()

    def atom(self) -> _Test:
        token = self.take()
        if token.kind == "paren" and token.text == "(":
            inner = self.or_expr()
            close = self.peek()
            if close is None or close.text != ")":
                raise self.fail("missing ')'", close)
            self.i += 1
            return inner
        if token.kind != "word" or token.text in _KEYWORDS:
            raise self.fail(f"expected a predicate, got {token.text!r}", token)
        return self.predicate(token)

    def predicate(self, token: _Token) -> _Test:
        prefix, sep, rest = token.text.partition(":")
        if not sep:
            if token.text in _LITERALS or not re.fullmatch(_NAME, token.text):
                raise self.fail(
                    f"{token.text!r} is not a predicate (use an id, tool:, kind:, "
                    "namespace:, param: or schema:)",
                    token,
                )
            prefix, rest = "tool", token.text
        if not rest:
            raise self.fail(f"{prefix}: needs a value", token)
        if prefix in ("param", "schema"):
            ref, dot, path = rest.partition(".")
            if not dot or not _TOOL_REF.fullmatch(ref) or not _PATH.fullmatch(path):
                raise self.fail(
                    f"{prefix}: takes TOOL.FIELD (TOOL is an id, namespace:id or *), got {rest!r}",
                    token,
                )
            if prefix == "schema":
                self.no_comparison(prefix)
                if "." in path:
                    raise self.fail("schema: takes one top-level field name", token)
                return lambda view: any(path in t.fields for t in view.matching(ref))
            return self.param(ref, tuple(path.split(".")))
        self.no_comparison(prefix)
        if prefix == "tool":
            if rest == "*" or not _TOOL_REF.fullmatch(rest):
                raise self.fail(f"tool: takes an id or namespace:id, got {rest!r}", token)
            return lambda view: any(True for _ in view.matching(rest))
        if prefix == "kind":
            if rest not in _KINDS:
                raise self.fail(
                    f"unknown kind {rest!r} (one of: {', '.join(sorted(_KINDS))})", token
                )
            return lambda view: any(t.kind == rest for t in view.tools)
        if prefix in ("namespace", "ns"):
            if not re.fullmatch(_NAME, rest):
                raise self.fail(f"{prefix}: takes a namespace name, got {rest!r}", token)
            return lambda view: any(t.namespace == rest for t in view.tools)
        raise self.fail(f"unknown predicate {prefix + ':'!r}", token)

    def no_comparison(self, prefix: str) -> None:
        token = self.peek()
        if token is not None and token.kind == "op":
            raise self.fail(f"only param: predicates can be compared, not {prefix}:", token)

    def param(self, ref: str, path: tuple[str, ...]) -> _Test:
        token = self.peek()
        if token is None or token.kind != "op":
            return _param_test(ref, path, None, None)
        self.i += 1
        op = token.text
        value = self.take()
        literal: Any
        if value.kind == "number":
            literal = json.loads(value.text)
        elif value.kind == "string":
            body = value.text[1:-1]
            literal = re.sub(r"\\(.)", r"\1", body)
        elif value.kind == "word" and value.text in _LITERALS:
            literal = _LITERALS[value.text]
        else:
            raise self.fail(
                f"expected true, false, null, a number or a quoted string after {op}, "
                f"got {value.text!r}",
                value,
            )
        return _param_test(ref, path, op, literal)


def compile_expression(text: str) -> Expression:
    """Parse a dependency expression (see this module's docstring for the syntax).

    Parsed expressions are cached by text; they are immutable and safe to share.

    Example:
        >>> expr = compile_expression("kind:read and not tool:bash")
        >>> expr.evaluate(SetView((ToolFacts("fs:read_file", "read"),)))
        True

    Raises:
        ExpressionError: The text is not a well-formed expression; the message says
            where and why.
    """
    if not isinstance(text, str):
        raise ExpressionError(repr(text), 0, "an expression must be a string")
    return _compile(text)


@functools.lru_cache(maxsize=512)
def _compile(text: str) -> Expression:
    return Expression(text, _Parser(text).parse())
