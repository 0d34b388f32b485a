"""Type erasure: a typed tool becomes one JSON-in, JSON-out handle at registration.

Everything that depends on the tool's types (argument parsing, output dumping, model
text) is chosen once here; the dispatcher only calls the captured functions. Pydantic
schemas and validators are built lazily, on first use, and then cached. ``@tool``
functions are validated straight into their keyword arguments (a dict), by a validator
composed without a model class where that is faithful (:mod:`toolweave.catalog._arguments`).
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import reprlib
from collections.abc import AsyncIterator, Callable, Mapping
from functools import partial
from typing import Any, NoReturn, final

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from toolweave._threads import run_in_worker
from toolweave.authoring._tool import (
    READ_ONLY_KINDS,
    Capabilities,
    FunctionTool,
    Kind,
    Lifecycle,
    Parameter,
    Tool,
)
from toolweave.catalog._arguments import (
    ArgumentsJsonSchema,
    Signature,
    composed_validators,
    editable,
    json_schema,
    listed_model_schema,
    model_arguments,
    plain_names,
    signature_of,
)
from toolweave.errors import (
    ErrorKind,
    ToolError,
    UnsupportedSchemaError,
    describe_exception,
    exception_text,
)

__all__ = [
    "ErasedTool",
    "erase",
    "format_validation_error",
    "invalid_arguments",
    "model_text",
    "read_only_as",
    "strict_arguments_as",
    "unreadable_arguments",
    "validation_problems",
]


logger = logging.getLogger("toolweave")

_SURROGATE = re.compile("[\ud800-\udfff]")


def model_text(text: str) -> str:
    """``text`` as valid UTF-8: surrogates that pair up are joined into their character,
    lone ones become U+FFFD. Text that needs no change is returned as it is (ASCII text
    is recognised without a scan)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _dump_json(value: Any) -> str:
    return model_text(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _finish_str(value: Any) -> tuple[Any, str]:
    if type(value) is str:
        text = model_text(value)
        return text, text
    return _finish_any(value)


def _finish_any(value: Any) -> tuple[Any, str]:
    if isinstance(value, str):
        text = model_text(str(value))
        return text, text
    if isinstance(value, BaseModel):
        return _finish_model(value)
    try:
        output = to_jsonable_python(value)
    except UnicodeError:  # a lone surrogate where the dump needs UTF-8 (a key)
        output = to_jsonable_python(_valid_strings(value))
    return output, _dump_json(output)


def _valid_strings(value: Any) -> Any:
    """``value`` with every string in its containers made valid (see :func:`model_text`)."""
    if isinstance(value, str):
        return model_text(value)
    if isinstance(value, dict):
        return {_valid_strings(k): _valid_strings(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_valid_strings(item) for item in value]
    return value


def _finish_model(value: BaseModel) -> tuple[Any, str]:
    output = value.model_dump(mode="json")
    to_model = getattr(value, "to_model", None)
    try:
        text = to_model() if callable(to_model) else value.model_dump_json()
    except PydanticSerializationError:
        # Text the JSON encoder refuses (a lone surrogate): the dump, made valid.
        return output, _dump_json(output)
    return output, model_text(text)


def strict_arguments_as(capabilities: Capabilities, kind: Kind) -> bool:
    """Whether a tool validates its arguments strictly (no ``"5"`` for 5, no ``true``
    for 1): as its capabilities declare, else strictly unless it is read-only."""
    declared = capabilities.strict_arguments
    return not read_only_as(capabilities, kind) if declared is None else declared


def read_only_as(capabilities: Capabilities, kind: Kind) -> bool:
    """Whether a tool with ``capabilities`` is read-only when its kind is ``kind``: as it
    declares, else as the kind implies."""
    declared = capabilities.read_only
    return kind in READ_ONLY_KINDS if declared is None else declared


def unreadable_arguments(exc: Exception) -> ToolError:
    """The ``invalid_params`` error for arguments whose reading failed with ``exc``
    (nested too deeply for the interpreter, a mapping whose keys raise, ...)."""
    if isinstance(exc, RecursionError):
        return ToolError(
            ErrorKind.INVALID_PARAMS,
            "arguments are nested too deeply; send a flatter JSON object",
        )
    return ToolError(
        ErrorKind.INVALID_PARAMS,
        model_text(f"arguments could not be read: {type(exc).__name__}: {_exception_text(exc)}"),
    )


@final
class ErasedTool:
    """A registered tool with its types erased: JSON arguments in, JSON output out.

    Built once per tool by :func:`erase` (or by an external-tool source); immutable after.

    Attributes:
        fqid: ``namespace:id``.
        streaming: ``True`` when calls go through :attr:`open_stream`.
        is_coroutine: For non-streaming tools: ``invoke`` returns a coroutine (else the
            output itself, for quick synchronous code).
        origin: Where the registration came from (pack name or ``"host"``).
        source: ``"local"`` for registered tools, ``"mcp:<server>"`` / ``"external"``
            for tools added at run time.
        state_types: The state models the tool declares (what ``ctx.state`` may read).
        state_locks: The declared models whose locks a call holds while it runs
            (``None`` when none: no state, or ``state_access = "shared"``).
        strict_arguments: Whether arguments are validated without lax coercion of
            scalars (see :func:`strict_arguments_as`).

    A tool whose arguments have no JSON Schema or validator (an annotation pydantic
    cannot describe) is found where they are first made, lazily as ever: its listed
    schema then raises :class:`~toolweave.errors.UnsupportedSchemaError` (listings
    leave it out and report it, see :meth:`ToolSet.listed
    <toolweave.ToolSet.listed>`) and its calls answer ``unavailable``; a warning names
    the tool, where it was registered from and why, once.
    """

    __slots__ = (
        "_args_model",
        "_args_of",
        "_broken",
        "_listed",
        "_schema",
        "_signature",
        "_title",
        "_validate_json",
        "_validate_python",
        "capabilities",
        "concurrency_safe",
        "conflicts",
        "description",
        "emitted_notifications",
        "finish",
        "fqid",
        "id",
        "invoke",
        "is_coroutine",
        "kind",
        "lifecycle",
        "namespace",
        "open_stream",
        "origin",
        "params_type",
        "read_only",
        "replacement",
        "requires",
        "source",
        "state_locks",
        "state_types",
        "streaming",
        "strict_arguments",
        "tool",
        "version",
    )

    def __init__(
        self,
        *,
        id: str,
        namespace: str,
        kind: Kind,
        description: str,
        capabilities: Capabilities,
        invoke: Callable[[Any, Any], Any] | None,
        open_stream: Callable[[Any, Any], AsyncIterator[Any]] | None,
        is_coroutine: bool,
        finish: Callable[[Any], tuple[Any, str]],
        args_model: type[BaseModel] | None = None,
        args_of: type[Any] | None = None,
        schema: dict[str, Any] | None = None,
        validate_python: Callable[[Any], Any] | None = None,
        origin: str = "host",
        source: str = "local",
        params_type: type[BaseModel] | None = None,
        state_types: tuple[type[BaseModel], ...] = (),
        state_access: str = "exclusive",
        requires: str | None = None,
        version: str = "1",
        conflicts: tuple[str, ...] = (),
        lifecycle: Lifecycle = Lifecycle.ACTIVE,
        replacement: str | None = None,
        emitted_notifications: tuple[str, ...] = (),
        tool: Tool[Any, Any] | None = None,
        strict_arguments: bool = False,
    ) -> None:
        self.id = id
        self.namespace = namespace
        self.fqid = f"{namespace}:{id}"
        self.kind = kind
        self.description = description
        self.capabilities = capabilities
        self.read_only = read_only_as(capabilities, kind)
        conc = capabilities.concurrency_safe
        self.concurrency_safe = self.read_only if conc is None else conc
        self.invoke = invoke
        self.open_stream = open_stream
        self.streaming = open_stream is not None
        self.is_coroutine = is_coroutine
        self.finish = finish
        self._args_model = args_model
        self._args_of = args_of
        self._schema = schema
        self._listed: Mapping[str, Any] | None = None
        self._broken: str | None = None
        # Found now, from the annotations alone: tools that declare the same parameters
        # share one Signature, whose schema is assembled once, on the first listing of
        # one of them; a tool registered after that gets its copy now.
        plain = None if args_of is None else _plain_parameters(args_of)
        self._signature: Signature | None = None if plain is None else signature_of(plain[1])
        self._title = "" if plain is None else plain[0]
        if self._signature is not None and self._signature.assembled:
            self._listed = self._signature.schema(self._title)
        self.origin = origin
        self.source = source
        self.params_type = params_type
        self.state_types = state_types
        self.state_locks = state_types if state_types and state_access == "exclusive" else None
        self.requires = requires
        self.version = version
        self.conflicts = conflicts
        self.lifecycle = lifecycle
        self.replacement = replacement
        self.emitted_notifications = emitted_notifications
        self.tool = tool
        self.strict_arguments = strict_arguments
        if args_model is not None or args_of is not None:
            self._validate_json: Callable[[Any], Any] = self._bootstrap_json
            self._validate_python: Callable[[Any], Any] = self._bootstrap_python
        else:
            assert validate_python is not None, "a tool without Args needs validate_python"
            self._validate_python = validate_python
            self._validate_json = self._parse_then_validate

    def __repr__(self) -> str:
        return f"<ErasedTool {self.fqid} from {self.origin}>"

    # -- arguments ----------------------------------------------------------------

    @property
    def args_model(self) -> type[BaseModel] | None:
        """The ``Args`` model (``None`` for JSON-only tools); read from the tool class on
        first access when the class creates it lazily (see :func:`toolweave.authoring._tool`)."""
        model = self._args_model
        if model is None and self._args_of is not None:
            model = self._args_model = self._args_of.args_model
        return model

    def argument_names(self) -> frozenset[str]:
        """The top-level argument names, as the input schema spells them.

        For an ``@tool`` function whose parameters need no model, its parameter names
        (no model is created); else the ``Args`` model's fields (aliases where set; no
        JSON Schema is generated); for JSON-only tools, the schema's ``properties``.
        """
        plain = None if self._args_of is None else _plain_parameters(self._args_of)
        names = None if plain is None else plain_names(plain[1])
        if names is not None:
            return names
        model = self.args_model
        if model is not None:
            return frozenset(f.alias or name for name, f in model.model_fields.items())
        props = self.input_schema.get("properties")
        return frozenset(props) if isinstance(props, Mapping) else frozenset()

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (built on first access, then cached).

        Plain containers: listings use :attr:`listed_schema`, which is read-only.
        """
        if self._schema is None:
            if self._broken is not None:
                raise self._schema_error()
            try:
                self._schema = self._make_schema()
            except Exception as exc:
                raise self._unusable(exc) from exc
        return self._schema

    def _make_schema(self) -> dict[str, Any]:
        plain = None if self._args_of is None else _plain_parameters(self._args_of)
        schema = None if plain is None else json_schema(*plain)
        if schema is None:
            model = self.args_model
            assert model is not None
            if self._args_of is None:  # a declared Args model: its schema is shared
                schema = editable(listed_model_schema(model))
            else:
                core = model_arguments(model, strict=False)[0]
                schema = ArgumentsJsonSchema().generate(core)
        return schema

    @property
    def listed_schema(self) -> Mapping[str, Any]:
        """The JSON Schema of the arguments as listings show it (built on first access,
        then cached): the same as :attr:`input_schema`, read-only. For an ``@tool``
        function, a copy of the top level its :class:`~toolweave.catalog._arguments.
        Signature` shares with the tools that declare the same parameters; for a declared
        ``Args`` model, the model's schema, generated once per model; else a read-only
        copy of :attr:`input_schema`."""
        listed = self._listed
        if listed is None:
            if self._broken is not None:
                raise self._schema_error()
            try:
                signature = self._signature
                if signature is None or (listed := signature.schema(self._title)) is None:
                    listed = self._unshared_schema()
            except UnsupportedSchemaError:
                raise
            except Exception as exc:
                raise self._unusable(exc) from exc
            self._listed = listed
        return listed

    @property
    def listed_schema_if_made(self) -> Mapping[str, Any] | None:
        """:attr:`listed_schema` if it is made already (no work), else ``None``."""
        return self._listed

    def _unshared_schema(self) -> Mapping[str, Any]:
        """The listed schema of a tool without a shared :class:`Signature` schema."""
        if self._args_of is None and self._schema is None and self.args_model is not None:
            return listed_model_schema(self.args_model)
        from toolweave.formats._frozen import freeze

        return freeze(self.input_schema)  # type: ignore[no-any-return]

    def parse(self, raw: Any) -> Any:
        """Validate raw arguments (JSON text, bytes, a dict or ``None``) into ``Args``.

        Raises:
            pydantic.ValidationError: The arguments are invalid.
            ToolError: ``invalid_params``: the arguments are not a JSON object at all,
                or could not be read (nested too deeply, a mapping that raises, ...).
        """
        try:
            if type(raw) is dict:
                return self._validate_python(raw)
            if isinstance(raw, (str, bytes, bytearray)):
                return self._validate_json(raw)
            if raw is None:
                return self._validate_python({})
            if isinstance(raw, Mapping):
                return self._validate_python(dict(raw))
            model = self.args_model
            if model is not None and isinstance(raw, model):
                return raw if self._args_of is None else dict(raw.__dict__)
        except (ValidationError, ToolError):
            raise
        except Exception as exc:
            raise unreadable_arguments(exc) from exc
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"arguments must be a JSON object, got {type(raw).__name__}",
        )

    def _capture(self) -> None:
        strict = self.strict_arguments
        try:
            if self._args_of is not None:
                self._validate_json, self._validate_python = _function_validators(
                    self._args_of, strict
                )
                return
            assert self.args_model is not None
            validator = model_arguments(self.args_model, strict=strict)[1]
        except Exception as exc:  # no validator can be made: the tool is unusable
            self._unusable(exc)
            return
        self._validate_json = validator.validate_json
        self._validate_python = validator.validate_python

    # -- a tool whose arguments cannot be described ----------------------------------

    def _unusable(self, exc: Exception) -> UnsupportedSchemaError:
        """Mark the tool unusable because making its schema or validator raised ``exc``
        (logged once); its calls answer ``unavailable`` from now on. Returns the error
        its schema raises."""
        if self._broken is None:
            self._broken = describe_exception(exc).splitlines()[0]  # pydantic adds pages
            self._validate_json = self._validate_python = self._refuse
            logger.warning(
                "tool %s (%s, from %s) is left out of listings and its calls answer "
                "unavailable: its arguments cannot be described as a JSON Schema: %s",
                self.id,
                self.fqid,
                self.origin,
                self._broken,
            )
        return self._schema_error()

    def _schema_error(self) -> UnsupportedSchemaError:
        return UnsupportedSchemaError(
            self.id, "JSON Schema", "", f"its arguments cannot be described: {self._broken}"
        )

    def _refuse(self, raw: Any) -> NoReturn:
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            f"{self.id} cannot be used: its arguments cannot be described (a bug in the "
            "tool, reported to the host); use another tool",
        )

    def _bootstrap_json(self, raw: Any) -> Any:
        self._capture()
        return self._validate_json(raw)

    def _bootstrap_python(self, raw: Any) -> Any:
        self._capture()
        return self._validate_python(raw)

    def _parse_then_validate(self, raw: Any) -> Any:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ToolError(
                ErrorKind.INVALID_PARAMS, f"arguments are not valid JSON: {exc}"
            ) from exc
        if not isinstance(data, dict):
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"arguments must be a JSON object, got {type(data).__name__}",
            )
        return self._validate_python(data)


def _plain_parameters(
    cls: type[FunctionTool[..., Any]],
) -> tuple[str, tuple[Parameter, ...]] | None:
    """An ``@tool`` function's ``Args`` title and parameters, when none of them needs
    the model (see :mod:`toolweave.catalog._arguments`)."""
    spec = cls.args_spec
    if spec is None or spec[3] is None:
        return None
    return spec[0], spec[3]


def _function_validators(
    cls: type[FunctionTool[..., Any]], strict: bool
) -> tuple[Callable[[Any], dict[str, Any]], Callable[[Any], dict[str, Any]]]:
    """Validators of an ``@tool`` function's arguments, returning its keyword arguments:
    composed without a model where that is faithful, else the ``Args`` model's (both
    under the argument policy, see :func:`~toolweave.catalog._arguments.argument_schema`)."""
    plain = _plain_parameters(cls)
    composed = None if plain is None else composed_validators(*plain, strict=strict)
    if composed is not None:
        return composed
    validator = model_arguments(cls.args_model, strict=strict)[1]

    def from_json(raw: Any) -> dict[str, Any]:
        return validator.validate_json(raw).__dict__  # type: ignore[no-any-return]

    def from_python(raw: Any) -> dict[str, Any]:
        return validator.validate_python(raw).__dict__  # type: ignore[no-any-return]

    return from_json, from_python


async def _on_worker(ctx: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` of a blocking tool on a worker thread; when the call stops waiting
    for it (or it fails), ``ctx.stopped`` tells the thread."""
    try:
        return await run_in_worker(fn, *args)
    except BaseException:
        mark = getattr(ctx, "_stopping", None)
        if mark is not None:
            mark()
        raise


def _invoke_function(
    tool_cls: type[FunctionTool[..., Any]],
) -> tuple[Callable[[Any, Any], Any], bool]:
    fn = tool_cls.fn
    takes_ctx = tool_cls.takes_context
    if tool_cls.is_async:
        if takes_ctx:
            return (lambda ctx, args: fn(ctx, **args)), True
        return (lambda ctx, args: fn(**args)), True
    if not tool_cls.capabilities.blocking:
        if takes_ctx:
            return (lambda ctx, args: fn(ctx, **args)), False
        return (lambda ctx, args: fn(**args)), False

    if takes_ctx:
        return (lambda ctx, args: _on_worker(ctx, partial(fn, ctx, **args))), True
    return (lambda ctx, args: _on_worker(ctx, partial(fn, **args))), True


def _invoke_method(tool: Tool[Any, Any]) -> tuple[Callable[[Any, Any], Any], bool]:
    run = tool.run
    if inspect.iscoroutinefunction(run):
        return run, True
    if not tool.capabilities.blocking:
        return run, False

    return (lambda ctx, args: _on_worker(ctx, run, ctx, args)), True


def _finisher(output_type: Any, tool_id: str) -> Callable[[Any], tuple[Any, str]]:
    """How a tool's output becomes ``(output, text)``, chosen once per tool.

    The declared ``Output`` is enforced: a value of another shape goes through
    validation as ``Output`` (a dict for a model, ...), and what does not validate is an
    ``execution_error`` naming the tool's bug. An instance of an ``Output`` class costs
    no validation.
    """
    if output_type is Any or output_type is None or output_type is type(None):
        return _finish_any
    if output_type is str:

        def finish_str(value: Any) -> tuple[Any, str]:
            if type(value) is str and value.isascii():  # the common case, no call
                return value, value
            return _finish_declared_str(tool_id, value)

        return finish_str
    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        model: type[BaseModel] = output_type

        def finish_model(value: Any) -> tuple[Any, str]:
            if isinstance(value, model):
                return _finish_model(value)
            try:
                checked = model.model_validate(value)
            except ValidationError as exc:
                raise _wrong_output(tool_id, value, model, exc) from None
            return _finish_model(checked)

        return finish_model
    adapter: TypeAdapter[Any] | None = None
    plain_class = isinstance(output_type, type)

    def finish(value: Any) -> tuple[Any, str]:
        nonlocal adapter
        if adapter is None:
            adapter = TypeAdapter(output_type)
        if not (plain_class and isinstance(value, output_type)):
            try:
                value = adapter.validate_python(value)
            except ValidationError as exc:
                raise _wrong_output(tool_id, value, output_type, exc) from None
        try:
            output = adapter.dump_python(value, mode="json")
        except (UnicodeError, PydanticSerializationError):
            output = to_jsonable_python(_valid_strings(adapter.dump_python(value)))
        return output, _dump_json(output)

    return finish


def _finish_declared_str(tool_id: str, value: Any) -> tuple[Any, str]:
    if type(value) is str or isinstance(value, str):
        text = model_text(str(value))
        return text, text
    raise _wrong_output(tool_id, value, str, None)


def _wrong_output(
    tool_id: str, value: Any, declared: Any, exc: ValidationError | None
) -> ToolError:
    """The ``execution_error`` of a tool whose output does not match its ``Output``."""
    name = getattr(declared, "__name__", None) if isinstance(declared, type) else None
    shown = name or repr(declared)
    message = (
        f"{tool_id} returned a {type(value).__name__} ({_preview(value)}), but its "
        f"declared Output is {shown}"
    )
    if exc is not None:
        problems = validation_problems(exc)
        more = len(problems) - 3
        message += ": " + "; ".join(problems[:3]) + (f"; and {more} more" if more > 0 else "")
    message += ". This is a bug in the tool, not in the call; retrying will not help."
    return ToolError(ErrorKind.EXECUTION_ERROR, model_text(message))


def _state_models(tool_id: str, declared: Any) -> tuple[type[BaseModel], ...]:
    models = () if declared is None else declared if isinstance(declared, tuple) else (declared,)
    for model in models:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(
                f"tool {tool_id!r}: state must be a pydantic model or a tuple of them, "
                f"got {model!r}"
            )
    return tuple(dict.fromkeys(models))


def _state_access(tool_id: str, access: Any) -> str:
    if access not in ("exclusive", "shared"):
        raise TypeError(
            f"tool {tool_id!r}: state_access must be 'exclusive' or 'shared', got {access!r}"
        )
    return str(access)


def erase(tool: Tool[Any, Any] | type[Tool[Any, Any]], origin: str = "host") -> ErasedTool:
    """Capture everything the dispatcher needs from a typed tool, once.

    Args:
        tool: A tool instance or class (classes are instantiated with no arguments).
        origin: Where the registration comes from, for error messages and listings.

    Raises:
        TypeError: The tool lacks an id or an ``Args`` model, implements neither
            ``run`` nor ``stream``, or declares state that is not a pydantic model.
    """
    instance = tool() if isinstance(tool, type) else tool
    cls = type(instance)
    tool_id = getattr(cls, "id", None)
    if not isinstance(tool_id, str) or not tool_id:
        raise TypeError(f"{cls.__qualname__} has no id")
    function = issubclass(cls, FunctionTool)
    args_model = None if function else getattr(cls, "args_model", None)
    if not function and not (isinstance(args_model, type) and issubclass(args_model, BaseModel)):
        raise TypeError(
            f"tool {tool_id!r}: declare the Args model as Tool[Args, Output] or args_model"
        )
    streaming = cls.is_streaming()
    invoke: Callable[[Any, Any], Any] | None = None
    open_stream: Callable[[Any, Any], AsyncIterator[Any]] | None = None
    is_coroutine = True
    if streaming:
        open_stream = instance.stream
    elif issubclass(cls, FunctionTool):
        invoke, is_coroutine = _invoke_function(cls)
    elif cls.run is not Tool.run:
        invoke, is_coroutine = _invoke_method(instance)
    else:
        raise TypeError(f"tool {tool_id!r} implements neither run() nor stream()")
    return ErasedTool(
        id=tool_id,
        namespace=cls.namespace,
        kind=Kind(cls.kind),
        description=cls.description,
        capabilities=cls.capabilities,
        invoke=invoke,
        open_stream=open_stream,
        is_coroutine=is_coroutine,
        finish=_finisher(cls.output_type, tool_id),
        args_model=args_model,
        args_of=cls if function else None,
        origin=origin,
        params_type=cls.params,
        state_types=_state_models(tool_id, cls.state),
        state_access=_state_access(tool_id, cls.state_access),
        requires=cls.requires,
        version=cls.version,
        conflicts=tuple(cls.conflicts),
        lifecycle=Lifecycle(cls.lifecycle),
        replacement=cls.replacement,
        emitted_notifications=tuple(cls.emitted_notifications),
        tool=instance,
        strict_arguments=strict_arguments_as(cls.capabilities, Kind(cls.kind)),
    )


class _Preview(reprlib.Repr):
    """A short, JSON-looking preview of a value, bounded in depth and length."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = 60
        self.maxother = 40

    def repr_str(self, x: str, level: int) -> str:
        shown = json.dumps(x[: self.maxstring], ensure_ascii=False)
        return shown if len(x) <= self.maxstring else shown[:-1] + '..."'

    def repr_NoneType(self, x: None, level: int) -> str:
        return "null"

    def repr_bool(self, x: bool, level: int) -> str:
        return "true" if x else "false"


_PREVIEW = _Preview()


def _preview(value: Any, limit: int = 80) -> str:
    """``value`` shown in at most ``limit`` characters; never raises (deep, huge or
    unprintable values get a placeholder)."""
    try:
        shown = _PREVIEW.repr(value)
    except Exception:
        return f"a {type(value).__name__}"
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _exception_text(exc: BaseException, limit: int = 200) -> str:
    text = exception_text(exc)
    if text is None:
        return "no details"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validation_problems(
    exc: ValidationError, to_client: Mapping[str, str] | None = None
) -> list[str]:
    """One phrase per invalid field of ``exc``, naming it as the model does.

    Args:
        exc: The pydantic error.
        to_client: Canonical → client parameter names, so errors use the model's names.
    """
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err.get("loc", ())]
        if loc and to_client:
            loc[0] = to_client.get(loc[0], loc[0])
        field = ".".join(loc) or "(arguments)"
        kind = err.get("type", "")
        msg = err.get("msg", "invalid")
        if kind == "missing":
            parts.append(f"`{field}` is required but missing")
        elif kind == "extra_forbidden":
            parts.append(f"`{field}` is not a parameter of this tool")
        else:
            parts.append(f"`{field}`: {msg} (got {_preview(err.get('input'))})")
    return parts


def invalid_arguments(tool_name: str, problems: list[str]) -> str:
    """The message of an ``invalid_params`` error listing ``problems``."""
    return model_text(f"Invalid arguments for {tool_name}: " + "; ".join(problems) + ".")


def format_validation_error(
    exc: ValidationError, tool_name: str, to_client: Mapping[str, str] | None = None
) -> str:
    """Describe invalid arguments field by field, in words a model can act on.

    Args:
        exc: The pydantic error.
        tool_name: The client-visible tool name.
        to_client: Canonical → client parameter names, so errors use the model's names.
    """
    return invalid_arguments(tool_name, validation_problems(exc, to_client))
