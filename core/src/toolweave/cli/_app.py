"""The root typer app: name, help, and the options every command shares."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

__all__ = ["make_app"]

HELP = """One typed, extensible tool system for AI agents.

List the installed packs and their tools, render definitions for a provider, call a
tool on the current directory, check a configuration, serve tools over MCP, or watch
the demo session.
"""

EPILOG = """**Examples**

    toolweave demo                           # a scripted agent session, in seconds
    toolweave packs                          # what is installed, loaded, broken
    toolweave tools --format openai-strict   # definitions for a provider
    toolweave call read_file '{"path": "README.md"}'
    toolweave check toolweave.toml           # every problem of a configuration
    toolweave serve --http 127.0.0.1:8765    # the tools as an MCP server

Set TOOLWEAVE_DEBUG=1 to see tracebacks.
"""


def _version(value: bool) -> None:
    if value:
        from toolweave import __version__

        typer.echo(f"toolweave {__version__}")
        raise typer.Exit()


def make_app() -> typer.Typer:
    """A new root app without commands (see ``toolweave.cli.COMMAND_MODULES``)."""
    app = typer.Typer(
        name="toolweave",
        help=HELP,
        epilog=EPILOG,
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode="markdown",
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def root(
        verbose: Annotated[
            bool, typer.Option("--verbose", "-v", help="Log what toolweave and packs do.")
        ] = False,
        version: Annotated[
            bool,
            typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
        ] = False,
    ) -> None:
        """One typed, extensible tool system for AI agents."""
        logging.basicConfig(
            level=logging.INFO if verbose else logging.ERROR,
            format="%(levelname)s %(name)s: %(message)s",
        )

    return app
