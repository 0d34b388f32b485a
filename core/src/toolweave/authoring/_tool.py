"""The typed tool interface: ``Tool[Args, Output]``, its metadata and ``@tool``."""

from __future__ import annotations

import enum
import functools
import inspect
import re
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Generic,
    Literal,
    ParamSpec,
    TypeVar,
    cast,
    get_args,
    get_origin,
    overload,
)

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from toolweave.results import Progress

if TYPE_CHECKING:
    from toolweave.authoring._context import Context
    from toolweave.authoring._reminders import Reminder

__all__ = [
    "READ_ONLY_KINDS",
    "Capabilities",
    "FunctionTool",
    "Kind",
    "Lifecycle",
    "StateAccess",
    "Tool",
    "ToolOutput",
    "tool",
]


class Kind(enum.StrEnum):
    """What a tool does; drives ``{tool:<kind>}`` placeholders, read-only inference and filters."""

    READ = "read"
    EDIT = "edit"
    WRITE = "write"
    DELETE = "delete"
    MOVE = "move"
    LIST_DIR = "list_dir"
    SEARCH = "search"
    LSP = "lsp"
    EXECUTE = "execute"
    WEB_SEARCH = "web_search"
    WEB_FETCH = "web_fetch"
    BACKGROUND_TASK_ACTION = "background_task_action"
    WAIT_TASKS_ACTION = "wait_tasks_action"
    KILL_TASK_ACTION = "kill_task_action"
    TASK = "task"
    IMAGE_GEN = "image_gen"
    VIDEO_GEN = "video_gen"
    IMAGE_TO_VIDEO = "image_to_video"
    ASK_USER = "ask_user"
    PLAN = "plan"
    MEMORY_SEARCH = "memory_search"
    SKILL = "skill"
    MONITOR = "monitor"
    OTHER = "other"


READ_ONLY_KINDS: frozenset[Kind] = frozenset(
    {
        Kind.READ,
        Kind.LIST_DIR,
        Kind.SEARCH,
        Kind.LSP,
        Kind.WEB_SEARCH,
        Kind.WEB_FETCH,
        Kind.BACKGROUND_TASK_ACTION,
        Kind.WAIT_TASKS_ACTION,
        Kind.ASK_USER,
        Kind.PLAN,
        Kind.MEMORY_SEARCH,
        Kind.SKILL,
        Kind.MONITOR,
    }
)
"""Kinds that change neither the workspace nor the outside world."""


class Lifecycle(enum.StrEnum):
    """Where a behaviour version of a tool stands."""

    ACTIVE = "active"
    """Current; a configuration without a version gets the newest active one."""
    DEPRECATED = "deprecated"
    """Still usable when a configuration asks for it, with a warning naming the replacement."""
    REMOVED = "removed"
    """Kept only to explain itself: a configuration that asks for it is rejected."""


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a tool may do, as far as the dispatcher and filters are concerned.

    Attributes:
        read_only: ``True`` when the tool changes nothing; ``None`` derives it from the kind.
        scope: What the tool reaches: ``"workspace"`` (files under the session's
            workspace), ``"system"`` (processes, the rest of the machine),
            ``"network"`` or ``"none"``; external tools are ``"external"``. A
            declaration for hosts and reviewers (``entry.tool.capabilities.scope``):
            nothing enforces it, a tool confines itself (``Workspace.resolve``).
        concurrency_safe: Whether calls may run concurrently with other calls of a batch;
            ``None`` means "when read-only".
        blocking: For synchronous code only: ``True`` (the default) runs it in a worker
            thread so it cannot stall the event loop; declare ``False`` for quick, pure
            functions to run them inline.
        timeout: Default deadline of a call in seconds; ``None`` uses the session's default.
        strict_arguments: ``True`` validates arguments without lax coercion (``"5"`` is
            not an int, ``true`` not a number, ``1`` not a bool); ``False`` allows it;
            ``None`` (the default) is strict unless the tool is read-only.
    """

    read_only: bool | None = None
    scope: str = "workspace"
    concurrency_safe: bool | None = None
    blocking: bool = True
    timeout: float | None = None
    strict_arguments: bool | None = None


StateAccess = Literal["exclusive", "shared"]
"""How a tool's calls use its declared state models (see ``Tool.state_access``)."""


