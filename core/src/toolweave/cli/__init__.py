"""The ``toolweave`` command.

Needs the optional extra: ``pip install 'toolweave[cli]'`` (typer and rich).
``import toolweave`` never imports this package; the console script does.

Commands live in one small module each and register themselves on the root
:data:`app`; a command group (several commands under one name, such as a registry's
operations) is a typer sub-app added with ``app.add_typer(group, name=...)`` from its
own module, listed in :data:`COMMAND_MODULES`.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

__all__ = ["COMMAND_MODULES", "app", "main"]

COMMAND_MODULES = (
    "toolweave.cli._listing",
    "toolweave.cli._call",
    "toolweave.cli._check",
    "toolweave.cli._select",
    "toolweave.cli._serve",
    "toolweave.cli._center",
    "toolweave.cli._audit",
    "toolweave.cli._demo",
    "toolweave.cli._new_pack",
)
"""Modules whose ``register(app)`` adds commands or command groups, in help order."""

_built: typer.Typer | None = None
"""The app, once built (not named ``_app``: importing the submodule ``_app`` would
rebind that name on this package)."""


def build_app() -> typer.Typer:
    """The root typer app with every command registered (built once)."""
    global _built
    if _built is None:
        from toolweave.cli._app import make_app

        app = make_app()
        for name in COMMAND_MODULES:
            importlib.import_module(name).register(app)
        _built = app
    return _built


def __getattr__(name: str) -> Any:
    if name == "app":
        return build_app()
    raise AttributeError(name)


def main() -> None:
    """Entry point of the ``toolweave`` console script."""
    try:
        import rich  # noqa: F401
        import typer  # noqa: F401
    except ImportError:
        sys.stderr.write(
            "error: the toolweave command needs its optional extra\n"
            "hint: pip install 'toolweave[cli]'\n"
        )
        raise SystemExit(2) from None
    build_app()(prog_name="toolweave")
