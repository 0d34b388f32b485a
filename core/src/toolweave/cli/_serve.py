"""``toolweave serve``: the installed packs' tools as an MCP server (stdio or HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolweave.cli._common import (
    ConfigOpt,
    ExcludeOpt,
    PacksOpt,
    WorkspaceOpt,
    build_toolset,
    err,
    guarded,
    load_packs,
)
from toolweave.cli._registry import CenterOpt, CohortOpt, RoleOpt, attached

__all__ = ["register"]


@guarded
def serve(
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
            show_default=False,
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    name: Annotated[
        str, typer.Option("--name", help="Server name shown to clients.")
    ] = "toolweave",
    config: ConfigOpt = None,
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    center: CenterOpt = None,
    role: RoleOpt = None,
    cohort: CohortOpt = None,
) -> None:
    """Serve the tools over MCP until stopped (stdio by default).

    Over stdio nothing but the protocol is written to standard output; messages go to
    standard error. Stop it by closing its input (stdio) or with Ctrl-C (HTTP).

    With --center (or $TOOLWEAVE_CENTER) the served session is under the registry
    center as --role: a tool the operators disable leaves the listing within a second
    and clients get `tools/list_changed`; calls are checked and audited.

    **Examples**

        toolweave serve --packs fs,search              # for an MCP client that spawns it
        toolweave serve --http 127.0.0.1:8765 --config toolweave.toml
        toolweave serve --center .toolweave/center.db --role common_user
    """
    from toolweave.mcp import parse_http_address
    from toolweave.mcp import serve as serve_mcp

    if http is not None:
        parse_http_address(http)  # a bad address fails before anything starts
    toolset = build_toolset(load_packs(packs, exclude), config)
    session = toolset.session(workspace=workspace or Path.cwd())

    def ready(url: str) -> None:
        err.print(f"serving {len(toolset)} tools over MCP at [bold]{url}[/] (Ctrl-C stops)")

    with attached(session, center, role, cohort):
        if http is None:
            err.print(f"serving {len(toolset)} tools over MCP on stdio")
            serve_mcp(session, name=name)
        else:
            serve_mcp(session, http=http, on_ready=ready, name=name)


def register(app: typer.Typer) -> None:
    """Add ``serve`` to ``app``."""
    app.command("serve")(serve)
