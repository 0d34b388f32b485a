"""Argument validators and JSON Schemas for ``@tool`` functions, without a model class.

A function tool's arguments are validated straight into the keyword arguments of its
function. Creating a pydantic model per tool (``create_model``) costs ~0.2 ms and its
``model_json_schema`` as much again; a typed-dict validator composed from per-type
schemas costs a few microseconds, because the schema of each parameter type (``str``,
``list[str] | None``, a model, ...) is generated once per process and shared by every
tool that uses it. The JSON Schema is assembled the same way from per-type fragments.

The composed validator is the model's validator in all that matters: the same
per-field schemas, unknown fields rejected, defaults as pydantic applies them, errors
with the same types and locations; the JSON Schema is the model's, byte for byte.
Where that cannot be guaranteed (a ``Field(...)`` default, an alias, a dataclass or
TypedDict parameter, an annotation pydantic cannot take alone, one definition used by
two parameters) the tool falls back to its ``Args`` model.

Every validator of arguments, composed or a model's, applies one policy
(:func:`argument_schema`): unknown fields are rejected at every depth, not only at the
top (a nested model, dataclass or TypedDict that says nothing about extra fields is
validated as ``extra="forbid"``; one that configures ``extra`` keeps its choice), and a
strict validator takes no lax coercion of scalars (``"5"`` for an int, ``true`` for a
number, ``1`` for a bool). The JSON Schema says the same: ``additionalProperties:
false`` on every object whose unknown fields are rejected.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, PydanticUserError, TypeAdapter
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import PydanticUndefined, SchemaValidator, core_schema

if TYPE_CHECKING:
    from toolweave.authoring._tool import Parameter

__all__ = [
    "MISSING",
    "ArgumentsJsonSchema",
    "Signature",
    "argument_schema",
    "build_validator",
    "compose",
    "composed_validators",
    "editable",
    "json_schema",
    "kwargs_validator",
    "listed_json_schema",
    "listed_model_schema",
    "model_arguments",
    "plain_names",
    "signature_of",
]

MISSING: Any = PydanticUndefined
"""The default of a parameter without one."""


class _FieldType:
    """One parameter type: its core schema, the references it defines, the classes
    (models, dataclasses, TypedDicts) in it and, on first use, its JSON Schema as a
    field (``None`` when only full generation is faithful)."""

    __slots__ = ("_json", "_json_done", "_strict", "classes", "refs", "schema")

    def __init__(self, schema: core_schema.CoreSchema, refs: frozenset[str]) -> None:
        self.schema = schema
        self.refs = refs
        found: dict[type[Any], None] = {}
        _classes(schema, found)
        self.classes = tuple(found)
        self._json: _Fragment | None = None
        self._json_done = False
        self._strict: core_schema.CoreSchema | None = None

    def strict(self) -> core_schema.CoreSchema:
        """The schema without lax coercion of scalars (built on first use)."""
        if self._strict is None:
            self._strict = argument_schema(self.schema, strict=True)
        return self._strict

    def json(self) -> _Fragment | None:
        """The field's JSON Schema and the definitions it refers to, frozen (built on
        first use); ``None`` when only generating the whole schema is faithful."""
        if not self._json_done:
            self._json_done = True
            self._json = _fragment(self.schema, self.refs)
        return self._json


class _Fragment:
    """The JSON Schema of one parameter type as a field of an ``Args`` model.

    Attributes:
        field: The field's schema, read-only; its ``title`` is ``None`` where pydantic
            puts the field's name there.
        defs: The ``$defs`` entries it refers to (name → read-only schema), sorted.
        refs: The core references behind ``defs`` (one per entry).
    """

    __slots__ = ("defs", "field", "refs")

    def __init__(self, field: Any, defs: Any, refs: frozenset[str]) -> None:
        self.field = field
        self.defs = defs
        self.refs = refs


_SLOT = "toolweave_parameter"
"""The field name a type with definitions is generated under (then taken out)."""


def _fragment(schema: core_schema.CoreSchema, refs: frozenset[str]) -> _Fragment | None:
    """A type's JSON Schema as a field: generated alone, or, for a type with
    definitions (models, enums), as the one field of a typed dict, so that it refers to
    ``$defs`` as it does in a model; ``None`` when a definition would not have a name
    of its own (then only generating the whole schema is faithful)."""
    from toolweave.formats._frozen import freeze

    generator = ArgumentsJsonSchema()
    if not refs:
        field = generator.generate(schema)
        defs: dict[str, Any] = {}
        if "title" not in field and generator.field_title_should_be_set(schema):
            field["title"] = None
    else:
        wrapper = core_schema.typed_dict_schema({_SLOT: core_schema.typed_dict_field(schema)})
        generated = generator.generate(wrapper)
        field = generated["properties"][_SLOT]
        defs = generated.get("$defs", {})
        if len(defs) != len(refs):
            return None
        if field.get("title") == generator.get_title_from_name(_SLOT):
            field["title"] = None
    return _Fragment(freeze(field), freeze(defs), refs)


_CACHE_LIMIT = 4096
_schemas: dict[Any, _FieldType | None] = {}
_NOT_CACHED = object()
_ARGS_CONFIG = ConfigDict(extra="forbid")

# What an ``Annotated`` FieldInfo may carry for TypeAdapter to treat it as a model field
# would: constraints and documentation, but nothing that changes how the field is found
# or filled.
_FIELD_ONLY = ("alias", "validation_alias", "default_factory")


_SCALARS = frozenset({"int", "float", "bool"})
"""Core schema types whose lax mode coerces (``"5"`` → 5, ``true`` → 1, ``1`` → True)."""
_NOT_SCHEMAS = frozenset({"cls", "config", "default", "expected", "members", "metadata"})
"""Keys of a core schema whose values are data, not schemas."""


def argument_schema(schema: core_schema.CoreSchema, *, strict: bool) -> core_schema.CoreSchema:
    """``schema`` with the argument policy applied, as a copy.

    Every model, dataclass and TypedDict inside rejects unknown fields unless its own
    config sets ``extra``; with ``strict``, every int, float and bool takes no lax
    coercion (a JSON int is still a float; enums, dates and nested objects are read as
    from JSON, as the lax schema reads them).

    Args:
        schema: A core schema (a model's, or a parameter type's).
        strict: Whether scalars are validated strictly.
    """
    return _policy(schema, strict)  # type: ignore[no-any-return]


def _own_extra(cls: Any) -> bool:
    """Whether the class behind a core schema configures ``extra`` itself."""
    config = getattr(cls, "model_config", None)
    if not isinstance(config, dict):
        config = getattr(cls, "__pydantic_config__", None)
    return isinstance(config, dict) and "extra" in config


def _policy(node: Any, strict: bool) -> Any:
    if isinstance(node, list):
        return [_policy(item, strict) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: v if k in _NOT_SCHEMAS else _policy(v, strict) for k, v in node.items()}
    kind = out.get("type")
    if kind == "model":
        inner = out.get("schema")
        if (
            isinstance(inner, dict)
            and inner.get("type") == "model-fields"
            and "extra_behavior" not in inner
            and not _own_extra(out.get("cls"))
        ):
            out["schema"] = {**inner, "extra_behavior": "forbid"}
    elif kind == "dataclass":
        inner = out.get("schema")
        if isinstance(inner, dict) and not _own_extra(out.get("cls")):
            out["schema"] = {**inner, "extra_behavior": "forbid"}
            out["config"] = {**out.get("config", {}), "extra_fields_behavior": "forbid"}
    elif kind == "typed-dict":
        if not _own_extra(out.get("cls")):
            out["extra_behavior"] = "forbid"
    elif strict and kind in _SCALARS and "strict" not in out:
        out["strict"] = True
    return out


class ArgumentsJsonSchema(GenerateJsonSchema):
    """JSON Schema generation that shows the argument policy: ``additionalProperties:
    false`` on a model whose unknown fields :func:`argument_schema` rejects."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        """The model's JSON Schema, closed when its core schema forbids extra fields."""
        json_schema = super().model_schema(schema)
        inner: Any = schema.get("schema")
        if (
            isinstance(inner, dict)
            and inner.get("extra_behavior") == "forbid"
            and "additionalProperties" not in json_schema
        ):
            json_schema["additionalProperties"] = False
        return json_schema


