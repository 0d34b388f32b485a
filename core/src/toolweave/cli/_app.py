"""The root typer app: name, help, and the options every command shares."""

from __future__ import annotations

import logging
from typing import Annotated, Any

import typer
from typer.core import TyperGroup, TyperOption

__all__ = ["make_app"]

HELP = """One typed, extensible tool system for AI agents.

List the installed packs and their tools, render definitions for a provider, call a
tool on the current directory, check a configuration, serve tools over MCP, or watch
the demo session.
"""

EPILOG = """**Examples**

    toolweave demo                          # a scripted agent session
    toolweave packs                         # installed, loaded, broken
    toolweave tools --format openai-strict  # definitions for a provider
    toolweave call read_file '{"path": "README.md"}'
    toolweave check                         # every problem of the config
    toolweave serve --http 127.0.0.1:8765   # the tools as an MCP server

Exit codes: 0 ok, 1 failed (a failed call, problems found), 2 a usage error (an
unknown option, tool or file; arguments that are not JSON), 3 `call` ran a command
that exited non-zero, 130 Ctrl-C. Environment: TOOLWEAVE_CONFIG, TOOLWEAVE_SESSION,
TOOLWEAVE_PLUGINS, TOOLWEAVE_CENTER; TOOLWEAVE_DEBUG=1 shows tracebacks. Durations
of the command line are in seconds unless an option's name ends in -ms. Reference:
docs/cli.md.
"""


def _version(value: bool) -> None:
    if value:
        from toolweave import __version__

        typer.echo(f"toolweave {__version__}")
        raise typer.Exit()


class _Group(TyperGroup):
    """The root command group: flags show no value placeholder in help (typer would
    print ``<bool>`` beside ``--json``, which takes no value)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain_flags(self)


def _plain_flags(command: Any) -> None:
    """Clear the help placeholder of every flag of ``command`` and its subcommands."""
    for param in command.params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    help_option = command.get_help_option  # made when help is asked for: wrapped

    def get_help_option(ctx: Any) -> Any:
        option = help_option(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        _plain_flags(sub)


def make_app() -> typer.Typer:
    """A new root app without commands (see ``toolweave.cli.COMMAND_MODULES``)."""
    app = typer.Typer(
        cls=_Group,
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
