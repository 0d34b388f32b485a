"""What every command shares: options, consoles, error lines, loading packs and configs."""

from __future__ import annotations

import errno
import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console

if TYPE_CHECKING:
    from toolweave.catalog._config import ToolSetConfig
    from toolweave.catalog._toolset import ToolSet
    from toolweave.plugins import PackManager

__all__ = [
    "CliError",
    "ConfigOpt",
    "ExcludeOpt",
    "JsonOpt",
    "PacksOpt",
    "SessionOpt",
    "WorkspaceOpt",
    "build_toolset",
    "err",
    "escape",
    "guarded",
    "load_config",
    "load_packs",
    "out",
    "print_json",
    "session_id",
    "unknown_tool",
]

P = ParamSpec("P")
R = TypeVar("R")

out = Console(highlight=False, soft_wrap=True)
"""Standard output: results, listings, JSON."""
err = Console(stderr=True, highlight=False, soft_wrap=True)
"""Standard error: progress, errors and hints."""

DEBUG_ENV = "TOOLWEAVE_DEBUG"
"""Set to ``1`` to see tracebacks instead of one-line errors."""

PacksOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--packs",
        "-p",
        metavar="PACK,...",
        help="Load only these packs (comma-separated or repeated; default: every installed pack).",
        show_default=False,
    ),
]
ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        "-x",
        metavar="PACK,...",
        help="Never load these packs (comma-separated or repeated).",
        show_default=False,
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="A tool-set configuration (.toml or .json) to build the set from.",
        show_default=False,
        dir_okay=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        help="Workspace root (default: the current directory).",
        exists=True,
        file_okay=False,
        show_default=False,
    ),
]

SESSION_ENV = "TOOLWEAVE_SESSION"
"""The session id of ``call`` and ``serve`` when ``--session-id`` is not given."""
DEFAULT_SESSION = "cli"
"""The session id of ``call`` and ``serve`` by default: every command in a workspace
shares one session (its state and background tasks), as a person at a terminal expects."""
SessionOpt = Annotated[
    str,
    typer.Option(
        "--session-id",
        metavar="ID",
        envvar=SESSION_ENV,
        help="The session whose state (todo list, plan mode, background tasks) the call "
        "reads and changes; calls with one id in one workspace share it. Letters, digits "
        "and . _ : - only.",
    ),
]


def session_id(value: str) -> str:
    """``value`` as a session id.

    Raises:
        CliError: It is empty or holds other characters than letters, digits and ``._:-``.
    """
    import re

    text = value.strip()
    if not re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", text):
        fail(
            f"invalid session id {value!r}",
            "use 1 to 128 letters, digits and . _ : - (e.g. --session-id build-42)",
            2,
        )
    return text


class CliError(Exception):
    """A failure to report as one line (plus a hint) and an exit code."""

    def __init__(self, message: str, hint: str = "", code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code


def fail(message: str, hint: str = "", code: int = 1) -> NoReturn:
    """Stop the command with one error line, an optional hint and an exit code."""
    raise CliError(message, hint, code)


def unknown_tool(name: str, known: Sequence[str]) -> NoReturn:
    """Stop with exit 2: no tool ``name``; the closest of ``known`` are suggested (as
    ``toolweave check`` does for a configuration) and the hint lists a few."""
    from toolweave.catalog._config import did_you_mean

    shown = ", ".join(known[:15]) + (", ..." if len(known) > 15 else "")
    fail(
        f"no tool named {name!r}{did_you_mean(name, known) or '; none is close'}",
        f"available: {shown or 'none'} (see `toolweave tools --table`)",
        2,
    )


def _report(exc: CliError) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(exc.message)}")
    if exc.hint:
        err.print(f"[dim]hint:[/] {escape(exc.hint)}")
    raise typer.Exit(exc.code)


def escape(text: str) -> str:
    """``text`` with rich markup escaped, to print as it is."""
    from rich.markup import escape as escape_markup

    return escape_markup(text)


