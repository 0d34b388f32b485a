"""The builder: tools are registered here, then frozen into an immutable ToolSet."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, final

from toolweave.authoring._reminders import (
    Reminder,
    ToolReminder,
    register_reminder,
    register_tool_reminders,
)
from toolweave.authoring._tool import Tool
from toolweave.catalog._build import ExternalTools, RemoteEntries, plan_build, raise_for
from toolweave.catalog._catalog import Catalog
from toolweave.catalog._erasure import ErasedTool, erase
from toolweave.catalog._toolset import ToolSet
from toolweave.errors import ConfigIssue

if TYPE_CHECKING:
    from toolweave.catalog._config import ToolSetConfig
    from toolweave.plugins import PackManager

__all__ = ["ToolSetBuilder"]

ToolLike = Tool[Any, Any] | type[Tool[Any, Any]] | ErasedTool


@final
class ToolSetBuilder:
    """Collects tools (from packs and from the host) and builds a :class:`ToolSet`.

    Packs receive the builder in their ``register_tools`` hook and call :meth:`add`.

    Example:
        >>> from toolweave import tool
        >>> @tool(blocking=False)
        ... def echo(text: str) -> str:
        ...     '''Repeat the text.'''
        ...     return text
        >>> builder = ToolSetBuilder()
        >>> _ = builder.add(echo)
        >>> builder.build().names
        ['echo']
    """

    def __init__(self, *, packs: PackManager | None = None) -> None:
        self.registry = Catalog()
        self.packs = packs
        self.origin = "host"
        """Origin recorded for registrations; the pack loader sets it per pack."""
        self.reminders: list[Any] = []
        """Registered reminders; a build keeps those whose ``requires`` expression holds."""
        self._reminder_origins: dict[str, str] = {}
        """Reminder id → origin, for the cross-tool reminders added with :meth:`add_reminder`."""
        self._tool_origins: dict[str, dict[str, None]] = {}
        """Origin → the fully qualified ids it registered, in order (no registry scan)."""

    def add(self, tool: ToolLike, *, origin: str | None = None) -> ErasedTool:
        """Register one tool (an instance, a class, or an already erased handle).

        Raises:
            DuplicateToolError: The id (and version) is already registered; names both origins.
            TypeError: The object is not a usable tool.
        """
        erased = tool if isinstance(tool, ErasedTool) else erase(tool, origin or self.origin)
        self.registry.register(erased)
        self._tool_origins.setdefault(erased.origin, {})[erased.fqid] = None
        if erased.tool is not None and getattr(erased.tool, "reminders", None):
            register_tool_reminders(self.reminders, erased)
        return erased

    def registered_by(self, origin: str) -> list[str]:
        """The fully qualified ids of the tools ``origin`` registered, in order; without
        scanning the registry."""
        return list(self._tool_origins.get(origin, ()))

    def add_reminder(self, reminder: Reminder | type[Reminder]) -> Reminder:
        """Register a cross-tool reminder (an instance, or a class made with no arguments).

        Packs call it from their ``register_reminders`` hook. A build keeps the
        reminder when its ``requires`` expression holds for the configured set.

        Raises:
            UsageError: Another reminder has the same id.
            TypeError: The object is not a :class:`~toolweave.authoring._reminders.Reminder`.
        """
        rem = register_reminder(self.reminders, reminder)
        self._reminder_origins[rem.id] = self.origin
        return rem

    def add_all(self, tools: Iterable[ToolLike], *, origin: str | None = None) -> None:
        """Register several tools."""
        for t in tools:
            self.add(t, origin=origin)

    def remove_origin(self, origin: str) -> list[str]:
        """Remove everything ``origin`` registered (the pack loader does this for a pack
        that fails in a hook): its tools, the reminders those tools declare (unless a
        remaining tool declares them too) and its cross-tool reminders.

        Returns:
            The fully qualified ids of the tools removed.
        """
        removed = self.registry.remove_origin(origin)
        self._tool_origins.pop(origin, None)
        present = self.registry.__contains__
        kept: list[Any] = []
        for rem in self.reminders:
            if isinstance(rem, ToolReminder):
                if not rem.keep_tools(present):
                    continue
            elif self._reminder_origins.get(rem.id) == origin:
                del self._reminder_origins[rem.id]
                continue
            kept.append(rem)
        self.reminders[:] = kept
        return removed

    def build(
        self,
        config: ToolSetConfig | Mapping[str, Any] | None = None,
        *,
        external: ExternalTools = (),
        remote: RemoteEntries = (),
    ) -> ToolSet:
        """Check a configuration against the registered tools and freeze it into a set.

        Without a configuration (or with ``tools`` unset) every registered tool is
        included, in registration order, with its default params; each appears under
        its bare id, or ``namespace__id`` where the bare id exists in several namespaces.

        Args:
            config: A :class:`~toolweave.ToolSetConfig` (or the same as a dict).
            external: External (MCP) tool snapshots: handles, or client name → handle.
                They come after the built-in tools, sorted by client name; one whose id
                or name is taken by a configured tool is skipped.
            remote: A remote list of entries, lowest priority; entries whose id or name
                is taken by the configuration or an external tool are skipped.

        Returns:
            The immutable set; ``toolset.report`` lists every entry left out and why.

        Raises:
            ConfigError: Every problem found (unknown ids, bad params, clashing names,
                unmet dependencies, broken templates, ...), one per line.

        Warns:
            DeprecatedVersionWarning: For each deprecated version chosen, naming its
                replacement.
        """
        plan = plan_build(
            self.registry, config, external=external, remote=remote, reminders=self.reminders
        )
        raise_for(plan)
        for warning in plan.deprecated:
            warnings.warn(warning, stacklevel=2)
        return ToolSet(
            plan.entries,
            session_setup=self.packs.setup_session if self.packs is not None else None,
            reminders=plan.reminders,
            config=plan.config,
            report=plan.report,
            versions=plan.versions,
        )

    def validate(
        self,
        config: ToolSetConfig | Mapping[str, Any] | None = None,
        *,
        external: ExternalTools = (),
        remote: RemoteEntries = (),
    ) -> list[ConfigIssue]:
        """Every problem :meth:`build` would raise for these arguments (empty: it builds).

        Deprecated versions are reported as warnings, as by :meth:`build`.
        """
        plan = plan_build(
            self.registry, config, external=external, remote=remote, reminders=self.reminders
        )
        for warning in plan.deprecated:
            warnings.warn(warning, stacklevel=2)
        return plan.issues
