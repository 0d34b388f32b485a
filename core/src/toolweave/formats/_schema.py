"""JSON Schema helpers shared by the provider formats: references and errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolweave.errors import UnsupportedSchemaError

__all__ = ["UnsupportedSchemaError", "is_nullable", "resolve_ref", "split_nullable"]


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
