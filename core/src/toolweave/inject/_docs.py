"""Tool documents for the classifiers, enriched at registration: parameter names and
descriptions (nested ones and enum values too) from the JSON Schema, the center's groups,
the tool's pack, and its declared examples.

``tool_docs(entries, groups=None) -> list[ToolDoc]`` builds them from a set's entries
(or from neutral definitions); :func:`tool_doc` builds one from plain parts (a tool of an
MCP server, of a benchmark).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolweave.errors import UnsupportedSchemaError
from toolweave.inject._classify import ToolDoc

if TYPE_CHECKING:
    from toolweave.catalog import ToolDefinition, ToolEntry

__all__ = ["schema_parameters", "tool_doc", "tool_docs"]

_MAX_DEPTH = 3
_MAX_ENUM = 12


def _enum_text(schema: Mapping[str, Any]) -> str:
    values = schema.get("enum")
    if not isinstance(values, list):
        const = schema.get("const")
        values = [const] if isinstance(const, str) else []
    shown = [str(v) for v in values[:_MAX_ENUM] if isinstance(v, (str, int, float))]
    return f" ({', '.join(shown)})" if shown else ""


def _walk(schema: Any, prefix: str, depth: int, out: list[str]) -> None:
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key) or ():
            _walk(option, prefix, depth + 1, out)
    items = schema.get("items")
    if isinstance(items, Mapping):
        _walk(items, prefix, depth + 1, out)
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for name, sub in properties.items():
        if not isinstance(sub, Mapping):
            continue
        label = f"{prefix}{name}"
        text = str(sub.get("description") or sub.get("title") or "").strip()
        out.append(f"{label}: {text}{_enum_text(sub)}" if text else f"{label}{_enum_text(sub)}")
        _walk(sub, f"{label}.", depth + 1, out)


def schema_parameters(schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    """``name: description (enum values)`` for every parameter of a JSON Schema, nested
    properties as ``outer.inner`` (local ``$ref``s are not followed)."""
    out: list[str] = []
    if schema:
        _walk(schema, "", 0, out)
    return tuple(out)


def _example_text(example: Any) -> str:
    """An argument object as words (``path src/app.py pattern TODO``)."""
    if isinstance(example, str):
        return example
    if isinstance(example, Mapping):
        parts: list[str] = []
        for key, value in example.items():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                parts.append(f"{key} {value}")
        return " ".join(parts)
    return ""


def tool_doc(
    name: str,
    description: str,
    input_schema: Mapping[str, Any] | None = None,
    *,
    groups: Iterable[str] = (),
    examples: Iterable[Any] = (),
    kind: str = "other",
) -> ToolDoc:
    """One tool document from plain parts.

    Args:
        name: The client-visible name.
        description: What the model reads (anything but a string counts as none).
        input_schema: The JSON Schema of the arguments (its parameters are indexed).
        groups: Intent tags: the center's groups, the pack.
        examples: Requests the tool answers (strings), or argument objects (their
            values become words).
        kind: The tool's kind.
    """
    texts = tuple(t for t in (_example_text(e).strip() for e in examples) if t)
    return ToolDoc(
        name=name,
        description=description if isinstance(description, str) else "",
        parameters=schema_parameters(input_schema),
        groups=tuple(dict.fromkeys(g for g in groups if g)),
        examples=texts,
        kind=kind,
    )


def tool_docs(
    entries: Iterable[ToolEntry | ToolDefinition],
    groups: Mapping[str, Sequence[str]] | None = None,
) -> list[ToolDoc]:
    """``tool_docs(entries, groups=None) -> list[ToolDoc]``: the documents of a set's
    entries (or of neutral definitions), built once when the catalogue changes.

    Args:
        entries: :class:`~toolweave.catalog.ToolEntry` objects (``ToolSet.entries``) or
            :class:`~toolweave.catalog.ToolDefinition` objects.
        groups: The center's groups (intent tags) by client name. A local tool's pack
            (the namespace of its ``fqid``, unless ``main``) is added as a tag.

    Returns:
        One :class:`ToolDoc` per entry whose schema can be made (a tool whose arguments
        cannot be described is listed nowhere), in order: name, description, parameter names
        and descriptions (nested and enum values included), groups, the tool's declared
        ``examples`` (argument objects) as words, kind.
    """
    groups = groups or {}
    docs: list[ToolDoc] = []
    for entry in entries:
        try:
            definition = entry if not hasattr(entry, "definition") else entry.definition
        except UnsupportedSchemaError:
            continue  # left out of every listing (and reported there), so of these too
        tags = list(groups.get(entry.name, ()))
        fqid: str = getattr(definition, "fqid", "") or ""
        namespace = fqid.split(":", 1)[0] if ":" in fqid else ""
        if namespace and namespace != "main":
            tags.append(namespace)
        tool = getattr(getattr(entry, "tool", None), "tool", None)
        examples = getattr(tool, "examples", None) or ()
        docs.append(
            tool_doc(
                entry.name,
                definition.description,
                definition.input_schema,
                groups=tags,
                examples=examples,
                kind=str(getattr(definition, "kind", "other") or "other"),
            )
        )
    return docs
