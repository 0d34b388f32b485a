"""``toolweave packs``, ``tools`` and ``describe``: what is installed and what the model sees."""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolweave.cli._common import (
    ConfigOpt,
    ExcludeOpt,
    JsonOpt,
    PacksOpt,
    build_toolset,
    escape,
    fail,
    guarded,
    load_packs,
    out,
    print_json,
    unknown_tool,
)
from toolweave.cli._discovery import NoConfigOpt, resolve_config
from toolweave.cli._registry import CenterOpt, CohortOpt, RoleOpt, attached
from toolweave.cli._sources import (
    McpOpt,
    NoMcpOpt,
    NoPluginsOpt,
    PluginsOpt,
    mcp_file,
    mcp_pool,
    open_plugins,
    plugin_folders,
)
from toolweave.errors import ToolweaveError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from toolweave.catalog._toolset import ToolEntry, ToolSet
    from toolweave.runtime._session import Session

__all__ = ["register"]

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="neutral, openai, openai-strict, openai-responses, openai-responses-strict, "
        "anthropic, gemini or mcp.",
    ),
]


@guarded
def packs(
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    json_: JsonOpt = False,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit with 1 when a pack or a plugin file failed to load."),
    ] = False,
    plugins: PluginsOpt = None,
    no_plugins: NoPluginsOpt = False,
) -> None:
    """List the installed packs: loaded, failed (with the error) or not selected; and
    the files of the plugin folders (./tools/plugins, --plugins DIR), loaded or failed
    (with the file and line).

    Loading runs each pack's hooks, so a pack that breaks while registering its tools
    is listed as failed too. Prints a table, or JSON with --json.

    **Examples**

        toolweave packs
        toolweave packs --packs fs,shell --json
        toolweave packs --strict          # exit 1 when a pack is broken (for CI)
    """
    from rich.table import Table

    manager = load_packs(packs, exclude)
    folders = open_plugins(None, plugin_folders(plugins, no_plugins), announce=False)
    files = [] if folders is None else list(folders.files.values())
    # Run every hook, so that packs breaking in one show as failed too: register_tools
    # while building, provide_resources when a session opens.
    with contextlib.suppress(ToolweaveError):  # tools that do not build together: `check`
        manager.builder().build().session()
    infos = list(manager.packs.values())
    if json_:
        print_json([info.to_dict() for info in infos] + [_file_dict(f) for f in files])
    elif not infos and not files:
        out.print("No packs installed. Try: pip install toolweave-fs")
    else:
        table = Table(box=None, pad_edge=False)
        for column in ("pack", "status", "distribution", "tools"):
            table.add_column(column)
        styles = {"loaded": "green", "failed": "bold red", "not selected": "dim"}
        for info in infos:
            dist = f"{info.dist} {info.version}" if info.dist else "(host)"
            tools = ", ".join(t.split(":", 1)[1] for t in info.tools)
            if info.error is not None:
                tools = f"[red]{escape(str(info.error))}[/]"
            table.add_row(info.name, f"[{styles[info.status]}]{info.status}[/]", dist, tools or "-")
        styles["stale"] = "yellow"
        for file in files:
            tools = ", ".join(file.tools)
            if file.alerts:
                problems = "; ".join(str(a) for a in file.alerts)
                tools = (f"{escape(tools)} " if tools else "") + f"[red]{escape(problems)}[/]"
            else:
                tools = escape(tools)
            table.add_row(
                escape(_relative(file.path, file.folder)),
                f"[{styles[file.status]}]{file.status}[/]",
                escape(file.source),
                tools or "-",
            )
        out.print(table)
    if strict and (manager.failed or any(f.alerts for f in files)):
        raise typer.Exit(1)


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder.parent))
    except ValueError:
        return str(path)


def _file_dict(file: Any) -> dict[str, Any]:
    """A plugin file in the form of a pack's JSON summary (plus its source and alerts)."""
    return {
        "name": _relative(file.path, file.folder),
        "target": str(file.path),
        "dist": None,
        "version": None,
        "status": file.status,
        "error": "; ".join(str(a) for a in file.alerts) or None,
        "tools": list(file.tools),
        "source": file.source,
        "alerts": [a.to_dict() for a in file.alerts],
    }


def _with_sources(
    toolset: ToolSet,
    center: str | None,
    role: str | None,
    cohort: str | None,
    folders: list[Path],
    mcp: Path | None,
    use: Any,
) -> Any:
    """``use(session)`` on a session of ``toolset`` under the center (when named), with
    the plugin folders' tools and the MCP server file's (connected for the call)."""
    import anyio

    session = toolset.session()
    with attached(session, center, role, cohort) as registry:
        plugins = open_plugins(session, folders, registry)

        async def run() -> Any:
            async with mcp_pool(session, mcp, registry):
                return use(session)

        try:
            return anyio.run(run)
        finally:
            if plugins is not None:
                plugins.close()


