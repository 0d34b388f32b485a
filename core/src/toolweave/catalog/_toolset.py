"""The immutable tool set: configured entries, looked up by client-visible name."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, final

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from toolweave.authoring._tool import Kind, Tool
from toolweave.catalog._config import ToolSetConfig
from toolweave.catalog._erasure import (
    ErasedTool,
    invalid_arguments,
    read_only_as,
    unreadable_arguments,
    validation_problems,
)
from toolweave.catalog._merge import BuildReport, SkippedEntry
from toolweave.errors import ErrorKind, ToolError, UnsupportedSchemaError, UsageError

if TYPE_CHECKING:
    from toolweave.catalog._expr import SetView
    from toolweave.catalog._templates import TemplateRenderer
    from toolweave.resources import Resources
    from toolweave.runtime._session import Session

__all__ = ["ToolDefinition", "ToolEntry", "ToolSet", "set_session_factory"]

_session_factory: Callable[..., Session]


def set_session_factory(factory: Callable[..., Session]) -> None:
    """Make :meth:`ToolSet.session` create sessions with ``factory``.

    The runtime layer (above this one) installs :class:`~toolweave.Session` when it is
    imported, which ``import toolweave`` always does; the catalogue never imports it.
    """
    global _session_factory
    _session_factory = factory


_KIND_VALUES = {kind: kind.value for kind in Kind}
_NO_SCHEMA: Mapping[str, Any] = MappingProxyType({})
"""The schema of a definition whose entry has not been listed yet (never handed out)."""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """What the model is told about one tool, before any provider's format.

    Attributes:
        name: The client-visible name.
        description: The rendered description.
        input_schema: The JSON Schema of the arguments, with client parameter names
            (read-only in the definitions of a set's entries: parts of it are shared
            with other tools and listings).
        fqid: The fully qualified id of the tool behind the name.
        kind: The tool's kind (value of :class:`~toolweave.Kind`).
        read_only: Whether the tool changes nothing.
        source: ``"local"`` or where an external tool came from (``"mcp:<server>"``).
        scope: What the tool reaches (:attr:`Capabilities.scope
            <toolweave.Capabilities.scope>`: ``"workspace"``, ``"network"``, ...).
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    fqid: str
    kind: str
    read_only: bool
    source: str = "local"
    scope: str = "workspace"

    def to_dict(self) -> dict[str, Any]:
        """The neutral definition as JSON-able data."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


_set_schema: Callable[[ToolDefinition, Mapping[str, Any]], None] = ToolDefinition.__dict__[
    "input_schema"
].__set__
"""Sets the schema of an entry's definition once (the dataclass is frozen to its users)."""


def _rename_schema(schema: Mapping[str, Any], to_client: Mapping[str, str]) -> dict[str, Any]:
    out = dict(schema)
    props = schema.get("properties")
    if isinstance(props, dict):
        renamed: dict[str, Any] = {}
        for key, prop in props.items():
            client = to_client.get(key)
            if client is None:
                renamed[key] = prop
            elif isinstance(prop, dict) and "title" in prop:
                # pydantic titles repeat the canonical name; the model sees only the client's.
                renamed[client] = {k: v for k, v in prop.items() if k != "title"}
            else:
                renamed[client] = prop
        out["properties"] = renamed
    required = schema.get("required")
    if isinstance(required, list):
        out["required"] = [to_client.get(k, k) for k in required]
    return out


