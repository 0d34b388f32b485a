"""``toolweave audit``: the registry center's recent audit entries, filtered."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from typing import Annotated, Any

import typer

from toolweave.cli._center import when
from toolweave.cli._common import JsonOpt, WorkspaceOpt, escape, fail, guarded, out, print_json
from toolweave.cli._registry import CenterOpt, open_center

__all__ = ["parse_time", "register"]

_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(text: str, now: float | None = None) -> float:
    """Seconds since the epoch from ``10m``, ``2h``, ``30s``, ``1d`` (that long ago) or an
    ISO time (``2025-06-01T12:00``; local time unless it names a zone).

    Raises:
        CliError: Neither form.
    """
    found = _AGO.match(text)
    if found is not None:
        return (time.time() if now is None else now) - float(found[1]) * _UNITS[found[2]]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        fail(
            f"not a time: {text!r}",
            "use an age such as 10m, 2h, 30s, 1d, or an ISO time such as 2025-06-01T12:00",
            2,
        )


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@guarded
def audit(
    session: Annotated[
        str | None, typer.Option("--session", help="Only this session's calls.", show_default=False)
    ] = None,
    tool: Annotated[
        str | None,
        typer.Option("--tool", help="Only calls to and changes of this tool.", show_default=False),
    ] = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            "--outcome",
            help="ok or error for calls; the operation (disable, pin, ...) for changes.",
            show_default=False,
        ),
    ] = None,
    type_: Annotated[
        str | None,
        typer.Option("--type", help="call or change.", show_default=False),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Only entries since: 10m, 2h, 1d, or an ISO time.", show_default=False
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", help="Only entries until (same forms).", show_default=False),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="The most entries.")] = 50,
    center: CenterOpt = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Show the registry center's audit, newest first.

    Every call (session, role, tool, version, outcome, error kind, duration) and every
    change (who, what, before, after, why); the filters combine.

    **Examples**

        toolweave audit
        toolweave audit --tool bash --since 2h
        toolweave audit --type change --json
        toolweave audit --outcome error --since 10m --limit 20
    """
    if type_ is not None and type_ not in ("call", "change"):
        fail(f"--type is call or change, not {type_!r}", "see `toolweave audit --help`", 2)
    start = parse_time(since) if since is not None else None
    end = parse_time(until) if until is not None else None
    with open_center(center, workspace) as c:
        entries = c.audit(
            type=type_,
            session=session,
            tool=tool,
            outcome=outcome,
            since=start,
            until=end,
            limit=limit,
        )
    if json_:
        print_json([e.to_dict() for e in entries])
        return
    if not entries:
        out.print("no audit entries match")
        return
    from rich.table import Table

    grid = Table(box=None, pad_edge=False)
    for column in ("time", "type", "tool", "who", "outcome", "detail"):
        grid.add_column(column, overflow="fold", no_wrap=column in ("time", "type", "outcome"))
    for e in entries:
        if e.type == "call":
            session = e.session or "-"  # the full id is in --json
            who = (session[:12] + "…" if len(session) > 13 else session) + (
                f" ({e.role})" if e.role else ""
            )
            result = (
                "[green]ok[/]" if e.outcome == "ok" else f"[red]{escape(_text(e.error_kind))}[/]"
            )
            took = f"{e.duration_ms:.1f} ms" if e.duration_ms is not None else ""
            detail = " · ".join(x for x in (f"v{e.version}" if e.version else "", took) if x)
        else:
            who = _text(e.actor)
            result = escape(_text(e.outcome))
            detail = f"{_text(e.before) or '-'} → {_text(e.after) or '-'}"
            if e.reason:
                detail += f" · {e.reason}"
        grid.add_row(when(e.at), e.type, escape(_text(e.tool)), escape(who), result, escape(detail))
    out.print(grid)


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""
    app.command("audit")(audit)