def _entries(session: Session) -> list[ToolEntry]:
    """What ``session`` lists, built-in tools first, as entries."""
    shown = {d["name"] for d in session.definitions("neutral")}
    entries = [*session.toolset, *session.external.values()]
    return [e for e in entries if e.name in shown]


@guarded
def tools(
    format: FormatOpt = "neutral",
    config: ConfigOpt = None,
    no_config: NoConfigOpt = False,
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    table: Annotated[
        bool, typer.Option("--table", help="Print a table for people instead of JSON.")
    ] = False,
    json_: Annotated[
        bool, typer.Option("--json", help="Print JSON for scripts (the default).")
    ] = False,
    center: CenterOpt = None,
    role: RoleOpt = None,
    cohort: CohortOpt = None,
    plugins: PluginsOpt = None,
    no_plugins: NoPluginsOpt = False,
    mcp: McpOpt = None,
    no_mcp: NoMcpOpt = False,
) -> None:
    """Print the tool definitions the model would get, as JSON in a provider's format.

    The definitions are built from every loaded pack, or from --config when given, plus
    the tools of the plugin folders (./tools/plugins, --plugins DIR, $TOOLWEAVE_PLUGINS;
    a file that fails is reported on standard error with its line) and of the MCP
    server file (./.mcp_servers.json or ./mcp.json, --mcp FILE). JSON is the default
    (--json says so explicitly); --table prints a summary for people: each tool's
    first sentence, wrapped (on a terminal narrower than about 110 columns without the
    kind and pack columns; `toolweave describe NAME` shows everything). With --center (or
    $TOOLWEAVE_CENTER) only what the registry center lets a session of --role see is
    listed (the tools are registered with the center on the way).

    **Examples**

        toolweave tools                                  # neutral definitions
        toolweave tools --format anthropic --packs fs
        toolweave tools --format openai-strict --config toolweave.toml
        toolweave tools --table
        toolweave tools --center .toolweave/center.db --role common_user --table
        toolweave tools --plugins ./my-tools --no-mcp --table
    """
    if table and json_:
        fail("--table and --json exclude each other", "pick one (JSON is the default)", 2)
    folders = plugin_folders(plugins, no_plugins)
    server_file = mcp_file(mcp, no_mcp)
    toolset = build_toolset(load_packs(packs, exclude), resolve_config(config, no_config))
    entries: list[ToolEntry] = list(toolset)
    if center is None and role is None and cohort is None and not folders and not server_file:
        definitions = toolset.definitions(format)
    else:
        definitions, entries = _with_sources(
            toolset,
            center,
            role,
            cohort,
            folders,
            server_file,
            lambda session: (session.definitions(format), _entries(session)),
        )
    if not table:
        print_json(definitions)
        return
    _table(entries, "No tools for this role: the center hides the others." if center else "")


def _pack_of(origin: str) -> str:
    """``fs`` from ``pack fs (toolweave-fs 0.1.0)``; other origins as they are."""
    return origin.split()[1] if origin.startswith("pack ") else origin


_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "approx", "incl", "no"})
"""Words whose period ends no sentence."""
_MIN_DESCRIPTION = 40
"""Columns the description gets at least; on a narrower terminal the kind and pack
columns are left out."""
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def first_sentence(text: str) -> str:
    """The first sentence of ``text``'s first paragraph, whole (a period after ``e.g``,
    ``i.e``, ``etc.`` or inside a word such as ``README.md`` ends no sentence)."""
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    for match in _SENTENCE_END.finditer(paragraph):
        word = paragraph[: match.start()].rsplit(" ", 1)[-1].lower().lstrip("(")
        if word in _ABBREVIATIONS:
            continue
        return paragraph[: match.end()].rstrip(".")
    return paragraph


def _table(entries: Sequence[ToolEntry], empty: str = "") -> None:
    from rich.table import Table

    if not entries:
        out.print(empty or "No tools. Install a pack: pip install toolweave-fs")
        return
    rows = [
        {
            "name": entry.name,
            "kind": entry.kind.value,
            "pack": _pack_of(entry.tool.origin),
            "ro": "yes" if entry.read_only else "",
            "description": first_sentence(entry.description),
        }
        for entry in entries
    ]
    columns = ["name", "kind", "pack", "ro"]
    widths = {c: max(len(c), *(len(row[c]) for row in rows)) for c in columns}
    if out.width - sum(widths[c] + 2 for c in columns) < _MIN_DESCRIPTION:
        columns = ["name", "ro"]  # narrow: room for the description first (see describe)
    grid = Table(box=None, pad_edge=False)
    for column in columns:
        grid.add_column(column, no_wrap=True)
    grid.add_column("description", overflow="fold", ratio=1)  # wrapped, never cut
    for row in rows:
        grid.add_row(*(escape(row[c]) for c in [*columns, "description"]))
    out.print(grid, soft_wrap=False)


