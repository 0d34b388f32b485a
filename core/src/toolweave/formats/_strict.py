"""OpenAI strict mode: rewrite a JSON Schema into the subset strict function calling accepts.

Strict mode wants every object closed (``additionalProperties: false``) with every
property listed in ``required``; optional properties are emulated by letting them be
``null``. Only a subset of keywords is accepted. References are inlined, except
recursive ones, which stay as ``$ref`` into ``$defs``.

A schema that cannot be expressed (an open mapping, a value of any type, a tuple)
raises :class:`~toolweave.formats.UnsupportedSchemaError` naming the tool and the place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolweave.formats._schema import UnsupportedSchemaError, is_nullable, resolve_ref

__all__ = ["STRICT_KEYWORDS", "to_strict_schema"]

STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "description",
        "$ref",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
"""Keywords strict mode accepts and the model needs; every other keyword is removed
(``title`` too: strict mode accepts it, but it only repeats the property's name)."""

STRICT_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""Values of ``format`` strict mode accepts; other formats are removed."""

_DEFS_PREFIX = "#/$defs/"


class _Strict:
    """One conversion: remembers the references being expanded and the kept ``$defs``."""

    def __init__(self, root: Mapping[str, Any], tool: str, format: str) -> None:
        self.root = root
        self.tool = tool
        self.format = format
        self.expanding: list[str] = []
        self.needed: list[str] = []
        self.keep: frozenset[str] = frozenset()
        self.defs: dict[str, dict[str, Any]] = {}

    def fail(self, path: str, reason: str) -> UnsupportedSchemaError:
        return UnsupportedSchemaError(self.tool, self.format, path, reason)

    def convert(self) -> dict[str, Any]:
        out = self.node(self.root, "")
        if self.needed:  # recursive definitions: once more, referring to them everywhere
            self.keep = frozenset(self.needed)
            out = self.node(self.root, "")
        if out.get("type") != "object":
            raise self.fail("", "the arguments must be a JSON object")
        done: set[str] = set()
        while len(done) < len(self.needed):
            ref = next(r for r in self.needed if r not in done)
            done.add(ref)
            self.expanding.append(ref)
            try:
                self.defs[ref[len(_DEFS_PREFIX) :]] = self.node(self._target(ref, ""), ref[2:])
            finally:
                self.expanding.pop()
        if self.defs:
            out["$defs"] = self.defs
        return out

    def _target(self, ref: str, path: str) -> dict[str, Any]:
        try:
            return resolve_ref(self.root, ref)
        except KeyError as exc:
            raise self.fail(path, str(exc.args[0])) from None

    def node(self, schema: Any, path: str) -> dict[str, Any]:
        if schema is True or (isinstance(schema, Mapping) and not schema):
            raise self.fail(path, "a value of any type is not allowed; give it a type")
        if not isinstance(schema, Mapping):
            raise self.fail(path, f"expected a schema object, got {schema!r}")
        s = dict(schema)
        ref = s.pop("$ref", None)
        if isinstance(ref, str):
            if ref in self.expanding or ref in self.keep:  # recursive: keep the reference
                if not ref.startswith(_DEFS_PREFIX):
                    raise self.fail(path, f"recursive reference {ref!r} must point into $defs")
                if ref not in self.needed:
                    self.needed.append(ref)
                if isinstance(s.get("description"), str):  # a $ref takes no siblings
                    return {"description": s["description"], "anyOf": [{"$ref": ref}]}
                return {"$ref": ref}
            merged = {**self._target(ref, path), **s}
            self.expanding.append(ref)
            try:
                return self.node(merged, path)
            finally:
                self.expanding.pop()
        all_of = s.pop("allOf", None)
        if isinstance(all_of, list):
            if len(all_of) != 1:
                raise self.fail(path, "allOf with several schemas is not allowed; use one model")
            return self.node({**dict(all_of[0]), **s}, path)
        one_of = s.pop("oneOf", None)
        if isinstance(one_of, list):
            s["anyOf"] = one_of
        if "prefixItems" in s:
            raise self.fail(path, "tuples (prefixItems) are not allowed; use a list or a model")
        out: dict[str, Any] = {k: v for k, v in s.items() if k in STRICT_KEYWORDS}
        typ = s.get("type")
        types = typ if isinstance(typ, list) else [typ]
        if isinstance(s.get("anyOf"), list):
            if not s["anyOf"]:
                raise self.fail(path, "an empty anyOf matches nothing")
            out["anyOf"] = [
                self.node(v, f"{path}.anyOf[{i}]" if path else f"anyOf[{i}]")
                for i, v in enumerate(s["anyOf"])
            ]
        elif typ is None and "enum" not in s and "const" not in s:
            raise self.fail(path, "a value of any type is not allowed; give it a type")
        if "object" in types or (typ is None and "properties" in s):
            self._object(s, out, path)
        if "array" in types:
            items = s.get("items")
            if items is None or items is True or items == {}:
                raise self.fail(path, "a list of values of any type is not allowed; type its items")
            out["items"] = self.node(items, f"{path}.items" if path else "items")
        fmt = out.get("format")
        if fmt is not None and fmt not in STRICT_STRING_FORMATS:
            del out["format"]
        return out

    def _object(self, s: dict[str, Any], out: dict[str, Any], path: str) -> None:
        extra = s.get("additionalProperties")
        if extra not in (None, False):
            raise self.fail(
                path,
                "an open mapping (additionalProperties) is not allowed; "
                "declare the keys as fields of a model",
            )
        props = s.get("properties")
        if not isinstance(props, Mapping):
            if path:
                raise self.fail(path, "an object without declared properties is not allowed")
            props = {}
        required = set(s.get("required") or ())
        converted: dict[str, Any] = {}
        for key, sub in props.items():
            where = f"{path}.properties.{key}" if path else f"properties.{key}"
            new = self.node(sub, where)
            if key not in required and not is_nullable(new):
                new = _nullable(new, sub.get("default") if isinstance(sub, Mapping) else None)
            converted[key] = new
        out["type"] = "object"
        out["properties"] = converted
        out["required"] = list(converted)
        out["additionalProperties"] = False


def _nullable(schema: dict[str, Any], default: Any) -> dict[str, Any]:
    """``schema`` that also accepts ``null`` (standing for "not given")."""
    out = dict(schema)
    description = out.pop("description", None)
    if "$ref" in out or "const" in out or ("anyOf" not in out and "type" not in out):
        out = {"anyOf": [out, {"type": "null"}]}
    elif "anyOf" in out:
        out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    else:
        typ = out["type"]
        out["type"] = [*typ, "null"] if isinstance(typ, list) else [typ, "null"]
        if isinstance(out.get("enum"), list):
            out["enum"] = [*out["enum"], None]
    if default is not None:
        hint = f"default: {json.dumps(default, ensure_ascii=False, default=str)}; null keeps it"
    else:
        hint = "optional; null leaves it out"
    out["description"] = (
        f"{description} ({hint})" if description else f"{hint[0].upper()}{hint[1:]}."
    )
    return out


def to_strict_schema(
    schema: Mapping[str, Any], *, tool: str = "?", format: str = "openai-strict"
) -> dict[str, Any]:
    """A copy of ``schema`` rewritten for OpenAI strict function calling.

    Every object is closed and lists every property as required; properties that were
    optional accept ``null`` instead (their description says that ``null``
    keeps the default). References are inlined, except recursive ones. Keywords strict mode does
    not accept are removed.

    Example:
        >>> to_strict_schema(
        ...     {"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}
        ... )["properties"]["n"]
        {'type': ['integer', 'null'], 'description': 'Default: 3; null keeps it.'}

    Args:
        schema: A JSON Schema of a tool's arguments (an object).
        tool: The tool's name, for error messages.
        format: The format's name, for error messages.

    Raises:
        UnsupportedSchemaError: The schema cannot be made strict; the error names the
            tool, the place in the schema and what to change.
    """
    return _Strict(schema, tool, format).convert()
