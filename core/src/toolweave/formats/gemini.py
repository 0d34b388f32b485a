"""Google Gemini: function declarations in its OpenAPI subset, function calls and responses.

Gemini's ``parameters`` take an OpenAPI 3.0 schema subset: upper-case type names,
``nullable`` instead of ``null`` in a union, string-only ``enum`` values, no references.
:func:`gemini_schema` rewrites a JSON Schema accordingly: references are inlined
(recursive ones cannot be, and raise), ``oneOf`` becomes ``anyOf``, ``const`` becomes a
one-value ``enum``, keywords Gemini does not know are removed, and each object lists
its ``propertyOrdering`` so the model sees the fields in the tool's order. Field names
follow the REST API (camelCase); the ``google-genai`` types accept them as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolweave.formats._calls import ToolCall, first, get, id_of, items_of
from toolweave.formats._schema import UnsupportedSchemaError, resolve_ref, split_nullable

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolDefinition
    from toolweave.results import CallResult

__all__ = ["declaration", "gemini_schema", "parse_calls", "reply_text", "result_messages"]

_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}

_KEEP = frozenset(
    {
        "description",
        "format",
        "maxItems",
        "minItems",
        "maxLength",
        "minLength",
        "maximum",
        "minimum",
        "pattern",
        "default",
        "maxProperties",
        "minProperties",
    }
)
"""Keywords copied as they are; the rest are converted or removed (``title`` too:
Gemini's ``Schema`` takes one, but it only repeats the property's name)."""


class _Gemini:
    def __init__(self, root: Mapping[str, Any], tool: str) -> None:
        self.root = root
        self.tool = tool
        self.expanding: list[str] = []

    def fail(self, path: str, reason: str) -> UnsupportedSchemaError:
        return UnsupportedSchemaError(self.tool, "gemini", path, reason)

    def node(self, schema: Any, path: str) -> dict[str, Any]:
        if schema is True or schema == {}:
            return {}
        if not isinstance(schema, Mapping):
            raise self.fail(path, f"expected a schema object, got {schema!r}")
        s = dict(schema)
        ref = s.pop("$ref", None)
        if isinstance(ref, str):
            if ref in self.expanding:
                raise self.fail(path, f"recursive reference {ref!r} cannot be inlined")
            try:
                target = resolve_ref(self.root, ref)
            except KeyError as exc:
                raise self.fail(path, str(exc.args[0])) from None
            self.expanding.append(ref)
            try:
                return self.node({**target, **s}, path)
            finally:
                self.expanding.pop()
        all_of = s.pop("allOf", None)
        if isinstance(all_of, list):
            if len(all_of) != 1:
                raise self.fail(path, "allOf with several schemas is not supported")
            return self.node({**dict(all_of[0]), **s}, path)
        union = s.pop("anyOf", None) or s.pop("oneOf", None)
        if isinstance(union, list):
            return self._union(union, s, path)
        out: dict[str, Any] = {k: v for k, v in s.items() if k in _KEEP}
        if out.get("default", 0) is None:
            del out["default"]
        typ = s.get("type")
        if isinstance(typ, list):
            rest = [t for t in typ if t != "null"]
            if len(rest) != 1:
                variants = [{**s, "type": t} for t in rest]
                return self._union(
                    variants + ([{"type": "null"}] if "null" in typ else []), {}, path
                )
            if "null" in typ:
                out["nullable"] = True
            typ = rest[0]
        if "const" in s:
            out["enum"] = [_enum_value(s["const"])]
            typ = typ or _json_type(s["const"])
        elif isinstance(s.get("enum"), list):
            values = [v for v in s["enum"] if v is not None]
            if len(values) != len(s["enum"]):
                out["nullable"] = True
            out["enum"] = [_enum_value(v) for v in values]
            typ = typ or (_json_type(values[0]) if values else None)
        if "examples" in s and isinstance(s["examples"], list) and s["examples"]:
            out["example"] = s["examples"][0]
        if typ is None and "properties" in s:
            typ = "object"
        if typ is not None:
            if typ not in _TYPES:
                raise self.fail(path, f"unknown type {typ!r}")
            out["type"] = _TYPES[typ]
        if "enum" in out and typ not in (None, "string"):
            out["format"] = "enum"
        if typ == "object":
            self._object(s, out, path)
        elif typ == "array" and "items" in s:
            out["items"] = self.node(s["items"], f"{path}.items" if path else "items")
        return out

    def _union(self, variants: list[Any], rest: dict[str, Any], path: str) -> dict[str, Any]:
        members, nullable = split_nullable(variants)
        outer = {k: v for k, v in rest.items() if k in _KEEP and v is not None}
        converted = [
            self.node(v, f"{path}.anyOf[{i}]" if path else f"anyOf[{i}]")
            for i, v in enumerate(members)
        ]
        if len(converted) == 1:
            out = {**converted[0], **outer}
        elif converted:
            out = {**outer, "anyOf": converted}
        else:
            out = {**outer, "type": "NULL"}
        if nullable and members:
            out["nullable"] = True
        return out

    def _object(self, s: dict[str, Any], out: dict[str, Any], path: str) -> None:
        props = s.get("properties")
        if isinstance(props, Mapping) and props:
            out["properties"] = {
                k: self.node(v, f"{path}.properties.{k}" if path else f"properties.{k}")
                for k, v in props.items()
            }
            out["propertyOrdering"] = list(props)
            required = [r for r in s.get("required") or () if r in props]
            if required:
                out["required"] = required
        extra = s.get("additionalProperties")
        if isinstance(extra, Mapping):
            out["additionalProperties"] = self.node(extra, f"{path}.additionalProperties")
        elif isinstance(extra, bool) and not props:
            out["additionalProperties"] = extra


def _enum_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _json_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def gemini_schema(schema: Mapping[str, Any], *, tool: str = "?") -> dict[str, Any]:
    """A copy of ``schema`` in Gemini's OpenAPI subset.

    Example:
        >>> gemini_schema(
        ...     {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
        ... )
        {'type': 'OBJECT', 'properties': {'n': {'type': 'INTEGER', 'nullable': True}}, 'propertyOrdering': ['n']}

    Raises:
        UnsupportedSchemaError: The schema is recursive or uses a construct Gemini lacks.
    """
    return _Gemini(schema, tool).node(schema, "")


def declaration(d: ToolDefinition) -> dict[str, Any]:
    """A Gemini ``FunctionDeclaration`` (omits ``parameters`` for a tool without any)."""
    out: dict[str, Any] = {"name": d.name, "description": d.description}
    params = gemini_schema(d.input_schema, tool=d.name)
    if params.get("properties"):
        out["parameters"] = params
    return out


# -- the reverse: function calls in, function responses out -----------------------------


def _parts(message: Any) -> list[Any]:
    candidates = get(message, "candidates")
    if candidates:
        message = get(first(candidates), "content")
    parts = get(message, "parts")
    return items_of(parts if parts is not None else message)


def parse_calls(message: Any) -> list[ToolCall]:
    """The function calls in a Gemini response, ``Content`` or list of parts."""
    calls: list[ToolCall] = []
    for part in _parts(message):
        call = get(part, "function_call") or get(part, "functionCall")
        if call is None:
            continue
        args = get(call, "args")
        calls.append(
            ToolCall(
                get(call, "name") or "", args if args is not None else {}, id_of(get(call, "id"))
            )
        )
    return calls


def reply_text(message: Any) -> str:
    """The text parts of a Gemini response, ``Content`` or list of parts, joined
    (thoughts left out)."""
    return "".join(
        str(get(part, "text") or "") for part in _parts(message) if not get(part, "thought")
    )


def result_messages(results: list[CallResult]) -> list[dict[str, Any]]:
    """One ``user`` content holding a ``functionResponse`` part per result."""
    parts: list[dict[str, Any]] = []
    for r in results:
        response = {"error": r.model_text} if r.error is not None else {"output": r.text}
        part: dict[str, Any] = {"name": r.name, "response": response}
        if r.call_id is not None:
            part["id"] = r.call_id
        parts.append({"functionResponse": part})
    return [{"role": "user", "parts": parts}] if parts else []
