"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import CallHook, Resources, Session, ToolSetBuilder, hookimpl

from toolweave_lsp._hook import EditDiagnostics
from toolweave_lsp._servers import LanguageServers, LspParams
from toolweave_lsp._tools import (
    Diagnostics,
    DocumentSymbols,
    FindReferences,
    GoToDefinition,
    Hover,
)


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register the language-server tools."""
    builder.add(Diagnostics)
    builder.add(GoToDefinition)
    builder.add(FindReferences)
    builder.add(Hover)
    builder.add(DocumentSymbols)


@hookimpl
def provide_resources(resources: Resources, session: Session) -> None:
    """Give the session its own language servers (started on first use) and stop
    them when it closes."""
    servers = LanguageServers()
    resources.insert(servers)
    session.on_close(servers.close)


@hookimpl
def provide_call_hooks(session: Session) -> list[CallHook]:
    """Errors after edits, when the set has the ``diagnostics`` tool."""
    fqid = f"{Diagnostics.namespace}:{Diagnostics.id}"
    entry = next((e for e in session.toolset.entries if e.tool.fqid == fqid), None)
    if entry is None or not isinstance(entry.params, LspParams):
        return []
    return [EditDiagnostics(entry.params, entry.name)]