_models: dict[tuple[type[BaseModel], bool], tuple[core_schema.CoreSchema, SchemaValidator]] = {}


def model_arguments(
    model: type[BaseModel], *, strict: bool
) -> tuple[core_schema.CoreSchema, SchemaValidator]:
    """The core schema and validator of ``model`` used as a tool's arguments (see
    :func:`argument_schema`); built once per model and strictness.

    The validator returns instances of ``model`` itself.
    """
    key = (model, strict)
    hit = _models.get(key)
    if hit is None:
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)
        schema = argument_schema(model.__pydantic_core_schema__, strict=strict)
        hit = _models[key] = (schema, build_validator(schema))
    return hit


_BUILDING = threading.Lock()


def build_validator(
    schema: core_schema.CoreSchema,
    config: core_schema.CoreConfig | None = None,
    classes: Iterable[type[Any]] | None = None,
) -> SchemaValidator:
    """A validator of ``schema`` that follows the schema, nested models included.

    pydantic-core reuses the validator a complete model (or TypedDict) carries instead
    of building one from its schema; that validator knows nothing of the argument
    policy. While this validator is built, the classes in ``schema`` (found in it unless
    given as ``classes``) are marked incomplete (then restored), so their schemas, as
    given, are used.
    """
    if classes is None:
        found: dict[type[Any], None] = {}
        _classes(schema, found)
        classes = found
    with _BUILDING:
        flipped = [c for c in classes if c.__dict__.get("__pydantic_complete__") is True]
        try:
            for cls in flipped:
                cls.__pydantic_complete__ = False
            return SchemaValidator(schema, config)
        finally:
            for cls in flipped:
                cls.__pydantic_complete__ = True