@final
class ToolEntry:
    """One configured tool of a set: a client-visible name bound to an erased handle.

    Attributes:
        name: The client-visible name.
        tool: The erased handle that runs.
        description: The description after template rendering.
        to_client: Canonical → client parameter names (``None`` when not renamed).
        to_canonical: Client → canonical parameter names (``None`` when not renamed).
        params: The effective params (defaults merged with the configuration), if any.
        timeout: The call deadline in seconds, or ``None`` for the session's default.
        kind: The effective kind (the tool's, unless the configuration overrides it).
        read_only: Whether the tool changes nothing (declared by the tool, else derived
            from the effective kind).
    """

    __slots__ = (
        "_decides_listing",
        "_definition",
        "_draft",
        "description",
        "kind",
        "name",
        "params",
        "parse",
        "read_only",
        "timeout",
        "to_canonical",
        "to_client",
        "tool",
    )

    def __init__(
        self,
        name: str,
        tool: ErasedTool,
        *,
        description: str | None = None,
        to_client: Mapping[str, str] | None = None,
        params: BaseModel | None = None,
        timeout: float | None = None,
        kind: Kind | None = None,
    ) -> None:
        self.name = name
        self.tool = tool
        self.kind = tool.kind if kind is None else Kind(kind)
        self.read_only = read_only_as(tool.capabilities, self.kind)
        self.description = tool.description if description is None else description
        self.to_client = dict(to_client) if to_client else None
        self.to_canonical = {v: k for k, v in to_client.items()} if to_client else None
        self.params = params
        self.timeout = timeout if timeout is not None else tool.capabilities.timeout
        # Whether the tool decides per session if it is listed (a class tool that
        # overrides Tool.should_list): found now, while the tool is at hand, so the
        # first listing of a large set does not visit every tool again.
        instance = tool.tool
        self._decides_listing = (
            instance is not None and type(instance).should_list is not Tool.should_list
        )
        self._definition: ToolDefinition | None = None
        # All of the definition but its schema, which is added now if the tool has its
        # listed schema already (see ErasedTool.listed_schema), else on first listing.
        self._draft = ToolDefinition(
            name,
            self.description,
            _NO_SCHEMA,
            tool.fqid,
            _KIND_VALUES[self.kind],
            self.read_only,
            tool.source,
            tool.capabilities.scope,
        )
        listed = tool.listed_schema_if_made
        if listed is not None:
            self._complete(listed)
        # The hot path calls entry.parse(raw); without renames it is the tool's own parser.
        self.parse = tool.parse if self.to_canonical is None else self._parse_renamed

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] != "_" and hasattr(self, "parse"):
            raise AttributeError(f"ToolEntry is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ToolEntry is immutable: cannot delete {name!r}")

    def __repr__(self) -> str:
        return f"<ToolEntry {self.name!r} → {self.tool.fqid}>"

    def _parse_renamed(self, raw: Any) -> Any:
        """Parse arguments that use the client's parameter names.

        A renamed parameter's canonical name is not a parameter for the model (``path``
        renamed to ``file_path`` accepts only ``file_path``). Failures are typed as in
        :meth:`ErasedTool.parse`; arguments that are not a JSON object go to the tool's
        own parser, so they read exactly as for a tool without renames.
        """
        try:
            data = raw
            if isinstance(raw, (str, bytes, bytearray)):
                try:
                    data = from_json(raw)
                except ValueError:
                    data = None
                if type(data) is not dict:
                    return self.tool.parse(raw)  # reports the JSON error or the wrong type
            if isinstance(data, Mapping):
                data = self._to_canonical(data)
            return self.tool.parse(data)
        except (ValidationError, ToolError):
            raise
        except Exception as exc:
            raise unreadable_arguments(exc) from exc

    def _to_canonical(self, data: Mapping[Any, Any]) -> dict[Any, Any]:
        to_canonical = self.to_canonical
        to_client = self.to_client
        assert to_canonical is not None
        assert to_client is not None
        out: dict[Any, Any] = {}
        hidden: list[str] = []
        for key, value in data.items():
            canonical = to_canonical.get(key)
            if canonical is None:
                if key in to_client:
                    hidden.append(key)
                    continue
                canonical = key
            out[canonical] = value
        if not hidden:
            return out
        problems = [
            f"`{key}` is not a parameter of this tool (it is called `{to_client[key]}` here)"
            for key in hidden
        ]
        try:
            self.tool.parse(out)
        except ValidationError as exc:
            problems += validation_problems(exc, to_client)
        except ToolError:
            pass
        raise ToolError(ErrorKind.INVALID_PARAMS, invalid_arguments(self.name, problems))

    @property
    def input_schema(self) -> Mapping[str, Any]:
        """The argument schema with client parameter names."""
        return self.definition.input_schema

    @property
    def definition(self) -> ToolDefinition:
        """The neutral definition (its schema is added on first access)."""
        definition = self._definition
        if definition is None:
            definition = self._complete(self.tool.listed_schema)
        return definition

    def _complete(self, schema: Mapping[str, Any]) -> ToolDefinition:
        """The definition, with ``schema`` (the tool's listed schema), cached."""
        if self.to_client:
            from toolweave.formats._frozen import freeze

            schema = freeze(_rename_schema(schema, self.to_client))
        definition = self._draft
        _set_schema(definition, schema)
        _set_definition(self, definition)
        return definition


_set_definition: Callable[[ToolEntry, ToolDefinition], None] = ToolEntry.__dict__[
    "_definition"
].__set__
"""Caches an entry's completed definition (past its immutability guard, in one call)."""