class ToolOutput(BaseModel):
    """Optional base for tool outputs: override :meth:`to_model` to control the model text.

    Its subclasses build their validator and serializer when first used (pydantic's
    ``defer_build``), not when their module is imported: a pack's outputs cost nothing
    until its tools run.
    """

    model_config = ConfigDict(defer_build=True)

    def to_model(self) -> str:
        """What the model reads for this output (default: compact JSON)."""
        return self.model_dump_json(exclude_none=True)


ArgsT = TypeVar("ArgsT", bound=BaseModel)
OutputT = TypeVar("OutputT")


class Tool(Generic[ArgsT, OutputT]):
    """A typed tool. Subclass it as ``Tool[MyArgs, MyOutput]`` and implement one method.

    Implement either :meth:`run` (one result) or :meth:`stream` (an async generator that
    yields :class:`~toolweave.Progress` items and then exactly one output). Both kinds
    can be called in blocking and in streaming mode.

    Class attributes:
        id: The tool id, unique within its namespace (``read_file``).
        namespace: Groups tools; the fully qualified id is ``namespace:id``.
        kind: What the tool does.
        description: What the model reads; a template that may name other tools by kind
            (``{tool:edit}``).
        capabilities: Read-only flag, scope, concurrency, blocking, default timeout.
        emitted_notifications: Names of the notifications the tool may emit.
        reminders: Tool-internal reminders (instances or classes of
            :class:`~toolweave.authoring._reminders.Reminder`), active while the tool is in the set.
        params: A pydantic model of the tool's configuration, or ``None``.
        state: The pydantic model (or a tuple of models) of the persisted runtime state
            the tool reads and writes through ``ctx.state``; ``None`` for none. Reading
            a model the tool does not declare is an error.
        state_access: ``"exclusive"`` (the default): calls of tools declaring the same
            model run one at a time, each holding the model's lock from before it starts
            until its state is saved. ``"shared"``: no lock; the tool promises to change
            the state only between two awaits (never read, await, then write back), so
            a long call never holds up the others. See :mod:`toolweave.state`.
        requires: A dependency expression over the configured set, or ``None``
            (see :func:`toolweave.compile_expression` for the syntax).
        conflicts: Ids (``edit_file`` or ``fs:edit_file``) of tools that must not be
            configured in the same set as this one.
        version: The behaviour version this class implements; register one class per
            version under the same id.
        lifecycle: Whether this version is active, deprecated or removed.
        replacement: For a deprecated or removed version: what to use instead (another
            version of this tool, or another tool's id).
        examples: Argument objects (as the model would send them) that the tool is
            called with by the conformance kit (:mod:`toolweave.testing`), in a scratch
            workspace; without any, the kit generates minimal arguments from the schema.
        args_model: The ``Args`` model (derived from the generic parameters).
        output_type: The ``Output`` type (derived from the generic parameters).
    """

    id: ClassVar[str]
    namespace: ClassVar[str] = "main"
    kind: ClassVar[Kind] = Kind.OTHER
    description: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    emitted_notifications: ClassVar[tuple[str, ...]] = ()
    reminders: ClassVar[tuple[Reminder | type[Reminder], ...]] = ()
    params: ClassVar[type[BaseModel] | None] = None
    state: ClassVar[type[BaseModel] | tuple[type[BaseModel], ...] | None] = None
    state_access: ClassVar[StateAccess] = "exclusive"
    requires: ClassVar[str | None] = None
    conflicts: ClassVar[tuple[str, ...]] = ()
    version: ClassVar[str] = "1"
    lifecycle: ClassVar[Lifecycle] = Lifecycle.ACTIVE
    replacement: ClassVar[str | None] = None
    examples: ClassVar[tuple[dict[str, Any], ...]] = ()
    args_model: ClassVar[type[BaseModel]]
    output_type: ClassVar[Any] = str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Only the class's own bases: an inherited __orig_bases__ (a subclass of
        # FunctionTool or of another tool) must not overwrite what the class sets.
        for base in cls.__dict__.get("__orig_bases__", ()):
            if get_origin(base) is Tool:
                args, output = get_args(base)
                if isinstance(args, type) and issubclass(args, BaseModel):
                    cls.args_model = args
                if not isinstance(output, TypeVar):
                    cls.output_type = output

    @property
    def fqid(self) -> str:
        """The fully qualified id, ``namespace:id``."""
        return f"{self.namespace}:{self.id}"

    def run(self, ctx: Context, args: ArgsT) -> OutputT | Awaitable[OutputT]:
        """Do the work and return the output (implement this or :meth:`stream`).

        Write it as ``async def`` for asynchronous work, or as a plain ``def`` for
        synchronous code, which runs in a worker thread unless
        ``Capabilities(blocking=False)`` says it is quick enough to run inline.
        """
        raise NotImplementedError

    def stream(self, ctx: Context, args: ArgsT) -> AsyncIterator[Progress | OutputT]:
        """Yield progress items, then exactly one output (implement this or :meth:`run`)."""
        raise NotImplementedError

    def should_list(self, ctx: Context) -> bool:
        """Whether the tool is shown to the model in this session (default: always).

        Asked once per session, when it first lists its tools (``ctx`` has no call
        id). A tool left out stays callable: this shapes the listing, not access.
        """
        return True

    @classmethod
    def is_streaming(cls) -> bool:
        """``True`` when the class implements :meth:`stream` rather than :meth:`run`."""
        return cls.stream is not Tool.stream