def _classes(node: Any, into: dict[type[Any], None]) -> None:
    if isinstance(node, list):
        for item in node:
            _classes(item, into)
    elif isinstance(node, dict):
        cls = node.get("cls")
        if isinstance(cls, type) and node.get("type") in ("model", "typed-dict", "dataclass"):
            into[cls] = None
        for key, value in node.items():
            if key not in _NOT_SCHEMAS:
                _classes(value, into)


def compose(
    title: str, parameters: tuple[Parameter, ...], *, strict: bool = False
) -> core_schema.CoreSchema | None:
    """The schema of a function's arguments as a typed dict: what its ``Args`` model
    validates and documents, without the model; ``None`` when only the model is faithful.

    Args:
        title: The ``Args`` model's name.
        parameters: The function's parameters, in order.
        strict: Validate scalars without lax coercion (see :func:`argument_schema`).
    """
    composed = _compose(title, parameters, strict)
    return None if composed is None else composed[0]


def _compose(
    title: str, parameters: tuple[Parameter, ...], strict: bool
) -> tuple[core_schema.CoreSchema, tuple[type[Any], ...]] | None:
    """:func:`compose`, with the classes in the schema (from its parameter types)."""
    fields: dict[str, core_schema.TypedDictField] = {}
    seen: set[str] = set()
    classes: tuple[type[Any], ...] = ()
    for name, annotation, default, description in parameters:
        if name.startswith("_"):
            return None  # a model refuses it; keep the model's error
        found = _field_schema(annotation)
        if found is None:
            return None
        schema, refs = (found.strict() if strict else found.schema), found.refs
        if refs & seen:
            return None  # one definition used twice needs the model's definitions
        seen |= refs
        classes += found.classes
        required = default is MISSING
        if not required:
            schema = core_schema.with_default_schema(schema, default=default)
        fields[name] = core_schema.typed_dict_field(
            schema,
            required=required,
            metadata=None if description is None else _documented(description),
        )
    schema = core_schema.typed_dict_schema(
        fields, extra_behavior="forbid", metadata=_documented(title, "title")
    )
    return schema, classes


KwargsValidators = tuple[Callable[[Any], dict[str, Any]], Callable[[Any], dict[str, Any]]]
"""``(validate_json, validate_python)``, both returning keyword arguments."""


