"""``toolweave check CONFIG``: every problem of a configuration, one per line."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolweave.cli._common import (
    ExcludeOpt,
    JsonOpt,
    PacksOpt,
    err,
    fail,
    guarded,
    load_packs,
    out,
    print_json,
)
from toolweave.cli._discovery import resolve_config

if TYPE_CHECKING:
    from toolweave.catalog import ToolSet, ToolSetConfig
    from toolweave.plugins import PackManager

__all__ = ["register"]


@guarded
def check(
    config: Annotated[
        Path | None,
        typer.Argument(
            help="The configuration file (.toml or .json) [default: $TOOLWEAVE_CONFIG, else "
            "the nearest toolweave.toml or toolweave.json from here up to the repository root].",
            dir_okay=False,
            show_default=False,
        ),
    ] = None,
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Check a tool-set configuration against the installed packs.

    Prints every problem, one per line, and exits with 1 when there is any; warnings
    (such as a deprecated version, a tool description that does not say what the
    tool must not be used for, or one that writes its own parameters' names instead of
    ``{param:<name>}``) are printed but do not fail the check.

    **Examples**

        toolweave check                   # the configuration found from here
        toolweave check toolweave.toml
        toolweave check agent.json --packs fs,shell --json
    """
    from rich.text import Text

    from toolweave.plugins import check_config

    if config is None:
        config = resolve_config(None, False)
        if config is None:
            fail(
                "no configuration to check: none named, none in $TOOLWEAVE_CONFIG, no "
                "toolweave.toml or toolweave.json here or above (up to the repository root)",
                "name one: toolweave check FILE",
                2,
            )
    manager = load_packs(packs, exclude)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        issues = check_config(config, manager)
    notes = [str(w.message) for w in caught]
    if not issues:
        notes += _description_notes(manager, config)
    if json_:
        print_json(
            {
                "ok": not issues,
                "problems": [
                    {
                        "tool": i.tool_id,
                        "message": i.message,
                        "path": i.path,
                        "tag": i.tag,
                        "expected": i.expected,
                        "actual": i.actual,
                        "text": str(i),
                    }
                    for i in issues
                ],
                "warnings": notes,
            }
        )
    else:
        for note in notes:
            err.print(Text.assemble(("warning: ", "yellow"), note))
        for issue in issues:
            out.print(Text(str(issue)))
        if not issues:
            out.print(Text.assemble(("ok", "green"), f": {config} builds"))
    if issues:
        count = len(issues)
        if not json_:
            err.print(f"[bold red]{count} problem{'s' * (count != 1)}[/]")
        raise typer.Exit(1)


def _description_notes(manager: PackManager, config: Path) -> list[str]:
    """A warning for each configured tool whose description does not say what the tool
    must not be used for (the injector's models choose by it), and for each whose
    description (the configured one, else the registered one, before rendering) names
    its own parameters literally instead of as ``{param:<name>}``."""
    from toolweave.catalog import literal_parameters, literal_parameters_hint
    from toolweave.catalog._config import ToolSetConfig
    from toolweave.errors import ToolweaveError
    from toolweave.inject import NOT_FOR_HINT, says_what_not

    try:
        loaded = ToolSetConfig.load(config)
        toolset = manager.builder().build(loaded)
    except ToolweaveError:
        return []
    notes = [f"{e.name}: {NOT_FOR_HINT}" for e in toolset if not says_what_not(e.description)]
    overrides = _configured_descriptions(loaded, toolset)
    for e in toolset:
        text = overrides.get(e.name, e.tool.description)
        literal = literal_parameters(text, e.tool.argument_names())
        if literal:
            notes.append(f"{e.name}: {literal_parameters_hint(literal)}")
    return notes


def _configured_descriptions(config: ToolSetConfig, toolset: ToolSet) -> dict[str, str]:
    """Client name → the description the configuration gives the tool instead of its
    own, for the configured tools that have one."""
    found: dict[str, str] = {}
    named = {t.name for t in config.tools or () if t.name is not None}
    for t in config.tools or ():
        if t.description is None:
            continue
        for e in toolset:
            fqid = e.tool.fqid
            if t.id not in (fqid, fqid.split(":", 1)[-1]):
                continue
            if (e.name == t.name) if t.name is not None else (e.name not in named):
                found.setdefault(e.name, t.description)
                break
    return found


def register(app: typer.Typer) -> None:
    """Add ``check`` to ``app``."""
    app.command("check")(check)