def _arguments(entry: ToolEntry) -> list[dict[str, Any]]:
    schema = entry.input_schema
    required = set(schema.get("required") or ())
    rows: list[dict[str, Any]] = []
    for name, sub in (schema.get("properties") or {}).items():
        rows.append(
            {
                "name": name,
                "type": _type_of(sub),
                "required": name in required,
                "default": sub.get("default") if isinstance(sub, dict) else None,
                "description": (sub.get("description") or "") if isinstance(sub, dict) else "",
            }
        )
    return rows


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_type_of(v) for v in schema[key])
    typ = schema.get("type", "any")
    if typ == "array":
        return f"list[{_type_of(schema.get('items', {}))}]"
    return " | ".join(typ) if isinstance(typ, list) else str(typ)


@guarded
def describe(
    name: Annotated[str, typer.Argument(help="The tool's client-visible name.")],
    config: ConfigOpt = None,
    no_config: NoConfigOpt = False,
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    json_: JsonOpt = False,
    plugins: PluginsOpt = None,
    no_plugins: NoPluginsOpt = False,
    mcp: McpOpt = None,
    no_mcp: NoMcpOpt = False,
) -> None:
    """Show one tool: where it comes from, what it does, its arguments and params.

    The tool may come from a pack, a plugin folder (./tools/plugins, --plugins DIR) or
    the MCP server file (./.mcp_servers.json or ./mcp.json, --mcp FILE). The
    description is the one the model reads, rendered in full; --json adds the input
    schema.

    **Examples**

        toolweave describe read_file
        toolweave describe bash --json
    """
    folders = plugin_folders(plugins, no_plugins)
    server_file = mcp_file(mcp, no_mcp)
    toolset = build_toolset(load_packs(packs, exclude), resolve_config(config, no_config))
    entry = toolset.get(name)
    names = list(toolset.names)
    if entry is None and (folders or server_file):
        entry, names = _with_sources(
            toolset,
            None,
            None,
            None,
            folders,
            server_file,
            lambda session: (session.external.get(name), [e.name for e in _entries(session)]),
        )
    if entry is None:
        unknown_tool(name, names)
    tool = entry.tool
    params = entry.params.model_dump(mode="json") if entry.params is not None else None
    info: dict[str, Any] = {
        "name": entry.name,
        "fqid": tool.fqid,
        "origin": tool.origin,
        "kind": entry.kind.value,
        "read_only": entry.read_only,
        "streaming": tool.streaming,
        "version": tool.version,
        "timeout": entry.timeout,
        "description": entry.description,
        "arguments": _arguments(entry),
        "params": params,
        "input_schema": entry.input_schema,
    }
    if json_:
        print_json(info)
        return
    from rich.markdown import Markdown
    from rich.table import Table

    flags = ["read-only" if entry.read_only else "changes things"]
    if tool.streaming:
        flags.append("streams progress")
    out.print(f"[bold]{entry.name}[/]  [dim]{tool.fqid} v{tool.version} · {escape(tool.origin)}[/]")
    deadline = f"{entry.timeout:g} s" if entry.timeout is not None else "the session's (120 s)"
    flags.append(f"deadline {deadline}")
    out.print(f"kind {entry.kind.value} · {' · '.join(flags)}")
    out.print()
    out.print(Markdown(entry.description), soft_wrap=False)  # wrap list items, never crop
    out.print()
    grid = Table(title="arguments", title_justify="left", box=None, pad_edge=False)
    for column in ("name", "type", "required", "default", "description"):
        grid.add_column(column, overflow="fold")
    for row in info["arguments"]:
        default = "" if row["required"] else json.dumps(row["default"])
        grid.add_row(
            row["name"],
            escape(row["type"]),
            "yes" if row["required"] else "",
            escape(default),
            escape(row["description"]),
        )
    out.print(grid)
    if params is not None:
        out.print()
        out.print("[bold]params[/] " + escape(json.dumps(params)))


def register(app: typer.Typer) -> None:
    """Add ``packs``, ``tools`` and ``describe`` to ``app``."""
    app.command("packs")(packs)
    app.command("tools")(tools)
    app.command("describe")(describe)
