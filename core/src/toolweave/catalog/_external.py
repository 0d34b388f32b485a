"""External tools: JSON-only tools added to a session at run time (MCP and others)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

from toolweave.authoring._tool import Capabilities, Kind
from toolweave.catalog._erasure import ErasedTool, _finish_any
from toolweave.errors import ErrorKind, ToolError, UsageError

__all__ = ["external_tool", "schema_validator", "unresolvable_refs"]


def schema_validator(schema: dict[str, Any]) -> Callable[[Any], dict[str, Any]]:
    """A function that checks arguments against a JSON Schema and returns them.

    Raises (from the returned function):
        ToolError: ``invalid_params`` naming every bad field.
    """
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    checker = cls(schema)
    fast = _fast_check(schema) if cls in _drafts_6_on(jsonschema) else None

    def validate(data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ToolError(ErrorKind.INVALID_PARAMS, "arguments must be a JSON object")
        if fast is not None and fast(data):
            return data
        errors = sorted(checker.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            parts = []
            for err in errors:
                where = ".".join(str(p) for p in err.absolute_path) or "(arguments)"
                parts.append(f"`{where}`: {err.message}")
            raise ToolError(
                ErrorKind.INVALID_PARAMS, "Invalid arguments: " + "; ".join(parts) + "."
            )
        return data

    return validate


def _drafts_6_on(jsonschema: Any) -> tuple[type[Any], ...]:
    return (
        jsonschema.Draft6Validator,
        jsonschema.Draft7Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft202012Validator,
    )


# Keywords that mean the same from draft 6 to 2020-12 (and to fastjsonschema's draft 7).
_SAME = frozenset(
    {
        "$comment",
        "const",
        "default",
        "deprecated",
        "description",
        "enum",
        "examples",
        "format",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "multipleOf",
        "pattern",
        "readOnly",
        "required",
        "title",
        "type",
        "uniqueItems",
        "writeOnly",
    }
)
_ONE_SCHEMA = frozenset({"additionalProperties", "items", "not", "propertyNames", "contains"})
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf"})
_SCHEMA_MAP = frozenset({"properties", "patternProperties"})
_BOUNDS = frozenset({"exclusiveMaximum", "exclusiveMinimum"})


def _plain(schema: Any) -> bool:
    """Whether ``schema`` uses only keywords whose meaning is the same in every draft
    from 6 on (no ``$ref``, no tuple ``items``, no conditionals)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key in _SAME or key == "$schema":
            continue
        if key in _ONE_SCHEMA:
            ok = _plain(value)
        elif key in _SCHEMA_LIST:
            ok = isinstance(value, list) and all(_plain(v) for v in value)
        elif key in _SCHEMA_MAP:
            ok = isinstance(value, dict) and all(_plain(v) for v in value.values())
        elif key in _BOUNDS:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            ok = False
        if not ok:
            return False
    return True


def _fast_check(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A compiled check that accepts only what the schema accepts (``fastjsonschema``,
    when installed, for schemas :func:`_plain` accepts); it may refuse more, so a refusal
    is confirmed, and explained, by ``jsonschema``."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    if not _plain(schema):
        return None
    body = {k: v for k, v in schema.items() if k != "$schema"}
    try:
        compiled = fastjsonschema.compile(body, use_default=False)
    except Exception:
        return None

    def check(data: Any) -> bool:
        try:
            compiled(data)
        except Exception:
            return False
        return True

    return check


def external_tool(
    *,
    id: str,
    namespace: str,
    description: str,
    input_schema: dict[str, Any],
    call: Callable[[Any, dict[str, Any]], Awaitable[Any]] | None = None,
    stream: Callable[[Any, dict[str, Any]], AsyncIterator[Any]] | None = None,
    source: str = "external",
    read_only: bool = False,
    timeout: float | None = None,
    scope: str = "external",
) -> ErasedTool:
    """Build the erased handle of a JSON-only tool.

    Args:
        id: The tool's id within ``namespace``.
        namespace: Usually one per source (``mcp_<server>``).
        description: What the model reads (not a template): a string (``""`` for none).
        input_schema: The JSON Schema the model sees; arguments are validated against it
            before ``call`` runs.
        call: ``async (ctx, arguments) -> output`` (str, JSON-able data or a
            ``(output, text)`` pair); give this, ``stream`` or both.
        stream: ``(ctx, arguments) -> async iterator`` of progress items, then the output.
            With ``call`` as well, ``stream`` serves streaming calls and blocking calls
            with a progress callback, and ``call`` the other blocking calls.
        source: Where the tool comes from (``mcp:<server>``).
        read_only: Whether the tool changes nothing.
        timeout: The call deadline in seconds (``None``: the session's external default).
        scope: What the tool reaches (:attr:`Capabilities.scope
            <toolweave.Capabilities.scope>`), when known: ``"network"`` for a tool that
            reaches out of the host (an MCP tool's ``openWorldHint``).

    Raises:
        UsageError: ``description`` is not a string.
    """
    if call is None and stream is None:
        raise TypeError("external_tool needs call=, stream= or both")
    if not isinstance(description, str):
        raise UsageError(
            f"the description of external tool {namespace}:{id} is text, not "
            f"{type(description).__name__} (give '' for none)"
        )

    def finish(value: Any) -> tuple[Any, str]:
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
            return value
        return _finish_any(value)

    return ErasedTool(
        id=id,
        namespace=namespace,
        kind=Kind.OTHER,
        description=description,
        capabilities=Capabilities(read_only=read_only, scope=scope, timeout=timeout),
        invoke=call,
        open_stream=stream,
        is_coroutine=True,
        finish=finish,
        schema=input_schema,
        validate_python=schema_validator(input_schema),
        origin=source,
        source=source,
    )


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas (a ``$ref`` key there is not a reference)."""


def _refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            yield ref
        for key, value in schema.items():
            if key not in _DATA_KEYWORDS:
                yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def unresolvable_refs(schema: Mapping[str, Any]) -> list[str]:
    """The ``$ref`` values of ``schema`` that cannot be resolved within it (a pointer to
    nothing, or a document elsewhere: nothing is fetched when arguments are checked)."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    refs = list(dict.fromkeys(_refs(schema)))
    if not refs:
        return []
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = Registry().resolver_with_root(resource)
    dangling = []
    for ref in refs:
        try:
            resolver.lookup(ref)
        except Unresolvable:
            dangling.append(ref)
    return dangling
