"""The operator's web dashboard, served by the admin API's process at ``/``.

The page is a shell; its parts are HTML fragments rendered here (every value escaped)
and swapped in by a little inline JavaScript after each change on the feed and after
each action. Actions call the JSON API (``/api/...``) with the operator's token, kept
in the tab's ``sessionStorage``; the fragments need it too when tokens are set. No
build step, nothing loaded from elsewhere (the page's Content-Security-Policy says so).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from html import escape
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from toolweave.center._admin import Problem
from toolweave.center._model import AuditEntry, Status, ToolState

if TYPE_CHECKING:
    from toolweave.center._center import Center

__all__ = ["dashboard_routes"]

Fragment = Callable[[Request, str], Awaitable[Any]]
"""A fragment's renderer: the request and the actor (the token's name)."""
Endpoint = Callable[[Fragment], Callable[[Request], Awaitable[Response]]]
"""The admin API's wrapper: authenticates, and turns errors into problem documents."""

AUDIT_LIMITS = (20, 50, 100, 500)
"""The audit tail's sizes the page offers (50 unless asked)."""
AGES = {"10m": 600, "1h": 3600, "1d": 86400}
"""The audit tail's "since" choices, in seconds."""
_HEADERS = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


def dashboard_routes(
    center: Center, actor_of: Callable[[Request], str], endpoint: Endpoint
) -> list[Route]:
    """The dashboard's routes: the page at ``/`` and its fragments under
    ``/fragments/``.

    Args:
        center: The center shown.
        actor_of: The admin API's authentication (the token's name, or a 401 problem).
        endpoint: The admin API's handler wrapper; fragments go through it, so they
            need the token when tokens are set and answer problems as the API does.
    """
    del actor_of  # endpoint() authenticates every fragment

    async def page(request: Request) -> Response:
        nonce = secrets.token_urlsafe(16)
        csp = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'"
        )
        body = _PAGE.replace("{nonce}", nonce)
        return HTMLResponse(body, headers={**_HEADERS, "content-security-policy": csp})

    async def health(request: Request, actor: str) -> Response:
        return _html(await anyio.to_thread.run_sync(_render_health, center))

    async def tools(request: Request, actor: str) -> Response:
        return _html(_render_tools(center.tools()))

    async def breakers(request: Request, actor: str) -> Response:
        return _html(_render_breakers(center.breakers(), center.breaker, time.time()))

    async def audit(request: Request, actor: str) -> Response:
        q = request.query_params
        limit = q.get("limit") or "50"
        if not (limit.isascii() and limit.isdigit()):
            raise Problem(400, "Bad query", f"'limit' must be a whole number, not {limit[:30]!r}")
        digits = limit.lstrip("0") or "0"
        count = 1000 if len(digits) > 4 else max(1, min(int(digits), 1000))
        age = q.get("since") or ""
        if age and age not in AGES:
            raise Problem(
                400, "Bad query", f"'since' is one of {', '.join(AGES)}, not {age[:30]!r}"
            )
        kind = q.get("type") or None
        if kind not in (None, "call", "change"):
            raise Problem(400, "Bad query", f"'type' is call or change, not {kind[:30]!r}")
        since = time.time() - AGES[age] if age else None
        entries = await anyio.to_thread.run_sync(
            lambda: center.audit(
                type=kind,
                tool=q.get("tool") or None,
                session=q.get("session") or None,
                outcome=q.get("outcome") or None,
                since=since,
                limit=count,
            )
        )
        return _html(_render_audit(entries))

    return [
        Route("/", page, methods=["GET"]),
        Route("/fragments/health", endpoint(health), methods=["GET"]),
        Route("/fragments/tools", endpoint(tools), methods=["GET"]),
        Route("/fragments/breakers", endpoint(breakers), methods=["GET"]),
        Route("/fragments/audit", endpoint(audit), methods=["GET"]),
    ]