def kwargs_validator(
    title: str, schema: core_schema.CoreSchema, classes: Iterable[type[Any]] | None = None
) -> KwargsValidators | None:
    """``(validate_json, validate_python)`` for a schema from :func:`compose`, both
    returning keyword arguments; ``None`` if pydantic-core refuses the schema.
    ``classes``: the classes in the schema, when known (see :func:`build_validator`)."""
    try:
        validator = build_validator(schema, core_schema.CoreConfig(title=title), classes)
    except Exception:
        return None
    return validator.validate_json, validator.validate_python


def composed_validators(
    title: str, parameters: tuple[Parameter, ...], *, strict: bool = False
) -> KwargsValidators | None:
    """:func:`kwargs_validator` of :func:`compose`'s schema; ``None`` when only the
    model is faithful, or pydantic-core refuses the schema."""
    composed = _compose(title, parameters, strict)
    return None if composed is None else kwargs_validator(title, *composed)


def json_schema(title: str, parameters: tuple[Parameter, ...]) -> dict[str, Any] | None:
    """The JSON Schema of the arguments, as ``model_json_schema`` gives it for the
    ``Args`` model; ``None`` when only the model is faithful. The caller owns it (plain,
    editable containers).

    Assembled from per-type fragments (see :func:`listed_json_schema`) where it can
    be; else generated from what :func:`compose` gives.
    """
    listed = listed_json_schema(title, parameters)
    if listed is not None:
        copied: dict[str, Any] = editable(listed)
        return copied
    schema = compose(title, parameters)
    return None if schema is None else ArgumentsJsonSchema().generate(schema)


_shapes: dict[tuple[Any, ...], tuple[Any, Any] | None] = {}
"""Parameters (name, type fragment, default, description) → the top level of their
schema without its title, and its ``$defs`` (``None``: cannot be assembled)."""
_definitions: dict[frozenset[_Fragment], Any] = {}
_signatures: dict[tuple[Any, ...], Signature] = {}
"""Parameters (name, type key, default, description) → the one :class:`Signature`
of every tool that declares them."""
_model_schemas: dict[type[BaseModel], Any] = {}


class Signature:
    """The listed JSON Schema of one list of parameters, shared by every tool that
    declares an equal list: the same names, types (compared as :func:`_type_key` does),
    defaults and descriptions.

    :func:`signature_of` finds it when a tool is registered, from what the annotations
    say (no schema is generated then). On the first listing of any of its tools the
    schema's top level is assembled from per-type fragments, once; each tool's listed
    schema is then a read-only copy of it that carries the tool's own title.
    """

    __slots__ = ("_parameters", "_parts")

    def __init__(self, parameters: tuple[Parameter, ...]) -> None:
        self._parameters = parameters
        self._parts: Any = _NOT_CACHED

    @property
    def assembled(self) -> bool:
        """Whether the shared parts are made (then :meth:`schema` is a copy and no more)."""
        return self._parts is not _NOT_CACHED

    def schema(self, title: str) -> Mapping[str, Any] | None:
        """The arguments' JSON Schema titled ``title`` (see :func:`listed_json_schema`);
        ``None`` when it cannot be assembled."""
        parts = self._parts
        if parts is _NOT_CACHED:
            parts, final = _parts_of(self._parameters)
            if final:
                self._parts = parts
        if parts is None:
            return None
        top, defs = parts
        if title in defs:
            return None  # pydantic would name that definition otherwise
        from toolweave.formats._frozen import titled

        return titled(top, title)  # a frozen copy that knows its shared top level


def signature_of(parameters: tuple[Parameter, ...]) -> Signature:
    """The :class:`Signature` of ``parameters``: one per equal list of parameters (up
    to a few thousand), else one of their own. Only keys the annotations (see
    :func:`_type_key`); generates nothing."""
    try:
        key = tuple(
            [
                (name, _type_key(annotation), _default_key(default), description)
                for name, annotation, default, description in parameters
            ]
        )
        found = _signatures.get(key)
    except Exception:  # something unhashable (or that cannot be compared): not shared
        return Signature(parameters)
    if found is None:
        found = Signature(parameters)
        if len(_signatures) < _CACHE_LIMIT:
            _signatures[key] = found
    return found


