"""The sources a command's session gains besides packs: plugin folders (``--plugins``,
``TOOLWEAVE_PLUGINS``, ``./tools/plugins``) and an MCP server file (``--mcp``,
``./.mcp_servers.json``, ``./mcp.json``)."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolweave.cli._common import err, escape, fail

if TYPE_CHECKING:
    from toolweave.center import Center
    from toolweave.local import PluginFolders
    from toolweave.runtime._session import Session

__all__ = [
    "MCP_FILES",
    "McpOpt",
    "NoMcpOpt",
    "NoPluginsOpt",
    "PluginsOpt",
    "mcp_file",
    "mcp_pool",
    "open_plugins",
    "plugin_folders",
    "watch_plugins",
]

ENV_PLUGINS = "TOOLWEAVE_PLUGINS"
"""Plugin folders, separated by ``os.pathsep`` (instead of ``./tools/plugins``)."""
DEFAULT_PLUGINS = Path("tools") / "plugins"
MCP_FILES = (".mcp_servers.json", "mcp.json")
"""The MCP server files a workspace may hold, in the order they are looked for."""

PluginsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--plugins",
        metavar="DIR",
        help="A plugin folder of .py tools (repeatable; default: $TOOLWEAVE_PLUGINS, else "
        "./tools/plugins in the workspace when it exists).",
        show_default=False,
        file_okay=False,
    ),
]
NoPluginsOpt = Annotated[
    bool, typer.Option("--no-plugins", help="Load no plugin folder, not even the default.")
]
McpOpt = Annotated[
    Path | None,
    typer.Option(
        "--mcp",
        metavar="FILE",
        help="An MCP server file whose servers' tools join the session (default: "
        ".mcp_servers.json, else mcp.json, in the workspace when present).",
        show_default=False,
        dir_okay=False,
    ),
]
NoMcpOpt = Annotated[
    bool, typer.Option("--no-mcp", help="Connect to no MCP server file, not even the default.")
]


def plugin_folders(
    given: list[Path] | None,
    off: bool,
    workspace: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Path]:
    """The plugin folders of a command: ``--plugins``, else ``$TOOLWEAVE_PLUGINS``, else
    ``tools/plugins`` under the workspace when it exists; none with ``--no-plugins``.

    Raises:
        CliError: A folder named by ``--plugins`` does not exist, or ``--plugins`` comes
            with ``--no-plugins``.
    """
    if off:
        if given:
            fail("--plugins and --no-plugins exclude each other", "pick one", 2)
        return []
    root = workspace or Path.cwd()
    if given:
        for folder in given:
            if not folder.is_dir():
                fail(f"no plugin folder {folder}", "name an existing folder with --plugins DIR", 2)
        return [folder.resolve() for folder in given]
    env = (os.environ if environ is None else environ).get(ENV_PLUGINS, "")
    if env.strip():
        folders = [Path(part) for part in env.split(os.pathsep) if part.strip()]
        for folder in folders:
            if not folder.is_dir():
                err.print(
                    f"[yellow]warning:[/] ${ENV_PLUGINS} names {escape(str(folder))}, "
                    "which is not a folder (yet)"
                )
        return [(root / folder).resolve() for folder in folders]
    default = root / DEFAULT_PLUGINS
    return [default.resolve()] if default.is_dir() else []


def mcp_file(given: Path | None, off: bool, workspace: Path | None = None) -> Path | None:
    """The MCP server file of a command: ``--mcp``, else ``.mcp_servers.json``, else
    ``mcp.json`` in the workspace when present; none with ``--no-mcp``.

    Raises:
        CliError: The file named by ``--mcp`` does not exist, or ``--mcp`` comes with
            ``--no-mcp``.
    """
    if off:
        if given is not None:
            fail("--mcp and --no-mcp exclude each other", "pick one", 2)
        return None
    if given is not None:
        if not given.is_file():
            fail(f"no MCP server file {given}", "name an existing file with --mcp FILE", 2)
        return given
    root = workspace or Path.cwd()
    for name in MCP_FILES:
        path = root / name
        if path.is_file():
            return path
    return None


def open_plugins(
    session: Session | None,
    folders: list[Path],
    center: Center | None = None,
    *,
    workspace: Path | None = None,
    announce: bool = True,
) -> PluginFolders | None:
    """Load the plugin folders (into ``session`` when given) and print their alerts on
    standard error (unless ``announce`` is false); ``None`` when there are no folders."""
    if not folders:
        return None
    from toolweave.local import PluginFolders

    plugins = PluginFolders(folders, workspace=workspace, center=center)
    if session is not None:
        plugins.attach(session)
    quiet = logging.getLogger("toolweave.local")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the alerts are printed below, once
    try:
        plugins.load()
    finally:
        quiet.setLevel(level)
    for alert in plugins.alerts if announce else ():
        err.print(f"[yellow]warning:[/] plugin file skipped: {escape(str(alert))}")
    return plugins


async def watch_plugins(plugins: PluginFolders | None) -> None:
    """Follow the plugin folders while a command serves; their alerts are logged on
    standard error (a missing ``watchfiles`` is reported once, and nothing is followed)."""
    if plugins is None:
        return
    logger = logging.getLogger("toolweave.local")
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        await plugins.watch()
    except ModuleNotFoundError as exc:
        err.print(f"[yellow]warning:[/] {escape(str(exc))}; plugin files are not followed")


@asynccontextmanager
async def mcp_pool(
    session: Session, path: Path | None, center: Center | None, *, watch: bool = False
) -> AsyncIterator[Any]:
    """An MCP pool of the server file ``path`` for ``session`` for the block (nothing
    when ``path`` is ``None``)."""
    if path is None:
        yield None
        return
    from toolweave.mcp import MCPPool

    async with MCPPool(session, config_path=path, center=center, watch=watch) as pool:
        yield pool