def _html(text: str) -> HTMLResponse:
    return HTMLResponse(text, headers=_HEADERS)


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _chips(items: Iterable[str], empty: str) -> str:
    chips = "".join(f'<span class="chip">{_e(i)}</span>' for i in items)
    return chips or f'<span class="muted">{_e(empty)}</span>'


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _compact(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- fragments ---------------------------------------------------------------------------


def _render_health(center: Center) -> str:
    h = center.health()
    parts = [
        f"<span>store <code>{_e(h.store)}</code></span>",
        f'<span>version <b class="version">{h.version}</b></span>',
        f"<span>{h.tools} tools</span>",
        f"<span>audit {_e(h.audit)}</span>",
    ]
    if h.readonly:
        parts.append('<span class="badge warn">read-only</span>')
    if h.degraded:
        parts.append(f'<span class="badge bad" title="{_e(h.degraded)}">degraded</span>')
    if h.audit_error:
        parts.append(f'<span class="badge bad" title="{_e(h.audit_error)}">audit failing</span>')
    if h.audit_pending:
        parts.append(f"<span>{h.audit_pending} audit entries queued</span>")
    if h.audit_dropped:
        parts.append(f'<span class="badge bad">{h.audit_dropped} audit entries dropped</span>')
    if not (h.degraded or h.audit_error or h.readonly):
        parts.append('<span class="badge ok">healthy</span>')
    return " ".join(parts)


def _version_cell(state: ToolState) -> str:
    record = state.record
    lines = [
        f"runs <b>{_e(record.default_version or '-')}</b>"
        + (f' <span class="muted">of {_e(", ".join(record.versions))}</span>'
           if len(record.versions) > 1 else "")
    ]  # fmt: skip
    for cohort, version in sorted(state.pins.items()):
        who = "everyone" if cohort == "*" else f"cohort {cohort}"
        lines.append(f'<span class="pin">pinned {_e(version)} for {_e(who)}</span>')
    if state.rollout is not None:
        version, percent = state.rollout
        lines.append(f'<span class="rollout">rolling out {_e(version)} to {percent:g} %</span>')
    return "<br>".join(lines)


def _actions_cell(state: ToolState) -> str:
    name = _e(state.name)
    off = state.status in (Status.DISABLED, Status.OFFLINE, Status.QUARANTINED)
    action = "enable" if off else "disable"
    css = "" if off else " danger"
    out = [
        f'<button type="button" class="act{css}" data-action="{action}" data-tool="{name}">'
        f"{action.capitalize()}</button>"
    ]
    versions = state.record.versions
    if len(versions) > 1 or state.rollout is not None or state.pins:
        current = state.rollout[0] if state.rollout else versions[-1]
        options = "".join(
            f'<option value="{_e(v)}"{" selected" if v == current else ""}>{_e(v)}</option>'
            for v in versions
        )
        percent = f"{state.rollout[1]:g}" if state.rollout else "10"
        out.append(
            '<span class="release">'
            f'<select name="version" aria-label="version of {name}">{options}</select>'
            f'<input name="percent" type="number" min="0" max="100" step="any" value="{percent}"'
            f' aria-label="percent of sessions for {name}"><span class="unit">%</span>'
            f'<button type="button" data-action="rollout" data-tool="{name}">Roll out</button>'
            f'<button type="button" data-action="pin" data-tool="{name}">Pin</button>'
        )
        if state.rollout is not None:
            out.append(
                f'<button type="button" class="danger" data-action="abort" data-tool="{name}">'
                "Abort</button>"
            )
        if "*" in state.pins:
            out.append(
                f'<button type="button" data-action="rollback" data-tool="{name}">'
                "Roll back</button>"
            )
        out.append("</span>")
    return "".join(out)


def _render_tools(states: list[ToolState]) -> str:
    if not states:
        return (
            '<p class="empty">The center holds no tools yet: a session that attaches '
            "registers its tools (<code>toolweave tools --center URL</code>).</p>"
        )
    rows = []
    for state in states:
        record = state.record
        summary = record.description.strip().splitlines()[0] if record.description else ""
        reason = f'<div class="muted">{_e(state.reason)}</div>' if state.reason else ""
        roles = _chips(state.roles, "nobody") if state.roles is not None else (
            '<span class="muted">everyone</span>'
        )  # fmt: skip
        rows.append(
            f'<tr data-tool="{_e(state.name)}" data-status="{_e(state.status.value)}">'
            f'<td><span class="name">{_e(state.name)}</span>'
            f'<div class="muted desc" title="{_e(record.description)}">{_e(summary)}</div></td>'
            f"<td><code>{_e(record.source)}</code></td>"
            f"<td>{_chips(state.groups, '-')}</td>"
            f"<td>{roles}</td>"
            f'<td><span class="badge s-{_e(state.status.value)}">{_e(state.status.value)}</span>'
            f"{reason}</td>"
            f'<td class="versions">{_version_cell(state)}</td>'
            f'<td><span class="badge b-{_e(state.breaker)}">{_e(state.breaker)}</span></td>'
            f'<td class="actions">{_actions_cell(state)}</td>'
            "</tr>"
        )
    return (
        '<table class="grid tools"><thead><tr><th>Tool</th><th>Source</th><th>Groups</th>'
        "<th>Roles</th><th>Status</th><th>Version</th><th>Breaker</th><th>Actions</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _settings_text(settings: Mapping[str, Any] | None) -> str:
    if settings is None:
        return '<span class="muted">defaults</span>'
    slow = settings.get("slow_ms")
    text = (
        f"{settings['failures']} failures in {settings['window']:g} s, "
        f"cool-down {settings['cooldown']:g} s"
    )
    return _e(text + (f", slow above {slow:g} ms" if slow is not None else ""))


def _render_breakers(breakers: Mapping[str, Mapping[str, Any]], defaults: Any, now: float) -> str:
    default = (
        f"Defaults: {defaults.failures} failures within {defaults.window:g} s open a circuit "
        f"for {defaults.cooldown:g} s."
    )
    if not breakers:
        return f'<p class="empty">Every breaker is closed. {_e(default)}</p>'
    rows = []
    for key, info in breakers.items():
        state = str(info.get("state", "closed"))
        until = info.get("until")
        left = ""
        if state == "open" and until is not None:
            seconds = max(0.0, float(until) - now)
            left = f"retry in {seconds:.0f} s" if seconds > 0 else "half-open at the next call"
        reset = (
            f'<button type="button" data-action="reset" data-target="{_e(key)}">Reset</button>'
            if state != "closed"
            else ""
        )
        rows.append(
            f'<tr data-breaker="{_e(key)}"><td><code>{_e(key)}</code></td>'
            f'<td><span class="badge b-{_e(state)}">{_e(state)}</span></td>'
            f'<td class="muted">{_e(left)}</td><td>{_settings_text(info.get("settings"))}</td>'
            f'<td class="actions">{reset}</td></tr>'
        )
    return (
        '<table class="grid"><thead><tr><th>Breaker</th><th>State</th><th></th>'
        f"<th>Settings</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<p class="muted small">{_e(default)}</p>'
    )


def _audit_detail(entry: AuditEntry) -> str:
    if entry.type == "call":
        bits = []
        if entry.role:
            bits.append(f"role {_e(entry.role)}")
        if entry.version:
            bits.append(f"v{_e(entry.version)}")
        if entry.error_kind:
            bits.append(f'<span class="err">{_e(entry.error_kind)}</span>')
        if entry.duration_ms is not None:
            bits.append(f"{entry.duration_ms:.1f} ms")
        return " · ".join(bits)
    after = entry.after
    if entry.outcome == "register" and isinstance(after, dict):
        versions = ", ".join(map(str, after.get("versions") or [])) or "-"
        change = f"from {_e(after.get('source', '?'))}, versions {_e(versions)}"
    else:
        before = "-" if entry.before is None else _compact(entry.before)
        change = f"{_e(before)} → {_e('-' if after is None else _compact(after))}"
    if entry.reason:
        change += f' <span class="muted">“{_e(entry.reason)}”</span>'
    return change


def _render_audit(entries: list[AuditEntry]) -> str:
    if not entries:
        return '<p class="empty">No audit entries match.</p>'
    rows = []
    for entry in entries:
        who = entry.actor if entry.type == "change" else entry.session
        shown = who if who is None or len(who) <= 14 else who[:12] + "…"
        outcome = entry.outcome or ""
        css = {"ok": "ok", "error": "bad"}.get(outcome, "change")
        rows.append(
            f'<tr data-type="{_e(entry.type)}" data-tool="{_e(entry.tool or "")}">'
            f'<td class="nowrap">{_e(_when(entry.at))}</td><td>{_e(entry.type)}</td>'
            f"<td>{_e(entry.tool or '')}</td>"
            f'<td><span class="badge {css}">{_e(outcome)}</span></td>'
            f'<td title="{_e(who or "")}"><code>{_e(shown or "")}</code></td>'
            f'<td class="detail">{_audit_detail(entry)}</td></tr>'
        )
    return (
        '<table class="grid audit"><thead><tr><th>Time</th><th>Type</th><th>Tool</th>'
        "<th>Outcome</th><th>Session / actor</th><th>Detail</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


# -- the page --------------------------------------------------------------------------

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>toolweave center</title>
<link rel="icon" href="data:,">
<style nonce="{nonce}">
:root { --fg: #1f2328; --muted: #656d76; --line: #d8dee4; --bg: #f6f8fa; --card: #fff;
  --accent: #0969da; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --violet: #8250df; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
header { display: flex; flex-wrap: wrap; gap: 12px 24px; align-items: center;
  padding: 10px 20px; background: #24292f; color: #fff; }
header h1 { font-size: 17px; margin: 0; font-weight: 600; }
header code { color: #c9d1d9; }
#health { display: flex; flex-wrap: wrap; gap: 6px 14px; align-items: center;
  font-size: 13px; color: #d0d7de; flex: 1; }
#token-form { display: flex; gap: 6px; align-items: center; }
#token-form input { width: 200px; }
main { padding: 16px 20px; max-width: 1500px; margin: 0 auto; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 16px; margin-bottom: 16px; }
section h2 { font-size: 15px; margin: 0 0 10px; display: flex; gap: 12px;
  align-items: center; flex-wrap: wrap; }
.columns { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 16px; }
.columns > div > section { height: auto; }
@media (max-width: 1100px) { .columns { grid-template-columns: 1fr; } }
table.grid { width: 100%; border-collapse: collapse; }
.grid th { text-align: left; font-weight: 600; color: var(--muted); font-size: 12px;
  text-transform: uppercase; letter-spacing: .03em; border-bottom: 1px solid var(--line);
  padding: 6px 8px; }
.grid td { border-bottom: 1px solid #eaeef2; padding: 7px 8px; vertical-align: top; }
.grid tr:last-child td { border-bottom: none; }
.name { font-weight: 600; }
.desc { max-width: 260px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.muted { color: var(--muted); }
.small { font-size: 12px; }
.nowrap { white-space: nowrap; }
.empty { color: var(--muted); margin: 6px 0; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
.chip { display: inline-block; background: #ddf4ff; color: #0550ae; border-radius: 10px;
  padding: 0 8px; margin: 0 4px 2px 0; font-size: 12px; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px;
  font-weight: 600; background: #eaeef2; color: var(--fg); }
.badge.ok, .s-enabled, .b-closed { background: #dafbe1; color: var(--ok); }
.badge.bad, .s-disabled, .b-open { background: #ffebe9; color: var(--bad); }
.badge.warn, .s-circuit_open, .b-half_open { background: #fff8c5; color: var(--warn); }
.s-quarantined { background: #fbefff; color: var(--violet); }
.badge.change { background: #ddf4ff; color: #0550ae; }
.pin { color: var(--violet); }
.rollout { color: var(--warn); font-weight: 600; }
.err { color: var(--bad); }
button, select, input { font: inherit; font-size: 13px; border: 1px solid var(--line);
  border-radius: 6px; padding: 3px 9px; background: #f6f8fa; color: var(--fg); }
button { cursor: pointer; }
button:hover { background: #eaeef2; }
button.danger { color: var(--bad); }
button.act { min-width: 70px; }
input[name=percent] { width: 62px; }
.actions { white-space: nowrap; }
.actions button, .actions select, .actions input { margin: 0 2px 3px 0; }
.release { display: inline-flex; gap: 2px; align-items: center; margin-left: 8px;
  padding-left: 8px; border-left: 1px solid var(--line); }
.unit { color: var(--muted); margin-right: 4px; }
#error { background: #ffebe9; border: 1px solid #ff8182; color: #82071e;
  border-radius: 8px; padding: 8px 12px; margin-bottom: 12px; display: flex; gap: 12px;
  align-items: center; }
#error[hidden] { display: none; }
#error-text { flex: 1; }
#notice { color: var(--ok); font-size: 13px; min-height: 1em; }
#reason { width: 300px; font-weight: normal; }
#audit-filter { display: flex; flex-wrap: wrap; gap: 6px; font-weight: normal; }
#audit-filter input { width: 120px; }
.audit .detail { font-size: 12px; word-break: break-word; }
#feed-state { font-weight: normal; font-size: 12px; }
#feed-state.live { color: var(--ok); }
#feed-state.down { color: var(--bad); }
#feed { list-style: none; margin: 0; padding: 0; max-height: 420px; overflow: auto;
  font-size: 12px; }
#feed li { border-bottom: 1px solid #eaeef2; padding: 4px 0; }
#feed li .kind { font-weight: 600; margin: 0 6px; }
#feed li .what { color: var(--muted); display: block; word-break: break-word; }
</style>
</head>
<body>
<header>
  <h1>toolweave center</h1>
  <div id="health" aria-live="polite"></div>
  <form id="token-form" autocomplete="off">
    <input id="token" type="password" placeholder="admin token (if set)" aria-label="admin token">
    <button type="submit" id="token-save">Use token</button>
    <button type="button" id="token-forget">Forget</button>
  </form>
</header>
<main>
  <div id="error" role="alert" hidden><span id="error-text"></span>
    <button type="button" id="error-close">Dismiss</button></div>
  <section>
    <h2>Tools
      <input id="reason" placeholder="reason (recorded in the audit)"
        aria-label="reason">
      <span id="notice" aria-live="polite"></span></h2>
    <div id="tools"></div>
  </section>
  <div class="columns">
    <div>
      <section>
        <h2>Audit
          <form id="audit-filter" autocomplete="off">
            <input name="tool" placeholder="tool" aria-label="audit tool">
            <input name="session" placeholder="session" aria-label="audit session">
            <input name="outcome" placeholder="outcome" title="ok, error, or a change: disable, rollout…"
              aria-label="audit outcome">
            <select name="type" aria-label="audit type"><option value="">calls and changes</option>
              <option value="call">calls</option><option value="change">changes</option></select>
            <select name="since" aria-label="audit since"><option value="">any time</option>
              <option value="10m">last 10 min</option><option value="1h">last hour</option>
              <option value="1d">last day</option></select>
            <select name="limit" aria-label="audit limit"><option>20</option>
              <option selected>50</option><option>100</option><option>500</option></select>
          </form></h2>
        <div id="audit"></div>
      </section>
    </div>
    <div>
      <section>
        <h2>Change feed <span id="feed-state" class="down">connecting…</span></h2>
        <ul id="feed"></ul>
      </section>
      <section>
        <h2>Breakers</h2>
        <div id="breakers"></div>
      </section>
    </div>
  </div>
</main>
<script nonce="{nonce}">
"use strict";
const $ = (sel) => document.querySelector(sel);
const KEY = "toolweave.center.token";
let token = sessionStorage.getItem(KEY) || "";
$("#token").value = token;

function headers(json) {
  const h = {};
  if (token) h["Authorization"] = "Bearer " + token;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

async function problemText(resp) {
  let text = resp.status + " " + resp.statusText;
  try {
    const p = await resp.json();
    if (p && p.detail) text = (p.status || resp.status) + " " + (p.title || "") + ": " + p.detail;
  } catch (e) { /* not a problem document */ }
  if (resp.status === 401) text += token ? " (the token was refused)" : " (enter the admin token, top right)";
  return text;
}

function showError(text) { $("#error-text").textContent = text; $("#error").hidden = false; }
function clearError() { $("#error").hidden = true; $("#error-text").textContent = ""; }
let noticeTimer = null;
function notice(text) {
  $("#notice").textContent = text;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { $("#notice").textContent = ""; }, 4000);
}

async function api(method, path, body) {
  let resp;
  try {
    resp = await fetch(path, {method, headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (e) {
    showError(method + " " + path + ": the center did not answer (" + e + ")");
    return null;
  }
  if (!resp.ok) { showError(method + " " + path + ": " + await problemText(resp)); return null; }
  return resp.status === 204 ? {} : resp.json();
}

const seq = {};
const deferred = new Set();
function fragmentUrl(name) {
  if (name !== "audit") return "/fragments/" + name;
  const params = new URLSearchParams();
  for (const [k, v] of new FormData($("#audit-filter"))) if (v) params.set(k, v);
  return "/fragments/audit?" + params;
}
function editing(el) {
  const a = document.activeElement;
  return el.contains(a) && (a.tagName === "INPUT" || a.tagName === "SELECT");
}
async function load(name) {
  const el = document.getElementById(name);
  if (name === "tools" && editing(el)) { deferred.add(name); return; }
  const mine = seq[name] = (seq[name] || 0) + 1;
  let resp;
  try { resp = await fetch(fragmentUrl(name), {headers: headers(false)}); }
  catch (e) { showError("Loading " + name + ": the center did not answer (" + e + ")"); return; }
  if (mine !== seq[name]) return;
  if (!resp.ok) { showError("Loading " + name + ": " + await problemText(resp)); return; }
  const text = await resp.text();
  if (mine !== seq[name]) return;
  el.innerHTML = text;
  el.dataset.version = String(mine);
}
function refreshAll() { for (const n of ["health", "tools", "breakers", "audit"]) load(n); }
let pending = null;
function schedule() { clearTimeout(pending); pending = setTimeout(refreshAll, 120); }
$("#tools").addEventListener("focusout", () => {
  setTimeout(() => { if (deferred.delete("tools")) load("tools"); }, 0);
});

document.addEventListener("click", async (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b) return;
  clearError();
  const action = b.dataset.action;
  const reason = $("#reason").value;
  const row = b.closest("tr");
  const tool = encodeURIComponent(b.dataset.tool || "");
  const field = (n) => row && row.querySelector("[name=" + n + "]");
  let done = null;
  b.disabled = true;
  try {
    if (action === "enable" || action === "disable") {
      done = await api("POST", "/api/tools/" + tool + "/" + action, {reason});
    } else if (action === "rollout") {
      const p = field("percent").value;
      done = await api("POST", "/api/tools/" + tool + "/rollout",
        {version: field("version").value, percent: p === "" ? null : Number(p), reason});
    } else if (action === "abort") {
      done = await api("DELETE", "/api/tools/" + tool + "/rollout");
    } else if (action === "pin") {
      done = await api("POST", "/api/tools/" + tool + "/pin", {version: field("version").value, reason});
    } else if (action === "rollback") {
      done = await api("POST", "/api/tools/" + tool + "/rollback", {reason});
    } else if (action === "reset") {
      done = await api("POST", "/api/breakers/" + encodeURIComponent(b.dataset.target) + "/reset");
    }
  } finally { b.disabled = false; }
  if (done) {
    notice(action + " " + (b.dataset.tool || b.dataset.target) +
      (done.changed === false ? ": nothing to change" : ": done"));
    if (row) deferred.delete("tools");
    b.blur();
    schedule();
  }
});

let auditTimer = null;
$("#audit-filter").addEventListener("input", () => {
  clearTimeout(auditTimer); auditTimer = setTimeout(() => load("audit"), 250);
});
$("#audit-filter").addEventListener("submit", (ev) => { ev.preventDefault(); load("audit"); });

let source = null, retry = null;
function feedState(css, text) { const s = $("#feed-state"); s.className = css; s.textContent = text; }
function onEvent(ev) {
  let data;
  try { data = JSON.parse(ev.data); } catch (e) { return; }
  const li = document.createElement("li");
  const at = new Date((data.at || Date.now() / 1000) * 1000).toLocaleTimeString();
  const kind = document.createElement("span"); kind.className = "kind"; kind.textContent = data.kind;
  const what = document.createElement("span"); what.className = "what";
  what.textContent = JSON.stringify(data.detail || {});
  li.append(at, kind, String(data.target || ""), what);
  li.dataset.target = String(data.target || "");
  const feed = $("#feed");
  feed.prepend(li);
  while (feed.children.length > 100) feed.lastChild.remove();
  schedule();
}
function connect() {
  clearTimeout(retry);
  if (source) source.close();
  source = new EventSource("/api/feed" + (token ? "?token=" + encodeURIComponent(token) : ""));
  source.onopen = () => feedState("live", "live");
  for (const k of ["added", "removed", "changed", "flag", "resync"]) source.addEventListener(k, onEvent);
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      feedState("down", "disconnected (a token may be needed); retrying");
      retry = setTimeout(connect, 5000);
    } else {
      feedState("down", "reconnecting…");
    }
  };
}

$("#token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  token = $("#token").value.trim();
  if (token) sessionStorage.setItem(KEY, token); else sessionStorage.removeItem(KEY);
  clearError();
  connect();
  refreshAll();
});
$("#token-forget").addEventListener("click", () => {
  token = ""; $("#token").value = ""; sessionStorage.removeItem(KEY); connect(); refreshAll();
});
$("#error-close").addEventListener("click", clearError);

setInterval(() => { load("audit"); load("health"); load("breakers"); }, 5000);
connect();
refreshAll();
</script>
</body>
</html>
"""