def listed_json_schema(title: str, parameters: tuple[Parameter, ...]) -> Mapping[str, Any] | None:
    """The JSON Schema of the arguments (as :func:`json_schema`), read-only and built
    from shared parts; ``None`` when it cannot be assembled.

    Every parameter type's JSON fragment, and the ``$defs`` entries of models and enums,
    are generated once per process; the top level of the schema of a list of parameters
    (names, types, defaults, descriptions) is made once and shared by every tool that
    declares the same list (see :class:`Signature`): a tool's own container is its top
    level, which carries its title. Assembly needs every parameter to be a type with a
    fragment, a JSON-native default, and definitions that keep their own names (no two
    types defining the same name, none named like the ``Args`` model).
    """
    return signature_of(parameters).schema(title)


def _parts_of(parameters: tuple[Parameter, ...]) -> tuple[tuple[Any, Any] | None, bool]:
    """The shared parts of the schema of ``parameters`` (see :func:`_assemble`), and
    whether that answer is final (a type that does not resolve yet may later)."""
    schemas: dict[Any, Any] = _schemas
    shape: list[tuple[Any, ...]] = []
    for name, annotation, default, description in parameters:
        if name.startswith("_"):
            return None, True  # a model refuses it
        try:
            found = schemas.get(annotation, _NOT_CACHED)  # the fast path of _field_schema
        except TypeError:
            found = _NOT_CACHED
        if found is _NOT_CACHED:
            found, final = _field_type(annotation)
            if found is None:
                return None, final
        if found is None:
            return None, True
        fragment = found._json if found._json_done else found.json()
        if fragment is None or not (default is MISSING or _json_native(default)):
            return None, True
        shape.append((name, fragment, _default_key(default), default, description))
    key = tuple(shape)
    parts: Any = _shapes.get(key, _NOT_CACHED)
    if parts is _NOT_CACHED:
        parts = _assemble(shape)
        if len(_shapes) < _CACHE_LIMIT:
            _shapes[key] = parts
    return parts, True


def _assemble(shape: list[tuple[Any, ...]]) -> tuple[Any, Any] | None:
    """The shared parts of a list of parameters: the schema's top level, read-only,
    without its title (a ``None`` in its place, so that a tool's copy keeps pydantic's
    order of keys), and its ``$defs`` (``()`` when none); ``None`` when the definitions
    of two types would share a name."""
    from toolweave.formats._frozen import frozen_dict, frozen_list

    properties: dict[str, Any] = {}
    required: list[str] = []
    fragments: set[_Fragment] = set()
    for name, fragment, _, default, description in shape:
        if fragment.defs:
            fragments.add(fragment)
        properties[name] = _property(fragment, name, default, description)
        if default is MISSING:
            required.append(name)
    top: dict[str, Any] = {}
    defs: Any = ()
    if fragments:
        defs = _merged_definitions(frozenset(fragments))
        if defs is None:
            return None
        top["$defs"] = defs
    top["additionalProperties"] = False
    top["properties"] = frozen_dict(properties)
    if required:
        top["required"] = frozen_list(required)
    top["title"] = None
    top["type"] = "object"
    return frozen_dict(top), defs


def _property(fragment: _Fragment, name: str, default: Any, description: str | None) -> Any:
    """One property: a type's fragment with the field's title, description and default.

    Beside a ``$ref``, pydantic leaves out what the definition says already (a
    description that is the model's docstring).
    """
    from toolweave.formats._frozen import freeze, frozen_dict

    prop = dict(fragment.field)
    if prop.get("title", "") is None:
        prop["title"] = name.title().replace("_", " ").strip()
    if description is not None:
        prop["description"] = description
    if default is not MISSING:
        prop["default"] = freeze(default)
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = fragment.defs.get(ref.rpartition("/")[2], {})
        prop = {k: v for k, v in prop.items() if k == "$ref" or target.get(k, prop) != v}
    return frozen_dict({key: prop[key] for key in sorted(prop)})


