"""External tools: JSON-only tools added to a session at run time (MCP and others)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from toolweave._erasure import ErasedTool, _finish_any
from toolweave.errors import ErrorKind, ToolError
from toolweave.tool import Capabilities, Kind

__all__ = ["external_tool", "schema_validator"]


def schema_validator(schema: dict[str, Any]) -> Callable[[Any], dict[str, Any]]:
    """A function that checks arguments against a JSON Schema and returns them.

    Raises (from the returned function):
        ToolError: ``invalid_params`` naming every bad field.
    """
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    checker = cls(schema)

    def validate(data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ToolError(ErrorKind.INVALID_PARAMS, "arguments must be a JSON object")
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
) -> ErasedTool:
    """Build the erased handle of a JSON-only tool.

    Args:
        id: The tool's id within ``namespace``.
        namespace: Usually one per source (``mcp_<server>``).
        description: What the model reads (not a template).
        input_schema: The JSON Schema the model sees; arguments are validated against it
            before ``call`` runs.
        call: ``async (ctx, arguments) -> output`` (str, JSON-able data or a
            ``(output, text)`` pair); give this or ``stream``.
        stream: ``(ctx, arguments) -> async iterator`` of progress items, then the output.
        source: Where the tool comes from (``mcp:<server>``).
        read_only: Whether the tool changes nothing.
        timeout: The call deadline in seconds (``None``: the session's external default).
    """
    if (call is None) == (stream is None):
        raise TypeError("external_tool needs exactly one of call= or stream=")

    def finish(value: Any) -> tuple[Any, str]:
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
            return value
        return _finish_any(value)

    return ErasedTool(
        id=id,
        namespace=namespace,
        kind=Kind.OTHER,
        description=description,
        capabilities=Capabilities(read_only=read_only, scope="external", timeout=timeout),
        invoke=call,
        open_stream=stream,
        is_coroutine=True,
        finish=finish,
        schema=input_schema,
        validate_python=schema_validator(input_schema),
        origin=source,
        source=source,
    )
