"""``toolweave select MESSAGE``: the tools the injector would give a model for one turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolweave.cli._common import (
    ConfigOpt,
    ExcludeOpt,
    JsonOpt,
    PacksOpt,
    build_toolset,
    escape,
    guarded,
    load_packs,
    names,
    out,
    print_json,
)
from toolweave.cli._discovery import NoConfigOpt, resolve_config
from toolweave.cli._registry import CenterOpt, RoleOpt, attached

if TYPE_CHECKING:
    from toolweave.inject import Selection

__all__ = ["register"]


@guarded
def select(
    message: Annotated[str, typer.Argument(help="The turn's user message.")],
    role: RoleOpt = None,
    cap: Annotated[
        int, typer.Option("--cap", min=1, help="At most this many injected tools.")
    ] = 15,
    global_: Annotated[
        list[str] | None,
        typer.Option(
            "--global",
            "-g",
            metavar="GROUP,...",
            help="Groups whose tools are in every turn (comma-separated or repeated).",
            show_default=False,
        ),
    ] = None,
    explicit: Annotated[
        list[str] | None,
        typer.Option(
            "--explicit",
            "-e",
            metavar="TOOL,...",
            help="Tools named by the host (comma-separated or repeated).",
            show_default=False,
        ),
    ] = None,
    negatives: Annotated[
        int, typer.Option("--negatives", min=0, help="Close-but-excluded tools to name.")
    ] = 0,
    json_: JsonOpt = False,
    center: CenterOpt = None,
    config: ConfigOpt = None,
    no_config: NoConfigOpt = False,
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
) -> None:
    """Show the tools the injector chooses for MESSAGE: each with its reason (global,
    explicit, intent with its confidence), then what the cap trimmed and what the
    role, status or breakers filtered, and the note for the model.

    The tools come from every loaded pack (or --config); with --center (or
    $TOOLWEAVE_CENTER) the center's groups, roles, statuses and breakers apply for a
    session of --role, and the selection is logged in its audit.

    **Examples**

        toolweave select "show me README.md"
        toolweave select "delete the build folder" --cap 5 --json
        toolweave select "rotate logs" -g local_core --role ops --center c.db
    """
    from toolweave.inject import Injector

    toolset = build_toolset(load_packs(packs, exclude), resolve_config(config, no_config))
    session = toolset.session()
    with attached(session, center, role) as registry:
        injector = Injector(
            session,
            center=registry,
            role=role,
            global_groups=names(global_) or (),
            cap=cap,
            negatives=negatives,
        )
        selection = injector.select(message, explicit=names(explicit))
        injector.flush()
    if json_:
        print_json({**selection.to_dict(), "note": selection.note})
        return
    _print(selection)


def _print(selection: Selection) -> None:
    from rich.table import Table

    if not selection.chosen:
        out.print("No tool fits this message (the classifiers abstained).")
    else:
        table = Table(box=None, pad_edge=False)
        for column in ("#", "tool", "reason", "confidence", "why"):
            table.add_column(column)
        for number, choice in enumerate(selection.chosen, 1):
            confidence = "" if choice.confidence is None else f"{choice.confidence:.2f}"
            why = ", ".join(choice.tags) if choice.reason == "global" else choice.detail
            table.add_row(
                str(number), escape(choice.name), escape(choice.reason), confidence, escape(why)
            )
        out.print(table)
    dropped: list[Any] = [*selection.trimmed, *selection.filtered]
    if dropped:
        out.print()
        table = Table(box=None, pad_edge=False)
        for column in ("left out", "why", "wanted as", "confidence", "detail"):
            table.add_column(column)
        for item in dropped:
            confidence = "" if item.confidence is None else f"{item.confidence:.2f}"
            table.add_row(
                escape(item.name),
                escape(item.why),
                escape(item.wanted),
                confidence,
                escape(item.detail),
            )
        out.print(table)
    if selection.search:
        out.print("\n[dim]The model can call search_tools for what was left out.[/]")
    if selection.note:
        out.print(f"\nnote for the model: {escape(selection.note)}")


def register(app: typer.Typer) -> None:
    """Add ``select`` to ``app``."""
    app.command("select")(select)