def _merged_definitions(fragments: frozenset[_Fragment]) -> Any:
    """The ``$defs`` of several parameter types, sorted by name; ``None`` when two
    different types would share a name (pydantic then names them otherwise)."""
    hit = _definitions.get(fragments)
    if hit is not None:
        return hit
    from toolweave.formats._frozen import frozen_dict

    merged: dict[str, Any] = {}
    refs: set[str] = set()
    for fragment in fragments:
        refs |= fragment.refs
        for name, definition in fragment.defs.items():
            if merged.setdefault(name, definition) != definition:
                return None
    if len(merged) != len(refs):
        return None
    defs = frozen_dict({name: merged[name] for name in sorted(merged)})
    if len(_definitions) < _CACHE_LIMIT:
        _definitions[fragments] = defs
    return defs


def plain_names(parameters: tuple[Parameter, ...]) -> frozenset[str] | None:
    """The argument names of the ``Args`` model of ``parameters``, without the model;
    ``None`` where a parameter may be named otherwise (an alias) or refused."""
    names: list[str] = []
    for name, annotation, _default, _description in parameters:
        if name.startswith("_") or not _plain_metadata(annotation):
            return None
        names.append(name)
    return frozenset(names)


def editable(value: Any) -> Any:
    """A copy of a JSON value's containers, plain and editable (the leaves are
    immutable)."""
    if isinstance(value, dict):
        return {key: editable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [editable(item) for item in value]
    return value


def listed_model_schema(model: type[BaseModel]) -> Mapping[str, Any]:
    """The JSON Schema of ``model`` used as a tool's arguments (see
    :func:`argument_schema`), read-only; generated once per model (up to a few
    thousand models), for the declared ``Args`` of tool classes, whose tools a process
    builds again with every set."""
    hit = _model_schemas.get(model)
    if hit is None:
        from toolweave.formats._frozen import freeze

        hit = freeze(ArgumentsJsonSchema().generate(model_arguments(model, strict=False)[0]))
        if len(_model_schemas) < _CACHE_LIMIT:
            _model_schemas[model] = hit
    return hit  # type: ignore[no-any-return]


def _default_key(value: Any) -> Any:
    """A key for a default, equal only for defaults that read alike in JSON: with its
    type (``1``, ``1.0`` and ``True`` are three), a float by its ``repr`` (``-0.0`` is
    not ``0.0``)."""
    kind = type(value)
    return (kind, repr(value)) if kind is float else (kind, value)


def _json_native(value: Any) -> bool:
    """A default that appears in a JSON Schema exactly as it is."""
    kind = type(value)
    return value is None or kind in (bool, int, str) or (kind is float and math.isfinite(value))


def _documented(text: str, key: str = "description") -> dict[str, Any]:
    return {"pydantic_js_updates": {key: text}}


def _field_schema(annotation: Any) -> _FieldType | None:
    """The core schema of one parameter type and the references it defines; cached
    by what the type says (see :func:`_type_key`)."""
    return _field_type(annotation)[0]


def _field_type(annotation: Any) -> tuple[_FieldType | None, bool]:
    """:func:`_field_schema`, and whether its answer is final (see :func:`_generate`)."""
    try:
        hit = _schemas.get(annotation, _NOT_CACHED)  # an equal annotation (most are)
        if hit is _NOT_CACHED:
            key = _type_key(annotation)
            if key is not annotation:
                hit = _schemas.get(key, _NOT_CACHED)
    except TypeError:  # an unhashable annotation: computed each time
        return _generate(annotation)
    if hit is not _NOT_CACHED:
        return hit, True  # type: ignore[return-value]
    found, final = _generate(annotation)
    if final and len(_schemas) < _CACHE_LIMIT:
        _schemas[key] = found
    return found, final


def _type_key(annotation: Any) -> Any:
    """The cache key of a parameter type: the annotation itself, except that the
    metadata of ``Annotated`` (at any depth) is compared by value.

    Annotations are evaluated per function, and a ``Field(...)`` compares by identity:
    ``Annotated[int, Field(ge=0)]`` of two tools would never share a schema. Values
    are keyed with their types (``ge=0`` and ``ge=0.0`` give different schemas).

    Raises:
        TypeError: Something in the annotation is unhashable (not cached then).
    """
    if type(annotation) is type or isinstance(annotation, type):
        return annotation  # a class (not an alias: those are not types)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return (
            typing.Annotated,
            _type_key(annotation.__origin__),
            tuple([_value_key(extra) for extra in annotation.__metadata__]),
        )
    if origin is None or origin is typing.Literal:
        return annotation
    args = typing.get_args(annotation)
    keys = tuple([_type_key(arg) for arg in args])
    for key, arg in zip(keys, args, strict=True):
        if key is not arg:
            return (origin, type(annotation), keys)
    return annotation