def _translate(exc: BaseException, command: str = "") -> CliError:
    """The one-line form of an exception raised below ``command``."""
    from toolweave.errors import (
        CenterError,
        ConfigError,
        DuplicateToolError,
        MissingResourceError,
        PackLoadError,
        UsageError,
    )

    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, ConfigError):
        lines = "\n".join(str(issue) for issue in exc.issues)
        return CliError(
            lines or "the configuration has problems",
            "fix these, then check again with `toolweave check FILE`",
        )
    if isinstance(exc, PackLoadError):
        return CliError(str(exc), "leave the pack out with --exclude NAME, or reinstall it")
    if isinstance(exc, DuplicateToolError):
        return CliError(str(exc), "two packs define one tool: leave one out with --exclude NAME")
    if isinstance(exc, MissingResourceError):
        return CliError(str(exc), "a pack's tool needs a resource this command does not provide")
    if isinstance(exc, CenterError):
        return CliError(str(exc))
    if isinstance(exc, UsageError):
        where = f"toolweave {command}" if command else "toolweave"
        return CliError(str(exc), f"see `{where} --help` for what it accepts", 2)
    if isinstance(exc, ModuleNotFoundError) and "pip install" in str(exc):
        return CliError(str(exc), "install the optional extra named above")
    if isinstance(exc, OSError):
        return _os_error(exc)
    return CliError(
        f"unexpected {type(exc).__name__}: {exc}",
        f"this is a bug in toolweave or a pack; rerun with {DEBUG_ENV}=1 for the traceback",
    )


_PATH_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.EACCES,
        errno.EEXIST,
        errno.ENOTEMPTY,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.EROFS,
    }
)
"""Error numbers that are about a path (a missing file, a directory, permissions)."""


def _os_error(exc: OSError) -> CliError:
    """The error line of an operating-system error; the hint about paths only for an
    error about a path (one naming a file, or whose number is about paths): a broken
    pipe or a reset connection is not."""
    text = exc.strerror or str(exc) or type(exc).__name__
    files = [str(f) for f in (exc.filename, exc.filename2) if f is not None]
    if files or exc.errno in _PATH_ERRNOS:
        where = f" ({' -> '.join(files)})" if files else ""
        return CliError(f"{text}{where}", "check the path and its permissions")
    if isinstance(exc, ConnectionError):
        return CliError(text, "the other end of a pipe or connection went away")
    return CliError(text)


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn every exception of a command into one error line, a hint and an exit code.

    With ``TOOLWEAVE_DEBUG=1`` unexpected exceptions propagate with their traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except CliError as exc:
            _report(exc)
        except Exception as exc:
            translated = _translate(exc, fn.__name__.replace("_", "-"))
            if os.environ.get(DEBUG_ENV) == "1" and translated.hint.startswith("this is a bug"):
                raise
            _report(translated)

    return wrapper


def names(values: Iterable[str] | None) -> list[str] | None:
    """Pack names from repeated and comma-separated option values (``None``: not given)."""
    if values is None:
        return None
    found = [part.strip() for value in values for part in value.split(",")]
    return [n for n in found if n]


def load_packs(packs: Iterable[str] | None, exclude: Iterable[str] | None) -> PackManager:
    """Discover the installed packs and load the selected ones (broken ones are reported).

    Raises:
        CliError: A pack named in ``--packs`` is not installed.
    """
    from toolweave.plugins import PackManager

    include = names(packs)
    manager = PackManager()
    manager.discover(include=include, exclude=names(exclude))
    unknown = [n for n in include or () if n not in manager.packs]
    if unknown:
        installed = ", ".join(sorted(manager.packs)) or "none"
        fail(
            f"pack{'s' if len(unknown) > 1 else ''} not installed: {', '.join(unknown)}",
            f"installed packs: {installed}; install one with `pip install toolweave-<name>`",
            2,
        )
    return manager


def load_config(path: Path) -> ToolSetConfig:
    """Read a configuration file (problems raise ``ConfigError``)."""
    from toolweave.catalog._config import ToolSetConfig

    return ToolSetConfig.load(path)


def build_toolset(manager: PackManager, config: Path | None) -> ToolSet:
    """The tool set of the loaded packs, built from ``config`` when given."""
    builder = manager.builder()
    for info in manager.failed:
        err.print(f"[yellow]warning:[/] {escape(str(info.error))}")
    return builder.build(load_config(config) if config is not None else None)


def print_json(data: Any) -> None:
    """Write ``data`` as indented JSON on standard output (no colours, no wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()
