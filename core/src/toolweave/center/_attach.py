"""A session under the center: the call hook that enforces the center's state at
dispatch, and the overlay its listing consults."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, final

from pydantic import BaseModel

from toolweave.center._model import LOCAL_SLOW_MS, MCP_SLOW_MS, Status, ToolRecord
from toolweave.errors import ErrorKind, ToolError
from toolweave.results import CallResult
from toolweave.runtime import CallHook, HookCall

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.center._center import Center, Snapshot
    from toolweave.runtime._session import Session

__all__ = ["CenterHook"]

logger = logging.getLogger("toolweave")

_perf = time.perf_counter
_FAILURES = frozenset({ErrorKind.TIMEOUT, ErrorKind.EXECUTION_ERROR, ErrorKind.UNAVAILABLE})
"""Error kinds that count against a circuit (a refusal or bad arguments do not)."""
_OFF = frozenset({Status.DISABLED, Status.OFFLINE, Status.QUARANTINED})
_MISSING: Any = object()


@final
class _Admitted:
    """``HookCall.hook_data`` of a call the center admitted: when, and whether it is a
    half-open circuit's trial."""

    __slots__ = ("started", "trials")

    def __init__(self, started: float, trials: tuple[str, ...]) -> None:
        self.started = started
        self.trials = trials


@final
class _Rule:
    """What the center says about one tool for one session, at one version."""

    __slots__ = ("keys", "refusal", "route", "slow_ms")

    def __init__(
        self,
        refusal: ToolError | None,
        route: ToolEntry | None,
        keys: tuple[str, ...],
        slow_ms: float,
    ) -> None:
        self.refusal = refusal
        self.route = route
        self.keys = keys
        """The circuits a call counts against: the tool's, and its MCP server's."""
        self.slow_ms = slow_ms


