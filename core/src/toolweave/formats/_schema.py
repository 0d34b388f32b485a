"""JSON Schema helpers shared by the provider formats: references, titles and errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolweave.errors import UnsupportedSchemaError
from toolweave.formats._frozen import FrozenDict, FrozenList, Prefrozen, Titled, freeze

__all__ = ["UnsupportedSchemaError", "is_nullable", "resolve_ref", "split_nullable", "untitled"]

_SUBSCHEMAS = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "contains",
        "else",
        "if",
        "items",
        "not",
        "oneOf",
        "prefixItems",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
"""Keywords whose value is a schema or a list of schemas."""
_SUBSCHEMA_MAPS = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)
"""Keywords whose value maps names (kept as they are) to schemas."""

_untitled: dict[tuple[int, bool], tuple[Any, Any]] = {}
"""(id, is a name → schema map) of a frozen part, held so that its id stays its own →
its untitled copy. Parts are shared between tools and sets, so each is stripped once."""
_UNTITLED_MAX = 20_000


def untitled(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema``, read-only, without its ``title`` keywords.

    Pydantic titles every model and field (``"title": "Limit"`` for ``limit``): words
    for people reading the schema, which no provider needs and the model pays for on
    every turn. Only the keyword goes: a property, definition or value named
    ``title`` stays. Parts without a title are returned as they are, and a part shared
    by several tools (their ``properties``, a model's definition) is stripped once and
    its copy shared the same way.
    """
    if type(schema) is Titled:  # most tools: their shared top level, stripped already
        # _strip's own look-up, inlined: a first listing does this once per tool.
        hit = _untitled.get((id(schema.base), False))
        if hit is not None and hit[0] is schema.base:
            return hit[1]  # type: ignore[no-any-return]
    return _strip(freeze(schema), False)  # type: ignore[no-any-return]


def _strip(node: Any, is_map: bool) -> Any:
    """The untitled copy of ``node``: a schema, a list of schemas, or (``is_map``) a
    mapping of names to schemas."""
    kind = type(node)
    if kind is FrozenList:
        items = [_strip(v, False) for v in node]
        return node if all(a is b for a, b in zip(items, node, strict=True)) else FrozenList(items)
    if kind is Titled:  # a tool's copy of a top level shared by many tools: strip that
        node = node.base
    elif kind is not Prefrozen and kind is not FrozenDict:
        return node  # true / false schemas, values
    key = (id(node), is_map)
    hit = _untitled.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    out: dict[str, Any] = {}
    changed = False
    for name, value in node.items():
        if is_map:
            new = _strip(value, False)
        elif name == "title" and (value is None or isinstance(value, str)):
            changed = True  # None: a shared top level's placeholder for its tools' titles
            continue
        elif name in _SUBSCHEMAS:
            new = _strip(value, False)
        elif name in _SUBSCHEMA_MAPS:
            new = _strip(value, True)
        else:
            new = value
        changed = changed or new is not value
        out[name] = new
    result = Prefrozen(out) if changed else node
    if len(_untitled) >= _UNTITLED_MAX:
        _untitled.clear()
    _untitled[key] = (node, result)
    return result


def resolve_ref(root: Mapping[str, Any], ref: str) -> dict[str, Any]:
    """The schema a local ``$ref`` (``#/$defs/Name``) points to inside ``root``.

    Raises:
        KeyError: The reference is not local or points nowhere.
    """
    if not ref.startswith("#/"):
        raise KeyError(f"only local references are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"reference {ref!r} points nowhere")
        node = node[part]
    if not isinstance(node, Mapping):
        raise KeyError(f"reference {ref!r} does not point to a schema")
    return dict(node)


def is_nullable(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` accepts ``null`` at its top level (type, union or enum)."""
    typ = schema.get("type")
    if typ == "null" or (isinstance(typ, list) and "null" in typ):
        return True
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if isinstance(variants, list) and any(
            isinstance(v, Mapping) and is_nullable(v) for v in variants
        ):
            return True
    enum = schema.get("enum")
    return isinstance(enum, list) and None in enum


def split_nullable(variants: list[Any]) -> tuple[list[Any], bool]:
    """Separate ``{"type": "null"}`` members from a union's other members."""
    rest = [v for v in variants if not (isinstance(v, Mapping) and v.get("type") == "null")]
    return rest, len(rest) != len(variants)