# --- @tool -------------------------------------------------------------------------

# Lines that only a docstring's sections have, by style, in the order they are tried:
# a Sphinx field (``:param x:``), a NumPy underline (``-----``), a Google header
# (``Args:`` alone on its line).
_STYLE_MARKS = (
    ("REST", re.compile(r"^[ \t]*:\w[^:\n]*:", re.M)),
    ("NUMPYDOC", re.compile(r"^[ \t]*-{3,}[ \t]*$", re.M)),
    ("GOOGLE", re.compile(r"^[ \t]*[A-Z]\w*(?: \w+)?:[ \t]*$", re.M)),
)


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-argument text.

    Google (``Args:``), Sphinx (``:param x:``) and NumPy (``Parameters`` underlined)
    docstrings are read by ``docstring_parser``. The description is the text before
    the first section: ``Returns``, ``Raises`` and examples are for developers, not
    models. A docstring without sections is the description as written; so is one the
    parser cannot read, which then describes no argument.
    """
    if not doc:
        return "", {}
    style = next((name for name, mark in _STYLE_MARKS if mark.search(doc)), None)
    if style is None:
        return inspect.cleandoc(doc), {}  # nothing to parse: most short docstrings
    # Imported here: tens of milliseconds that a program without such docstrings skips.
    import docstring_parser

    try:
        # One style, not AUTO: trying all four costs three times as much.
        parsed = docstring_parser.parse(doc, docstring_parser.DocstringStyle[style])
    except docstring_parser.ParseError:
        return inspect.cleandoc(doc), {}
    params = {
        param.arg_name.lstrip("*"): " ".join(param.description.split())
        for param in parsed.params
        if param.description
    }
    return (parsed.description or "").strip(), params


def _is_context_param(param: inspect.Parameter, hints: dict[str, Any]) -> bool:
    from toolweave.authoring._context import Context

    hint = hints.get(param.name)
    return hint is Context or param.name == "ctx"


Parameter = tuple[str, Any, Any, str | None]
"""A plain parameter of a function tool: name, annotation, default (pydantic's
``PydanticUndefined`` when required) and description."""

ArgsSpec = tuple[str, str, dict[str, Any], tuple[Parameter, ...] | None]
"""A function tool's ``Args``: model name, module, ``create_model`` fields, and the
plain parameters when none uses ``Field(...)`` (see :mod:`toolweave.catalog._arguments`)."""


class _LazyArgs:
    """The ``Args`` model of a function tool, created from its signature on first access.

    Creating a pydantic model costs far more than the rest of :func:`tool`, and calls
    and listings do without it (see :mod:`toolweave.catalog._arguments`): it is created when
    something asks for it, or for parameters only a model describes faithfully. The
    model replaces this descriptor on the tool class once created.
    """

    def __get__(self, obj: object, owner: type[FunctionTool[..., Any]]) -> type[BaseModel]:
        spec = owner.__dict__.get("args_spec")
        if spec is None:
            raise AttributeError(f"{owner.__qualname__} has no Args model")
        name, module, fields, _ = spec
        # Built whole (validator included): whoever asks validates or describes with it.
        model = create_model(
            name,
            __config__=ConfigDict(extra="forbid"),
            __doc__=None,
            __module__=module,
            **fields,
        )
        owner.args_model = model  # type: ignore[assignment]
        return model


P = ParamSpec("P")
R = TypeVar("R")


class FunctionTool(Tool[Any, Any], Generic[P, R]):
    """A tool made from a plain function by :func:`tool`; not subclassed by users.

    What ``@tool`` returns is an instance of a subclass made for the function: a tool
    to register (``builder.add(fn)``), whose class attributes (``id``, ``description``,
    ``args_model``...) read as on any tool, and the function itself when called,
    with the function's signature (``fn(2, 3)``, ``await fn(ctx, x=1)``).
    """

    fn: ClassVar[Callable[..., Any]]
    takes_context: ClassVar[bool] = False
    is_async: ClassVar[bool] = True
    args_spec: ClassVar[ArgsSpec | None] = None
    """How to create the ``Args`` model, and the plain parameters for a validator
    without one (see :mod:`toolweave.catalog._arguments`)."""
    args_model = _LazyArgs()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the decorated function directly: no validation, no session, no hooks
        (a ``ctx`` parameter takes whatever is passed)."""
        return cast("R", self.fn(*args, **kwargs))


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...
@overload
def tool(
    fn: None = None,
    *,
    id: str | None = None,
    namespace: str = "main",
    kind: Kind = Kind.OTHER,
    description: str | None = None,
    read_only: bool | None = None,
    scope: str = "workspace",
    blocking: bool = True,
    concurrency_safe: bool | None = None,
    timeout: float | None = None,
    params: type[BaseModel] | None = None,
    state: type[BaseModel] | tuple[type[BaseModel], ...] | None = None,
    state_access: StateAccess = "exclusive",
    requires: str | None = None,
    conflicts: tuple[str, ...] = (),
    version: str = "1",
    lifecycle: Lifecycle = Lifecycle.ACTIVE,
    replacement: str | None = None,
    emitted_notifications: tuple[str, ...] = (),
    strict_arguments: bool | None = None,
    examples: Iterable[dict[str, Any]] = (),
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    id: str | None = None,
    namespace: str = "main",
    kind: Kind = Kind.OTHER,
    description: str | None = None,
    read_only: bool | None = None,
    scope: str = "workspace",
    blocking: bool = True,
    concurrency_safe: bool | None = None,
    timeout: float | None = None,
    params: type[BaseModel] | None = None,
    state: type[BaseModel] | tuple[type[BaseModel], ...] | None = None,
    state_access: StateAccess = "exclusive",
    requires: str | None = None,
    conflicts: tuple[str, ...] = (),
    version: str = "1",
    lifecycle: Lifecycle = Lifecycle.ACTIVE,
    replacement: str | None = None,
    emitted_notifications: tuple[str, ...] = (),
    strict_arguments: bool | None = None,
    examples: Iterable[dict[str, Any]] = (),
) -> FunctionTool[Any, Any] | Callable[[Callable[..., Any]], FunctionTool[Any, Any]]:
    """Turn a typed function (sync or async) into a tool that is still the function.

    ``Args`` is derived from the signature, parameter descriptions from the docstring's
    parameter section (Google ``Args:``, Sphinx ``:param x:`` or NumPy ``Parameters``),
    the description from the docstring's text before its first section. A
    parameter named ``ctx`` (or annotated ``Context``) receives the call context and is
    not part of the schema. The model is built lazily, on first use.

    Example:
        >>> @tool(kind=Kind.OTHER, blocking=False)
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.
        ...
        ...     Args:
        ...         a: The first number.
        ...         b: The second number.
        ...     '''
        ...     return a + b
        >>> add.id, sorted(add.args_model.model_fields)
        ('add', ['a', 'b'])
        >>> add(2, 3)
        5

    ``read_only``, ``scope``, ``blocking``, ``concurrency_safe``, ``timeout`` and
    ``strict_arguments`` are as on :class:`Capabilities`; the other options set the
    class attributes of :class:`Tool` of the same names.

    Returns:
        A :class:`FunctionTool`: register it with ``ToolSetBuilder.add``; calling it
        calls the function, with the function's signature and result. ``@tool`` on
        something it already made returns it unchanged.

    Raises:
        TypeError: The function takes ``*args`` or ``**kwargs``, or options are given
            for something that is already a tool.
    """

    def wrap(func: Callable[..., Any]) -> FunctionTool[Any, Any]:
        if isinstance(func, FunctionTool):
            raise TypeError(f"@tool(...) {func.id}: already a tool; give all options to one @tool")
        summary, arg_docs = _parse_docstring(func.__doc__)
        try:
            hints = typing.get_type_hints(func, include_extras=True)
        except Exception:  # unresolved forward references: fall back to raw annotations
            hints = dict(getattr(func, "__annotations__", {}))
        sig = inspect.signature(func)
        fields: dict[str, Any] = {}
        plain: list[Parameter] | None = []
        takes_context = False
        for name, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"@tool {func.__name__}: *args/**kwargs are not supported")
            if _is_context_param(param, hints):
                takes_context = True
                continue
            annotation = hints.get(name, Any)
            default = ... if param.default is inspect.Parameter.empty else param.default
            doc = arg_docs.get(name)
            if isinstance(default, FieldInfo):
                fields[name] = (annotation, default)
                plain = None
            else:
                fields[name] = (annotation, Field(default, description=doc))
                if plain is not None:
                    value = PydanticUndefined if default is ... else default
                    plain.append((name, annotation, value, doc))
        tool_id = id or func.__name__
        model_name = "".join(p.capitalize() for p in tool_id.split("_")) + "Args"
        output_type = hints.get("return", Any)
        caps = Capabilities(
            read_only=read_only,
            scope=scope,
            concurrency_safe=concurrency_safe,
            blocking=blocking,
            timeout=timeout,
            strict_arguments=strict_arguments,
        )
        attrs: dict[str, Any] = {
            "id": tool_id,
            "namespace": namespace,
            "kind": kind,
            "description": description if description is not None else summary,
            "capabilities": caps,
            "params": params,
            "state": state,
            "state_access": state_access,
            "requires": requires,
            "conflicts": tuple(conflicts),
            "version": version,
            "lifecycle": Lifecycle(lifecycle),
            "replacement": replacement,
            "emitted_notifications": emitted_notifications,
            "examples": tuple(dict(example) for example in examples),
            "args_spec": (
                model_name,
                func.__module__,
                fields,
                None if plain is None else tuple(plain),
            ),
            "output_type": output_type,
            "fn": staticmethod(func),
            "takes_context": takes_context,
            "is_async": inspect.iscoroutinefunction(func),
            "__module__": func.__module__,
            "__doc__": func.__doc__,
        }
        made: FunctionTool[Any, Any] = type(model_name[:-4] + "Tool", (FunctionTool,), attrs)()
        # The instance reads as the function: name, docstring, signature, source line.
        functools.update_wrapper(made, func)
        return made

    if isinstance(fn, FunctionTool):
        return fn  # e.g. @register_tool over @tool: already made
    if fn is not None:
        return wrap(fn)
    return wrap