class CenterHook(CallHook):
    """The center's hook on one session (made by :meth:`Center.attach
    <toolweave.center.Center.attach>`, which runs it before every other hook).

    ``admit`` refuses a call the session's role may not make (``permission_denied``),
    one to a disabled, offline or quarantined tool (``unavailable``, with the
    operator's reason) or behind an open circuit (``unavailable``, with the time to
    retry), and routes the call to a pinned or rolled-out behaviour version; ``after``
    and ``on_error`` count the outcome for the breakers and queue one audit entry per
    call. It is also the session's listing overlay.

    Attributes:
        center: The center.
        role: The session's role (``None``: no role).
        cohort: The session's cohort, for cohort pins.
    """

    name = "center"
    fail_closed = True

    def __init__(
        self, center: Center, session: Session, *, role: str | None, cohort: str | None
    ) -> None:
        self.center = center
        self.session = session
        self.role = role
        self.cohort = cohort
        self._snap: Snapshot | None = None
        self._external = -1
        """The session's ``external_version`` the rules were made for."""
        self._rules: dict[str, _Rule] = {}
        self._pushed: dict[str, ToolRecord] = {}
        """The pushed tools this session was given, as they were then."""

    def __repr__(self) -> str:
        return f"<CenterHook {self.session.session_id} role={self.role!r}>"

    # -- the overlay ----------------------------------------------------------------------

    def stamp(self) -> object:
        return self.center.snapshot

    def view(self, session: Session) -> tuple[frozenset[str], Mapping[str, ToolEntry]]:
        # Asked when the center's state or the session's external tools changed.
        self._snap = None
        self._sync_pushed(session)
        hidden: set[str] = set()
        routes: dict[str, ToolEntry] = {}
        entries = [*session.toolset.entries, *session.external.values()]
        for entry in entries:
            rule = self._rule(entry)
            if rule.refusal is not None:
                hidden.add(entry.name)
            elif rule.route is not None:
                routes[entry.name] = rule.route
        return frozenset(hidden), routes

    def _sync_pushed(self, session: Session) -> None:
        """Give the session the tools pushed to the center (source ``api``) as they are
        now: new ones added, changed ones replaced, removed ones dropped."""
        records = self.center.snapshot.records
        wanted = {
            name: record
            for name, record in records.items()
            if record.source == "api" and record.endpoint is not None
        }
        pushed = self._pushed
        for name, record in list(pushed.items()):
            if wanted.get(name) != record:
                session.unregister_external(name)
                del pushed[name]
        for name, record in wanted.items():
            if name in pushed:
                continue
            if name in session.toolset or name in session.external:
                logger.warning("pushed tool %s is left out: the session has a tool so named", name)
                continue
            from toolweave.center._http_tool import http_tool

            assert record.endpoint is not None
            try:
                tool = http_tool(
                    name, record.description, dict(record.input_schema), record.endpoint
                )
                session.register_external(tool, name=name, prefix="")
            except Exception as exc:
                logger.error(
                    "pushed tool %s could not join session %s: %s", name, session.session_id, exc
                )
                continue
            pushed[name] = record

    # -- rules ------------------------------------------------------------------------------

    def _rule(self, entry: ToolEntry) -> _Rule:
        snap = self.center.snapshot
        external = self.session.external_version
        if snap is not self._snap or external != self._external:
            self._snap = snap
            self._external = external  # a server may have changed a tool's definition
            self._rules = {}
        rule = self._rules.get(entry.name)
        if rule is None:
            rule = self._rules[entry.name] = self._make_rule(snap, entry)
        return rule

    def _make_rule(self, snap: Snapshot, entry: ToolEntry) -> _Rule:
        name = entry.name
        record = snap.records.get(name)
        if (
            entry.tool.source.startswith("mcp:")
            and not self.center.store.readonly
            and (
                record is None
                or record.description != entry.description
                or record.input_schema != entry.input_schema
            )
        ):
            # A tool the session gained at run time, or one whose server changed its
            # definition: the center records it (a changed one is quarantined until an
            # operator approves it).
            self.center._register_external(entry)
            snap = self.center.snapshot
            record = snap.records.get(name)
        source = record.source if record is not None else entry.tool.source
        keys = (name, source) if source.startswith("mcp:") else (name,)
        slow = self.center.settings_for(name).slow_ms
        if slow is None:
            slow = MCP_SLOW_MS if entry.tool.source != "local" else LOCAL_SLOW_MS
        if record is None:
            if name in snap.damage.records:
                # Fail-closed: the center cannot tell what its operators set for it.
                refusal = ToolError(
                    ErrorKind.UNAVAILABLE,
                    f"{name} is unavailable: the center cannot read its record; do not call "
                    "it again unless told it is back.",
                )
                return _Rule(refusal, None, keys, slow)
            return _Rule(None, None, keys, slow)
        roles = snap.roles.get(name)
        if roles is not None and self.role not in roles:
            who = f"the role {self.role!r}" if self.role else "a session without a role"
            refusal = ToolError(ErrorKind.PERMISSION_DENIED, f"{name} is not allowed for {who}.")
            return _Rule(refusal, None, keys, slow)
        status = snap.status.get(name, Status.ENABLED)
        if status in _OFF:
            why = snap.reasons.get(name)
            refusal = ToolError(
                ErrorKind.UNAVAILABLE,
                f"{name} is {status.value.replace('_', ' ')} by the operators"
                + (f" ({why})" if why else "")
                + "; do not call it again unless told it is back.",
            )
            return _Rule(refusal, None, keys, slow)
        version = snap.version_for(name, self.session.session_id, self.cohort)
        route: ToolEntry | None = None
        if version is not None and version != entry.tool.version:
            route = self.session.toolset.version_entry(entry, version)
            if route is None:
                logger.warning(
                    "%s: version %s is not in this session's tool set; running %s",
                    name,
                    version,
                    entry.tool.version,
                )
        return _Rule(None, route, keys, slow)

    # -- the call path ------------------------------------------------------------------------

    def admit(self, call: HookCall) -> ToolError | None:
        entry = call.entry
        rule = self._rule(entry)
        if rule.refusal is not None:
            return rule.refusal
        center = self.center
        trials: tuple[str, ...] = ()
        circuits = center.snapshot.open
        if circuits:
            for key in rule.keys:
                found = circuits.get(key)
                if found is None:
                    continue
                wait = found[1] - time.time()
                if wait > 0 or not center.claim_trial(key):
                    wait = max(wait, 1.0)
                    what = "its server" if key != entry.name else "it"
                    return ToolError(
                        ErrorKind.UNAVAILABLE,
                        f"{entry.name} is failing, so calls to {what} are paused; "
                        f"try again in {wait:.0f} s.",
                        {"retry_after": round(wait, 1)},
                    )
                trials += (key,)
        if (
            center.audit_mode == "required"
            and not entry.read_only
            and not center.audit_ok
            and not trials
        ):
            return ToolError(
                ErrorKind.UNAVAILABLE,
                f"{entry.name} changes things, and the audit cannot be written right now; "
                "try again later.",
            )
        if rule.route is not None:
            call.route(rule.route)
        call.hook_data = _Admitted(_perf(), trials)
        return None

    def after(self, call: HookCall, result: CallResult) -> None:
        self._finish(call, result)

    def on_error(self, call: HookCall, result: CallResult) -> None:
        self._finish(call, result)

    def _finish(self, call: HookCall, result: CallResult) -> None:
        admitted = call.hook_data
        duration: float | None = None
        error = result.error
        center = self.center
        if type(admitted) is _Admitted:
            duration = (_perf() - admitted.started) * 1000
            rule = self._rule(call.entry)
            if error is not None and error.kind not in _FAILURES:
                # Refused or invalid: the tool did not run, so it says nothing of health.
                for key in admitted.trials:
                    center.outcome(key, None, True)
            else:
                failed = error is not None or duration > rule.slow_ms
                for key in rule.keys:
                    center.outcome(key, failed, key in admitted.trials)
        if center.audit_mode == "off":
            return
        center.record_call(
            (
                time.time(),
                self.session.session_id,
                self.role,
                call.entry.name,
                call.entry.tool.version or None,
                _digest(call.arguments),
                "ok" if error is None else "error",
                None if error is None else error.kind.value,
                duration,
            )
        )


def _digest(arguments: Any) -> str | None:
    """A short digest of validated arguments (the audit never keeps the arguments)."""
    if arguments is None:
        return None
    if isinstance(arguments, BaseModel):
        data = arguments.model_dump_json().encode()
    elif not arguments:
        return _EMPTY
    else:
        try:
            data = _encode(arguments).encode()
        except (TypeError, ValueError):
            data = repr(arguments).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()


_encode = json.JSONEncoder(sort_keys=True, default=str).encode
_EMPTY = hashlib.blake2b(b"{}", digest_size=12).hexdigest()