@final
class ToolSet:
    """An immutable, validated set of configured tools.

    Built by :class:`~toolweave.ToolSetBuilder`; shared by any number of sessions.
    Definitions are rendered once per format and cached, so repeated listings are
    byte-identical and cost a dictionary lookup.

    Attributes:
        entries: The configured tools in listing order (built-in tools in configured
            order, then external tools given at build time, sorted by client name).
        config: The configuration the set was built from (set-level options included).
        report: What the build left out and why (and the tools listings leave out
            because their schema cannot be made, added when first listed).
        options: The set-level options as a mapping (``mode``, ``reminders``, ...).
    """

    __slots__ = (
        "__weakref__",
        "_by_name",
        "_deciders",
        "_encoded",
        "_rendered",
        "_renderer",
        "_view",
        "config",
        "entries",
        "options",
        "reminders",
        "report",
        "session_setup",
        "versions",
    )

    def __init__(
        self,
        entries: Sequence[ToolEntry],
        *,
        session_setup: Callable[[Session], None] | None = None,
        reminders: Sequence[Any] = (),
        options: Mapping[str, Any] | None = None,
        config: ToolSetConfig | None = None,
        report: BuildReport | None = None,
        renderer: TemplateRenderer | None = None,
        versions: Mapping[str, Mapping[str, ErasedTool]] | None = None,
    ) -> None:
        init = object.__setattr__
        init(self, "entries", tuple(entries))
        self._by_name: dict[str, ToolEntry] = {e.name: e for e in self.entries}
        self._deciders = tuple(e for e in self.entries if e._decides_listing)
        """The entries whose tool decides per session whether it is listed (a class tool
        that overrides :meth:`~toolweave.Tool.should_list`)."""
        init(self, "session_setup", session_setup)
        init(self, "reminders", tuple(reminders))
        init(self, "config", config if config is not None else ToolSetConfig())
        settings = self.config.model_dump(exclude={"tools"})
        init(self, "options", MappingProxyType({**settings, **(options or {})}))
        init(self, "report", report if report is not None else BuildReport())
        self._renderer = renderer
        self._view: SetView | None = None
        self._rendered: dict[str, list[dict[str, Any]]] = {}
        self._encoded: dict[str, bytes] = {}
        init(self, "versions", MappingProxyType(dict(versions or {})))

    entries: tuple[ToolEntry, ...]
    session_setup: Callable[[Session], None] | None
    """Called with every new session of the set (a pack manager's
    :meth:`~toolweave.PackManager.setup_session`: resources and call hooks)."""
    reminders: tuple[Any, ...]
    config: ToolSetConfig
    options: Mapping[str, Any]
    report: BuildReport
    versions: Mapping[str, Mapping[str, ErasedTool]]
    """Fully qualified id → every usable behaviour version (version → handle), for the
    tools that have more than one; the entry runs the configured one, and a registry
    center may route a session's calls to another (see :meth:`version_entry`)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name[0] != "_":
            raise AttributeError(f"ToolSet is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ToolSet is immutable: cannot delete {name!r}")

    def get(self, name: str) -> ToolEntry | None:
        """The entry with client-visible ``name``, or ``None``."""
        return self._by_name.get(name)

    def __getitem__(self, name: str) -> ToolEntry:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[ToolEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def names(self) -> list[str]:
        """Client-visible names in listing order."""
        return [e.name for e in self.entries]

    @property
    def view(self) -> SetView:
        """The configured tools as dependency expressions see them (built once)."""
        if self._view is None:
            from toolweave.catalog._expr import SetView

            self._view = SetView.from_entries(self.entries)
        return self._view

    def render_template(self, text: str) -> str:
        """Render ``{tool:<kind>}`` and ``{name:<id>}`` placeholders against this set.

        Raises:
            ConfigError: A placeholder is unknown or names no configured tool
                (``template`` issues).
        """
        return self._template_renderer().render_strict(text)

    def _template_renderer(self) -> TemplateRenderer:
        if self._renderer is None:
            from toolweave.catalog._templates import TemplateRenderer

            self._renderer = TemplateRenderer.from_tools(
                (e.tool.fqid, e.kind.value, e.name) for e in self.entries
            )
        return self._renderer

    def external_entry(
        self,
        tool: ErasedTool,
        name: str | None = None,
        *,
        prefix: str | None = None,
        templates: bool = False,
    ) -> ToolEntry:
        """The entry of an external tool joining a session of this set.

        The client-visible name is one prefix followed by ``name`` (default: the tool's
        id): ``prefix`` when given, else the set's ``external_prefix`` (see
        :meth:`Session.register_external <toolweave.Session.register_external>`). The
        deadline is the tool's own, else the set's ``external_timeout``. With
        ``templates``, the description's placeholders are rendered against this set
        (the host's own tools: a remote server's text is left as it is).

        Raises:
            UsageError: The set is in ``read_only`` mode and the tool is not read-only,
                or (``templates``) a placeholder cannot be rendered.
        """
        config = self.config
        if prefix is None:
            prefix = config.external_prefix or ""
        client = prefix + (name or tool.id)
        if config.mode == "read_only" and not tool.read_only:
            raise UsageError(
                f"external tool {client!r} is not read-only and this set is in read_only mode"
            )
        description = None
        if templates:
            from toolweave.catalog._templates import Parameters

            description, problems = self._template_renderer().render(
                tool.description, Parameters(tool.argument_names)
            )
            if problems:
                raise UsageError(
                    f"the description of {client!r} has placeholders that cannot be "
                    "rendered: " + "; ".join(f"{p.placeholder}: {p.message}" for p in problems)
                )
        timeout = tool.capabilities.timeout
        return ToolEntry(
            client,
            tool,
            description=description,
            timeout=timeout if timeout else config.external_timeout,
        )

    def version_entry(self, entry: ToolEntry, version: str) -> ToolEntry | None:
        """``entry`` running behaviour ``version`` of its tool instead: same client name,
        parameter names, params and deadline; the version's own description (its
        placeholders rendered against this set) and schema. ``None`` when the set does
        not hold that version of the tool."""
        if entry.tool.version == version:
            return entry
        tool = self.versions.get(entry.tool.fqid, {}).get(version)
        if tool is None:
            return None
        from toolweave.catalog._templates import Parameters

        try:
            description = self._template_renderer().render_strict(
                tool.description, Parameters(tool.argument_names, entry.to_client)
            )
        except Exception:
            description = tool.description
        params = entry.params
        if (
            params is not None
            and tool.params_type is not None
            and not isinstance(params, tool.params_type)
        ):
            try:
                params = tool.params_type.model_validate(params.model_dump())
            except ValidationError:
                return None
        return ToolEntry(
            entry.name,
            tool,
            description=description,
            to_client=entry.to_client,
            params=params,
            timeout=entry.timeout,
            kind=entry.kind,
        )

    def definitions(self, format: str = "neutral") -> list[dict[str, Any]]:
        """Definitions of every tool in ``format`` (``neutral``, ``openai``, ``anthropic``,
        ``mcp``, ...), rendered once and cached.

        Each call returns a new list; the definitions in it are shared by every
        session and read-only (editing one raises ``TypeError``; edit a
        ``copy.deepcopy``).
        """
        cached = self._rendered.get(format)
        if cached is None:
            from toolweave.formats import render  # formats load on the first listing

            cached = render(self.listed(self.entries), format)
            self._rendered[format] = cached
        return list(cached)

    def listed(self, entries: Sequence[ToolEntry]) -> list[ToolDefinition]:
        """The definitions of ``entries`` for a listing, in order.

        An entry's schema is made on its first listing (and its definition cached). A
        tool whose schema cannot be made (an argument type pydantic cannot describe) is
        left out, so one broken tool never takes the listing down: it is added to
        :attr:`report` (reason ``schema``) when it is one of this set's, and a warning
        names it, where it came from and why (see :class:`~toolweave.catalog._erasure.
        ErasedTool`); calling it answers ``unavailable``.
        """
        try:
            # An entry's definition is made at most once (_definition caches it).
            return [e._definition or e.definition for e in entries]
        except UnsupportedSchemaError:
            pass
        out: list[ToolDefinition] = []
        for entry in entries:
            try:
                out.append(entry._definition or entry.definition)
            except UnsupportedSchemaError as exc:
                self._unlisted(entry, exc)
        return out

    def _unlisted(self, entry: ToolEntry, exc: UnsupportedSchemaError) -> None:
        """Report an entry of this set that listings leave out (once)."""
        if entry.name not in self._by_name:
            return  # a session's external tool: the warning says it
        if any(s.name == entry.name and s.reason == "schema" for s in self.report.skipped):
            return
        skipped = SkippedEntry(
            "baseline",
            entry.name,
            entry.tool.fqid,
            "schema",
            f"left out of the listing, its calls answer unavailable: {exc.reason} "
            f"(registered by {entry.tool.origin})",
        )
        object.__setattr__(self, "report", BuildReport((*self.report.skipped, skipped)))

    def definitions_json(self, format: str = "openai") -> bytes:
        """:meth:`definitions` in ``format`` serialised for a request body: compact
        JSON, UTF-8 (see :func:`toolweave.formats.encode`), encoded once per format and
        cached, so sending the tools with every request costs nothing more.

        Raises:
            UsageError: The format is unknown.
        """
        cached = self._encoded.get(format)
        if cached is None:
            from toolweave.formats import encode

            cached = self._encoded[format] = encode(self.definitions(format))
        return cached

    def session(
        self,
        *,
        session_id: str | None = None,
        resources: Resources | None = None,
        **options: Any,
    ) -> Session:
        """A new :class:`~toolweave.Session` over this set (see its arguments)."""
        return _session_factory(self, session_id=session_id, resources=resources, **options)
