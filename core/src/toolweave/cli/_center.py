"""``toolweave center ...``: what the registry center holds, and the operators' lifecycle
operations on it (enable, disable, pin, rollback, rollout, roles, breakers)."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolweave.cli._common import JsonOpt, WorkspaceOpt, escape, fail, guarded, out, print_json
from toolweave.cli._registry import CenterOpt, open_center

if TYPE_CHECKING:
    from toolweave.center import Center, ToolState

__all__ = ["group", "register", "when"]

group = typer.Typer(
    name="center",
    help="""The registry center: what every tool's state is, and the operations that
change it for every running session within a second.

The store is --center URL, else $TOOLWEAVE_CENTER, else .toolweave/center.db in the
workspace. Every change is audited with who (--actor, default: you) and why (--reason).
""",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)

ReasonOpt = Annotated[
    str, typer.Option("--reason", "-r", help="Why (kept in the audit; shown to the model).")
]
ActorOpt = Annotated[
    str | None,
    typer.Option(
        "--actor", help="Who makes the change (default: the OS user).", show_default=False
    ),
]
CohortOpt = Annotated[
    str | None,
    typer.Option(
        "--cohort", help="Only the sessions of this cohort (default: every session).",
        show_default=False,
    ),
]  # fmt: skip
SLOW_DEFAULT = "500 ms local, 3000 ms MCP"
"""What an unset ``slow_ms`` means."""


def when(at: float | None) -> str:
    """A time for people: local, to the second."""
    if at is None:
        return "-"
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")


def _emit(json_: bool, data: dict[str, Any], line: str) -> None:
    """Print ``data`` as JSON, or ``line`` (rich markup) for people."""
    if json_:
        print_json(data)
    else:
        out.print(line)


def _version_text(state: ToolState) -> str:
    parts = [state.record.default_version or "-"]
    for cohort, version in sorted(state.pins.items()):
        parts.append(f"pin {version}" if cohort == "*" else f"{cohort}: {version}")
    if state.rollout is not None:
        parts.append(f"{state.rollout[0]} to {state.rollout[1]:g} %")
    return " · ".join(parts)


_STATUS_STYLE = {"enabled": "green", "disabled": "bold red", "circuit_open": "yellow"}


# -- reading -----------------------------------------------------------------------------


def _status_data(center: Center) -> dict[str, Any]:
    states = center.tools()
    snap = center.snapshot
    health = center.health()
    breakers = center.breakers()
    switched = [
        {"scope": scope, "target": target, "status": value["status"], "reason": value.get("reason")}
        for (scope, target, flag), value in sorted(snap.flags.items())
        if flag == "status" and scope in ("tool", "group", "source")
    ]
    return {
        "store": health.store,
        "version": health.version,
        "readonly": health.readonly,
        "degraded": health.degraded,
        "tools": len(states),
        "statuses": dict(sorted(Counter(s.status.value for s in states).items())),
        "switched_off": switched,
        "pins": {s.name: dict(s.pins) for s in states if s.pins},
        "rollouts": {
            s.name: {"version": s.rollout[0], "percent": s.rollout[1]} for s in states if s.rollout
        },
        "breakers": breakers,
        "audit_entries": center.store.count_audit(),
    }


@guarded
def status(
    center: CenterOpt = None, workspace: WorkspaceOpt = None, json_: JsonOpt = False
) -> None:
    """Show the center: its store, tools by status, and what operators changed.

    Lists what is switched off (tools, groups, sources), pins, rollouts, breakers that
    are not closed, and the size of the audit.

    **Examples**

        toolweave center status
        toolweave center status --center /var/lib/agents/center.db --json
    """
    from rich.table import Table

    with open_center(center, workspace) as c:
        data = _status_data(c)
    if json_:
        print_json(data)
        return
    grid = Table(box=None, pad_edge=False, show_header=False)
    grid.add_column(style="bold")
    grid.add_column()
    store = escape(data["store"]) + (" [yellow](read-only)[/]" if data["readonly"] else "")
    grid.add_row("store", f"{store}  [dim]version {data['version']}[/]")
    if data["degraded"]:
        grid.add_row("degraded", f"[bold red]{escape(data['degraded'])}[/]")
    counts = ", ".join(f"{n} {s}" for s, n in data["statuses"].items())
    grid.add_row("tools", f"{data['tools']}" + (f": {counts}" if counts else ""))
    for item in data["switched_off"]:
        why = f": {escape(item['reason'])}" if item["reason"] else ""
        what = f"{item['scope']} {escape(item['target'])}"
        grid.add_row("off", f"{what} [bold red]{item['status']}[/]{why}")
    for name, pins in data["pins"].items():
        shown = ", ".join(f"{v} ({'every session' if k == '*' else k})" for k, v in pins.items())
        grid.add_row("pinned", f"{escape(name)}: {escape(shown)}")
    for name, rollout in data["rollouts"].items():
        grid.add_row(
            "rollout", f"{escape(name)}: version {rollout['version']} to {rollout['percent']:g} %"
        )
    for key, info in data["breakers"].items():
        if info["state"] != "closed":
            grid.add_row("breaker", f"{escape(key)} [yellow]{info['state']}[/]")
    grid.add_row("audit", f"{data['audit_entries']} entries (`toolweave audit` lists them)")
    out.print(grid)


@guarded
def tools(center: CenterOpt = None, workspace: WorkspaceOpt = None, json_: JsonOpt = False) -> None:
    """List every tool the center holds, with what the center says about it.

    Each tool's status, source, groups, roles, versions (pins and rollout), breaker,
    and the reason for its status.

    The center learns a tool when a session using it attaches (for instance
    `toolweave tools --center URL` registers the installed packs' tools).

    **Examples**

        toolweave center tools
        toolweave center tools --json
    """
    from rich.table import Table

    with open_center(center, workspace) as c:
        states = c.tools()
    if json_:
        print_json([s.to_dict() for s in states])
        return
    if not states:
        out.print("The center holds no tools yet: a session started with --center adds its own.")
        return
    grid = Table(box=None, pad_edge=False)
    for column in ("name", "status", "source", "groups", "roles", "version", "breaker", "reason"):
        grid.add_column(column, overflow="fold")
    for s in states:
        style = _STATUS_STYLE.get(s.status.value, "yellow")
        grid.add_row(
            escape(s.name),
            f"[{style}]{s.status.value}[/]",
            escape(s.record.source),
            escape(", ".join(s.groups)) or "-",
            "everyone" if s.roles is None else escape(", ".join(s.roles)) or "nobody",
            escape(_version_text(s)),
            s.breaker,
            escape(s.reason),
        )
    out.print(grid)


# -- enable and disable --------------------------------------------------------------------


def _switch(
    wanted: str,
    name: str | None,
    group_: str | None,
    source: str | None,
    *,
    url: str | None,
    workspace: Path | None,
    reason: str,
    actor: str | None,
    json_: bool,
) -> None:
    given = [(s, t) for s, t in (("tool", name), ("group", group_), ("source", source)) if t]
    if len(given) != 1:
        fail("name exactly one of: a tool, --group G, --source S", "see --help", 2)
    scope, target = given[0]
    with open_center(url, workspace, create=scope != "tool") as c:
        before = dict(c.snapshot.status)
        changed = c.set_status(
            name, wanted, group=group_, source=source, actor=actor, reason=reason
        )
        after = c.snapshot.status
        moved = sorted(n for n, s in after.items() if before.get(n) != s)
        now = c.tool(name) if name else None
        version = c.version
    data = {
        "action": "enable" if wanted == "enabled" else "disable",
        "scope": scope,
        "target": target,
        "changed": changed,
        "tools": moved,
        "reason": reason,
        "version": version,
    }
    if now is not None:
        data["status"] = now.status.value
    what = f"{scope} {escape(target)}"
    if not changed:
        line = f"{what} was already {wanted}"
        if now is not None and now.status.value != wanted:
            line += f"; it stays {now.status.value} ({escape(now.reason)})"
    else:
        line = f"{data['action']}d {what}"
        if scope != "tool":
            line += f": {len(moved)} tool{'s' * (len(moved) != 1)} {wanted} now"
            line += f" ({escape(', '.join(moved))})" if moved else ""
        elif now is not None and now.status.value != wanted:
            line += f"; it stays {now.status.value} ({escape(now.reason)})"
    _emit(json_, data, line)


NameArg = Annotated[
    str | None, typer.Argument(help="The tool's name.", show_default=False)
]  # fmt: skip
GroupOpt = Annotated[
    str | None, typer.Option("--group", "-g", help="Every tool of this group.", show_default=False)
]
SourceOpt = Annotated[
    str | None,
    typer.Option(
        "--source", "-s", help="Every tool of this source (pack:DIST, mcp:SERVER, ...).",
        show_default=False,
    ),
]  # fmt: skip


def _switch_command(wanted: str, doc: str) -> Callable[..., None]:
    """The ``enable`` or ``disable`` command: the same options, another status."""

    def command(
        name: NameArg = None,
        group_: GroupOpt = None,
        source: SourceOpt = None,
        reason: ReasonOpt = "",
        actor: ActorOpt = None,
        center: CenterOpt = None,
        workspace: WorkspaceOpt = None,
        json_: JsonOpt = False,
    ) -> None:
        _switch(
            wanted, name, group_, source,
            url=center, workspace=workspace, reason=reason, actor=actor, json_=json_,
        )  # fmt: skip

    command.__name__ = command.__qualname__ = "enable" if wanted == "enabled" else "disable"
    command.__doc__ = doc
    return guarded(command)


enable = _switch_command(
    "enabled",
    """Enable a tool, a group or a source again.

    A tool stays off while its group or source is disabled.

    **Examples**

        toolweave center enable bash --reason "incident 42 closed"
        toolweave center enable --group local_core
        toolweave center enable --source mcp:github
    """,
)
disable = _switch_command(
    "disabled",
    """The emergency brake: take a tool, a group or a source away from every session.

    Within a second it is gone from every listing, and a call to it answers
    `unavailable` with the reason.

    **Examples**

        toolweave center disable bash --reason "incident 42"
        toolweave center disable --group mcp_file --reason "disk full"
        toolweave center disable --source mcp:github --json
    """,
)


# -- versions -------------------------------------------------------------------------------


def _for(cohort: str | None) -> str:
    return f"the cohort {escape(cohort)}" if cohort else "every session"


@guarded
def pin(
    name: Annotated[str, typer.Argument(help="The tool's name.")],
    version: Annotated[str, typer.Argument(help="The behaviour version to run.")],
    cohort: CohortOpt = None,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Pin a tool's behaviour version for every session, or for one cohort.

    `toolweave center rollback` returns to the pin before.

    **Examples**

        toolweave center pin read_file 2
        toolweave center pin read_file 3 --cohort beta --reason "try the new reader"
    """
    with open_center(center, workspace) as c:
        changed = c.pin(name, version, cohort=cohort, actor=actor, reason=reason)
        pins = dict(c.tool(name).pins)
    data = {"tool": name, "version": version, "cohort": cohort, "changed": changed, "pins": pins}
    verb = "pinned" if changed else "was already pinned:"
    _emit(json_, data, f"{verb} {escape(name)} version {escape(version)} for {_for(cohort)}")


@guarded
def approve(
    name: Annotated[str, typer.Argument(help="The remote tool's name.")],
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Approve a remote (MCP) tool's current definition: a tool quarantined because its
    server changed its description or schema is listed and callable again.

    Without --json the difference from the definition approved before is shown; the
    audit keeps it.

    **Examples**

        toolweave center approve mcp__github__create_issue --reason "reviewed"
        toolweave center approve mcp__time__get_current_time --json
    """
    with open_center(center, workspace) as c:
        changed = c.approve(name, actor=actor, reason=reason)
        approved = c.snapshot.flags.get(("tool", name, "approved")) or {}
        state = c.tool(name)
    data = {
        "tool": name,
        "changed": changed,
        "status": state.status.value,
        "diff": approved.get("diff", ""),
    }
    if json_ or not changed or not data["diff"]:
        verb = "approved" if changed else "was already approved:"
        _emit(json_, data, f"{verb} the definition of {escape(name)}")
        return
    out.print(f"approved the definition of {escape(name)}; changes from the one before:")
    out.print(escape(str(data["diff"])), highlight=False)


@guarded
def rollback(
    name: Annotated[str, typer.Argument(help="The tool's name.")],
    cohort: CohortOpt = None,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Return a tool to the version pinned before the current pin.

    For every session, or for one cohort; rolling back the first pin returns to the
    version sessions were configured with.

    **Examples**

        toolweave center rollback read_file
        toolweave center rollback read_file --cohort beta --json
    """
    with open_center(center, workspace) as c:
        version = c.rollback(name, cohort=cohort, actor=actor, reason=reason)
        state = c.tool(name)
    data = {"tool": name, "cohort": cohort, "version": version, "pins": dict(state.pins)}
    if version is None:
        configured = state.record.default_version or "configured"
        line = (
            f"rolled {escape(name)} back for {_for(cohort)}: no pin left, sessions run "
            f"their configured version ({escape(configured)})"
        )
    else:
        line = f"rolled {escape(name)} back to version {escape(version)} for {_for(cohort)}"
    _emit(json_, data, line)


@guarded
def rollout(
    name: Annotated[str, typer.Argument(help="The tool's name.")],
    version: Annotated[
        str | None, typer.Argument(help="The behaviour version to release.", show_default=False)
    ] = None,
    percent: Annotated[
        float | None,
        typer.Argument(help="Percentage of sessions (0-100; 0 ends it).", show_default=False),
    ] = None,
    abort: Annotated[
        bool, typer.Option("--abort", help="End the rollout: every session runs its old version.")
    ] = False,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Gray release: run a new behaviour version in a percentage of sessions.

    Sessions are chosen by a stable hash of their id, the same in every process for a
    session's whole life. Run it again with another percentage to widen (sessions
    already in stay in) or narrow; --abort ends it.

    **Examples**

        toolweave center rollout read_file 2 10
        toolweave center rollout read_file 2 50 --reason "no errors at 10 %"
        toolweave center rollout read_file --abort --reason "slow"
    """
    if abort and (version is not None or percent is not None):
        fail("--abort takes no VERSION or PERCENT", "toolweave center rollout NAME --abort", 2)
    if not abort and (version is None or percent is None):
        fail("a rollout needs VERSION and PERCENT (or --abort)", "see --help", 2)
    with open_center(center, workspace) as c:
        before = c.tool(name).rollout
        if version is not None and percent is not None:
            changed = c.rollout(name, version, percent, actor=actor, reason=reason)
        else:
            changed = c.abort_rollout(name, actor=actor, reason=reason)
        now = c.tool(name).rollout
    shown = None if now is None else {"version": now[0], "percent": now[1]}
    data = {"tool": name, "changed": changed, "rollout": shown}
    if now is None:
        line = f"{escape(name)} has no rollout" + (" now" if changed else "")
    else:
        moved = "" if before is None or before[0] != now[0] else f" (was {before[1]:g} %)"
        line = f"{escape(name)} version {escape(now[0])} runs in {now[1]:g} % of sessions{moved}"
    _emit(json_, data, line)


# -- roles and breakers --------------------------------------------------------------------------


@guarded
def roles(
    name: Annotated[str, typer.Argument(help="The tool's name.")],
    role: Annotated[
        list[str] | None,
        typer.Argument(help="The roles that may list and call it.", show_default=False),
    ] = None,
    everyone: Annotated[
        bool, typer.Option("--everyone", help="Let every role use it (no whitelist).")
    ] = False,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show or set a tool's role whitelist.

    Sessions of other roles never see the tool, and a call to it is
    `permission_denied`. Without roles and --everyone it shows the whitelist.

    **Examples**

        toolweave center roles bash
        toolweave center roles bash admin ops --reason "shell for staff only"
        toolweave center roles bash --everyone
    """
    if everyone and role:
        fail("--everyone takes no roles", "toolweave center roles NAME --everyone", 2)
    with open_center(center, workspace) as c:
        changed = False
        if everyone or role:
            changed = c.set_roles(name, None if everyone else role, actor=actor, reason=reason)
        now = c.tool(name).roles
    data = {"tool": name, "roles": None if now is None else list(now), "changed": changed}
    who = "every role" if now is None else escape(", ".join(now)) or "no role"
    _emit(json_, data, f"{escape(name)}: {who}" + (" (changed)" if changed else ""))


def _settings_text(settings: dict[str, Any]) -> str:
    slow = settings.get("slow_ms")
    return (
        f"{settings['failures']} failures in {settings['window']:g} s, "
        f"cool-down {settings['cooldown']:g} s, slow after "
        + (f"{slow:g} ms" if slow is not None else SLOW_DEFAULT)
    )


@guarded
def breaker(
    target: Annotated[
        str | None,
        typer.Argument(help="A tool's name, or an MCP server as mcp:NAME.", show_default=False),
    ] = None,
    reset: Annotated[bool, typer.Option("--reset", help="Close the circuit now.")] = False,
    failures: Annotated[
        int | None,
        typer.Option("--failures", min=1, help="Failures within the window that open it."),
    ] = None,
    window: Annotated[
        float | None, typer.Option("--window", min=0.001, help="The window, in seconds.")
    ] = None,
    cooldown: Annotated[
        float | None,
        typer.Option("--cooldown", min=0, help="Seconds open before one trial call."),
    ] = None,
    slow_ms: Annotated[
        float | None,
        typer.Option(
            "--slow-ms",
            min=0.001,
            help="Calls slower than this many milliseconds count as timeouts.",
        ),
    ] = None,
    default: Annotated[
        bool, typer.Option("--default", help="Drop the target's own settings (use the defaults).")
    ] = False,
    reason: ReasonOpt = "",
    actor: ActorOpt = None,
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show circuit breakers, close one (--reset), or give one its own thresholds.

    Without a target: every breaker that is not closed or has settings of its own.
    The defaults: 5 failures within 30 s open the circuit for 30 s; a call slower than
    500 ms (local) or 3000 ms (MCP) counts as a timeout.

    **Examples**

        toolweave center breaker
        toolweave center breaker mcp:github --reset
        toolweave center breaker bash --failures 3 --window 60 --cooldown 120
        toolweave center breaker bash --default
    """
    from toolweave.center import BreakerSettings

    configure = any(v is not None for v in (failures, window, cooldown, slow_ms))
    if sum((reset, configure, default)) > 1:
        fail("choose one of --reset, thresholds, or --default", "see --help", 2)
    if target is None and (reset or configure or default):
        fail("name the breaker: a tool, or mcp:SERVER", "see --help", 2)
    defaults = BreakerSettings()
    with open_center(center, workspace, create=target is not None and ":" in target) as c:
        changed = False
        if target is not None and reset:
            changed = c.reset_breaker(target, actor=actor, reason=reason)
        elif target is not None and default:
            changed = c.configure_breaker(target, None, actor=actor, reason=reason)
        elif target is not None and configure:
            base = c.settings_for(target)
            settings = BreakerSettings(
                failures=failures if failures is not None else base.failures,
                window=window if window is not None else base.window,
                cooldown=cooldown if cooldown is not None else base.cooldown,
                slow_ms=slow_ms if slow_ms is not None else base.slow_ms,
            )
            changed = c.configure_breaker(target, settings, actor=actor, reason=reason)
        elif target is not None and ":" not in target:
            c.tool(target)  # an unknown tool is an error, not a closed breaker
        own = c.breakers()
    fallback = {"failures": defaults.failures, "window": defaults.window,
                "cooldown": defaults.cooldown, "slow_ms": defaults.slow_ms}  # fmt: skip
    rows = {
        key: {
            "state": info["state"],
            "until": info["until"],
            "settings": info["settings"],
            "effective": info["settings"] or fallback,
        }
        for key, info in own.items()
        if target is None or key == target
    }
    if target is not None and target not in rows:
        rows[target] = {"state": "closed", "until": None, "settings": None, "effective": fallback}
    if json_:
        data: dict[str, Any] = {"defaults": fallback, "breakers": rows}
        if target is not None:
            data = {"target": target, "changed": changed, **rows[target]}
        print_json(data)
        return
    if target is None and not rows:
        out.print(f"every breaker is closed; defaults: {_settings_text(fallback)}")
        return
    for key, row in rows.items():
        state = row["state"]
        style = {"closed": "green", "open": "bold red"}.get(state, "yellow")
        until = f" until {when(row['until'])}" if state == "open" else ""
        own_text = "own settings" if row["settings"] else "defaults"
        out.print(
            f"{escape(key)}: [{style}]{state}[/]{until} · {own_text}: "
            f"{_settings_text(row['effective'])}" + (" (changed)" if changed else "")
        )


TOKENS_ENV = "TOOLWEAVE_ADMIN_TOKENS"
"""Admin API tokens as comma-separated ``name=secret`` items."""


@guarded
def serve(
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    host: Annotated[str, typer.Option("--host", help="The address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port (0: a free one).")] = 8770,
    token: Annotated[
        list[str] | None,
        typer.Option(
            "--token",
            metavar="NAME=SECRET",
            help=f"A bearer token (repeatable; else ${TOKENS_ENV}, comma-separated). "
            "Required off loopback; each change is audited with the token's name.",
            show_default=False,
        ),
    ] = None,
    no_dashboard: Annotated[
        bool, typer.Option("--no-dashboard", help="Serve the JSON API only.")
    ] = False,
) -> None:
    """Serve the admin HTTP API and the web dashboard until stopped (Ctrl-C).

    The API (`/api/...`) offers every operation of these commands, audit queries, push
    registration of HTTP tools and MCP server entries, and the change feed as
    server-sent events (`/api/feed`); the dashboard is at `/`. Without a token it
    binds only to a loopback address.

    **Examples**

        toolweave center serve                           # http://127.0.0.1:8770/
        toolweave center serve --host 0.0.0.0 --token ops=$(openssl rand -hex 16)
    """
    import importlib
    import os

    import anyio

    from toolweave.center._admin import check_exposure, parse_tokens, serve_admin
    from toolweave.cli._common import err

    tokens = parse_tokens(token or os.environ.get(TOKENS_ENV))
    check_exposure(host, tokens)
    with contextlib.suppress(ImportError):  # pushed MCP entries checked as pools read them
        importlib.import_module("toolweave.mcp")
    with open_center(center, workspace, create=True) as c:

        def ready(url: str) -> None:
            err.print(f"admin API and dashboard at {url}/  (Ctrl-C stops)")

        async def main() -> None:
            await serve_admin(
                c, host, port, tokens=tokens, dashboard=not no_dashboard, on_ready=ready
            )

        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(main)


def register(app: typer.Typer) -> None:
    """Add the ``center`` command group to ``app``."""
    for command in (
        status, tools, enable, disable, pin, rollback, rollout, roles, breaker, approve,
        serve,
    ):  # fmt: skip
        group.command(command.__name__)(command)
    app.add_typer(group, name="center")