_FIELD_INFO_SLOTS = tuple(name for name in FieldInfo.__slots__ if not name.startswith("_"))
_SCALAR_TYPES = frozenset({int, float, bool, str, type(None)})
_fields_of: dict[type, tuple[str, ...] | None] = {}
"""Field names of the dataclasses met in metadata (``annotated_types.Ge``, ...)."""


def _value_key(value: Any) -> Any:
    """A hashable key for one piece of ``Annotated`` metadata, equal only for values
    that give the same schema."""
    cls = type(value)
    if cls in _SCALAR_TYPES:
        return (cls, repr(value)) if cls is float else (cls, value)
    if cls is FieldInfo:
        given = getattr(value, "_attributes_set", None)
        if type(given) is dict:
            # What Field(...) was given: constraints go to its metadata, the rest here.
            return (
                cls,
                tuple([_value_key(item) for item in value.metadata]),
                tuple([(k, _value_key(v)) for k, v in given.items()]) if given else (),
            )
    names: Any = _fields_of.get(cls, _NOT_CACHED)
    if names is _NOT_CACHED:
        names = _fields_of[cls] = (
            tuple(f.name for f in dataclasses.fields(cls))
            if dataclasses.is_dataclass(cls)
            else None
        )
    if names is not None:  # annotated_types.Ge and the like: usually one scalar field
        fields = [getattr(value, name) for name in names]
        return (
            cls,
            tuple([_value_key(v) for v in fields]),
        )
    if cls is list or cls is tuple:
        items: Any = value
        return (cls, tuple([_value_key(item) for item in items]))
    if cls is dict:
        return (dict, tuple([(k, _value_key(v)) for k, v in value.items()]))
    if isinstance(value, FieldInfo):
        return (cls, tuple([_value_key(getattr(value, name, None)) for name in _FIELD_INFO_SLOTS]))
    hash(value)
    return value


def _generate(annotation: Any) -> tuple[_FieldType | None, bool]:
    """The schema of ``annotation`` as a field of an ``Args`` model (whose config
    reaches nested types without their own), and whether the answer is final (a type
    that does not resolve yet may later)."""
    if isinstance(annotation, str) or not _plain_metadata(annotation):
        return None, True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            try:
                adapter: TypeAdapter[Any] = TypeAdapter(annotation, config=_ARGS_CONFIG)
            except PydanticUserError as exc:
                # A model keeps its own config; a dataclass or TypedDict would take the
                # Args model's, which TypeAdapter cannot give it alone.
                if exc.code != "type-adapter-config-unused" or not _is_model(annotation):
                    return None, True
                adapter = TypeAdapter(annotation)
            schema = adapter.core_schema
        except Exception:
            return None, False
    if caught:
        return None, True  # pydantic had something to say about it alone: use the model
    schema = argument_schema(schema, strict=False)
    refs: set[str] = set()
    if not _collect_refs(schema, refs):
        return None, True
    return _FieldType(schema, frozenset(refs)), True


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _plain_metadata(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return True
    for extra in annotation.__metadata__:
        if isinstance(extra, FieldInfo) and (
            any(getattr(extra, attr) is not None for attr in _FIELD_ONLY)
            or extra.default is not PydanticUndefined
        ):
            return False
    return True


def _collect_refs(schema: Any, refs: set[str]) -> bool:
    """Add the references ``schema`` defines to ``refs``; ``False`` when it uses
    definitions (refs resolved elsewhere), which a composed schema cannot carry."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("definitions", "definition-ref"):
            return False
        ref = schema.get("ref")
        if isinstance(ref, str):
            if ref in refs:
                return False
            refs.add(ref)
        return all(_collect_refs(v, refs) for k, v in schema.items() if k != "metadata")
    if isinstance(schema, list):
        return all(_collect_refs(v, refs) for v in schema)
    return True
