"""``toolweave new-pack NAME``: a new pack distribution from the pack template.

The template ships inside toolweave (``toolweave/cli/pack_template/``, each file with
a ``.tmpl`` suffix so no tool mistakes it for code), so the command works from an
installed wheel. :data:`PLACEHOLDER` stands for the pack's name in paths and texts.
"""

from __future__ import annotations

import re
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated

import typer

from toolweave.cli._common import fail, guarded, out

__all__ = ["PLACEHOLDER", "TEMPLATE_SUFFIX", "register", "render_pack", "template_files"]

PLACEHOLDER = "NAME"
"""The word that stands for the pack's name in the template."""
TEMPLATE_SUFFIX = ".tmpl"
"""Suffix of every embedded template file."""

_PACK_NAME = re.compile(r"[a-z][a-z0-9_]*")


def template_files() -> dict[str, str]:
    """The embedded template: relative path (with the placeholder) → text."""
    found: dict[str, str] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            elif child.name.endswith(TEMPLATE_SUFFIX):
                found[rel[: -len(TEMPLATE_SUFFIX)]] = child.read_text(encoding="utf-8")

    walk(files("toolweave.cli").joinpath("pack_template"), "")
    return found


def render_pack(parent: Path, name: str) -> Path:
    """Write the pack ``toolweave-<name>/`` under ``parent``; returns its folder.

    Raises:
        CliError: The name is not a valid pack name, or the folder exists.
    """
    if not _PACK_NAME.fullmatch(name):
        fail(
            f"invalid pack name {name!r}",
            "use lowercase letters, digits and '_', starting with a letter (e.g. weather)",
            2,
        )
    dest = parent / f"toolweave-{name}"
    if dest.exists():
        fail(f"{dest} already exists", "choose another name or remove the folder", 2)
    for rel, text in template_files().items():
        target = dest / rel.replace(PLACEHOLDER, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace(PLACEHOLDER, name), encoding="utf-8")
    return dest


@guarded
def new_pack(
    name: Annotated[str, typer.Argument(help="The pack's name: lowercase, e.g. weather.")],
    directory: Annotated[
        Path,
        typer.Option("--dir", "-d", help="Where to create toolweave-NAME/.", file_okay=False),
    ] = Path("."),
) -> None:
    """Create a new pack distribution: pyproject with the entry point, src layout, an example tool, tests.

    The pack lands in toolweave-NAME/ (import package toolweave_NAME, entry point NAME);
    its tests include toolweave's conformance checks and pass as created.

    **Examples**

        toolweave new-pack weather
        toolweave new-pack weather --dir plugins-contrib
    """
    dest = render_pack(directory, name)
    out.print(f"created [bold]{dest}[/]")
    out.print(
        "next:\n"
        f"  pip install -e {dest}\n"
        f"  toolweave packs --packs {name}\n"
        f"  python -m pytest {dest / 'tests'}"
    )


def register(app: typer.Typer) -> None:
    """Add ``new-pack`` to ``app``."""
    app.command("new-pack")(new_pack)
