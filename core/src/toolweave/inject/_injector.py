"""The injector: the few tools one session's model sees in one turn.

The path of a turn, top to bottom in :meth:`Injector.select`: global groups, explicit
names, intent candidates (the classifier over the message and the recent history) →
the role, status, breaker and listing filter (the registry center's snapshot) → the
cap, trimmed by confidence → the log → :meth:`Selection.definitions
<toolweave.inject.Selection.definitions>` with the ``search_tools`` meta-tool for what
was left out.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, final

from toolweave.catalog._describe import says_what_not
from toolweave.center import AuditEntry, Center, CenterHook, Status
from toolweave.errors import UsageError, preview
from toolweave.inject._classify import Classifier
from toolweave.inject._docs import tool_docs
from toolweave.inject._fusion import default_classifiers
from toolweave.inject._search import (
    SEARCH_NAME,
    KeywordClassifier,
    deferred,
    responses_tool_search,
    search_tool,
)
from toolweave.inject._selection import Choice, Dropped, Selection

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry
    from toolweave.center import Snapshot
    from toolweave.policy import PolicyHook
    from toolweave.results import CallResult
    from toolweave.runtime._session import Session

__all__ = ["Injector"]

logger = logging.getLogger("toolweave")

_OFF = {Status.DISABLED: "disabled", Status.QUARANTINED: "quarantined", Status.OFFLINE: "offline"}
_RESPONSES = frozenset({"openai-responses", "openai-responses-strict"})
_MARGIN = 15
"""Candidates asked for beyond the cap (some are filtered, the rest reported trimmed)."""


MAX_TEXT = 8000
"""Characters of a message (or query) the classifiers read: the last ones of a longer
one (selection time and memory stay bounded whatever a message holds)."""


def _text(value: object, what: str) -> str:
    """``value`` as the classifiers read it: its last :data:`MAX_TEXT` characters, NUL
    bytes as spaces, characters UTF-8 cannot carry (lone surrogates) as ``?``.

    Raises:
        UsageError: ``value`` is not a string.
    """
    if not isinstance(value, str):
        raise UsageError(f"{what} is text, not {type(value).__name__}")
    text = value[-MAX_TEXT:].replace("\x00", " ")
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _name_of(definition: Mapping[str, Any]) -> str:
    """The tool name of a rendered definition, whatever the format."""
    name = definition.get("name")
    if isinstance(name, str):
        return name
    function = definition.get("function")
    if isinstance(function, Mapping):
        return str(function.get("name", ""))
    return ""


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=12).hexdigest()


def default_classifier() -> Classifier:
    """The default fusion (:func:`~toolweave.inject.default_classifiers` with its
    defaults); :class:`~toolweave.inject.KeywordClassifier` when it cannot be built
    (``bm25s`` missing: ``pip install 'toolweave[inject]'``)."""
    try:
        return default_classifiers(None)
    except Exception as exc:
        logger.warning(
            "the default intent classifiers cannot be built (%s); using keywords "
            "(hint: pip install 'toolweave[inject]')",
            exc,
        )
        return KeywordClassifier()


@final
class Injector:
    """Chooses the tools of each turn of one session.

    Modes combine: **global** groups attached to every turn; **intent**: the
    classifier's candidates for the turn's message (and the recent history), each with
    its confidence; **explicit** names from the host or an orchestrator; and the
    model's own **search** (a ``search_tools`` meta-tool, or the provider's native tool
    search) for what was left out. The **role** and **status** filter reads the
    registry center: tools the session's role may not use, disabled, quarantined,
    offline and circuit-open tools never appear (an offline MCP server's tools are
    named in the selection's :attr:`~Selection.note` with a standard hint). A hard
    **cap** trims intent candidates by confidence; explicit names are kept over global
    groups, and both over intent candidates. Every selection is logged: to the center's
    audit (entries of type ``selection``) when there is a center, else to the
    ``toolweave`` logger (``INFO``).

    Selections are temporary: the injector keeps only the current turn's, dropped at
    the next :meth:`select`, at :meth:`end_turn` and when the session closes.

    Args:
        session: The session whose tools are chosen from (its listing, the center's
            routed versions included, is what :meth:`Selection.definitions` renders).
        center: The registry center (default: the one the session is attached to).
        role: The session's role (default: the role it was attached with).
        classifier: Ranks tools for a message (default: the default fusion when it is
            installed, else :class:`KeywordClassifier`); it also answers searches.
        intent: Use the classifier to inject tools (``False``: global and explicit
            only; the search still uses the classifier).
        global_groups: Groups whose tools are in every turn (``local_core``).
        groups: Groups by tool name, for sessions without a center (added to the
            center's).
        cap: At most this many injected tools per turn (found tools come on top, at
            most ``cap`` per turn as well).
        min_confidence: Intent candidates below this confidence are left out (the
            classifier's own abstention comes first).
        history_turns: How many recent turns of the history the classifier sees.
        negatives: Name up to this many close-but-excluded tools in the note as not to
            be called (``0``: none).
        search: Offer the search meta-tool.
        search_name: Its client name.
        search_limit: Tools one search returns by default.
        log: Log selections (``False``: not at all).

    Example:
        ```python
        injector = Injector(session, global_groups=["local_core"], cap=10)
        selection = injector.select("show me what is in README.md")
        tools = selection.definitions("openai")
        messages += await injector.run_tool_calls(reply, "openai")
        ```
    """

    def __init__(
        self,
        session: Session,
        *,
        center: Center | None = None,
        role: str | None = None,
        classifier: Classifier | None = None,
        intent: bool = True,
        global_groups: Iterable[str] = (),
        groups: Mapping[str, Iterable[str]] | None = None,
        cap: int = 15,
        min_confidence: float = 0.0,
        history_turns: int = 3,
        negatives: int = 0,
        search: bool = True,
        search_name: str = SEARCH_NAME,
        search_limit: int = 5,
        log: bool = True,
    ) -> None:
        if cap < 1:
            raise UsageError(f"the cap is at least 1, not {cap}")
        self.session = session
        hook = next((h for h in session.hooks if isinstance(h, CenterHook)), None)
        if center is None and hook is not None:
            center = hook.center
        if role is None and hook is not None and hook.center is center:
            role = hook.role
        self.center = center
        self.role = role
        self.classifier: Classifier = classifier if classifier is not None else default_classifier()
        self.intent = intent
        self.global_groups = frozenset(global_groups)
        self.groups = {k: tuple(v) for k, v in (groups or {}).items()}
        self.cap = cap
        self.min_confidence = min_confidence
        self.history_turns = max(0, history_turns)
        self.negatives = max(0, int(negatives))
        self.search_enabled = search
        self.search_name = search_name
        self.search_limit = max(1, min(20, search_limit))
        self.log = log
        self._current: Selection | None = None
        self._turns = 0
        self._closed = False
        self._listings: dict[str, tuple[int, dict[str, Any]]] = {}
        self._refused: dict[tuple[ToolEntry, str | None, int, int], bool] = {}
        self._search_defs: dict[str, list[Any]] = {}
        self._index_key: tuple[object, int] | None = None
        self._index_groups: dict[str, tuple[str, ...]] | None = None
        self._global: list[tuple[str, tuple[str, ...]]] = []
        self._warned: set[str] = set()
        self._search_entry: ToolEntry | None = None
        if search:
            if session.resolve(search_name) is not None:
                raise UsageError(
                    f"the session already has a tool named {search_name!r}; give the "
                    "injector another search_name"
                )
            self._search_entry = session.register_external(
                search_tool(self, search_name), name=search_name, prefix=""
            )
            session.set_listed(search_name, False)  # listed by selections only
        session.on_close(self.close)

    def __repr__(self) -> str:
        return f"<Injector {self.session.session_id} role={self.role!r} cap={self.cap}>"

    # -- the turn -----------------------------------------------------------------------

    @property
    def current(self) -> Selection | None:
        """The current turn's selection (``None`` between turns)."""
        return self._current

    def select(
        self,
        message: str = "",
        *,
        history: Sequence[str] = (),
        explicit: Iterable[str] | None = None,
        exact: bool = False,
        turn: int | None = None,
    ) -> Selection:
        """Choose the tools of a new turn (the previous turn's selection is dropped).

        Args:
            message: The turn's user message.
            history: Earlier messages of the conversation, oldest first (the last
                ``history_turns`` are given to the classifier).
            explicit: Tool names the host or an orchestrator wants in this turn (still
                role- and status-filtered).
            exact: Use exactly the ``explicit`` tools: no global groups, no intent
                candidates, no search.
            turn: The turn's number (default: one more than the last).

        Returns:
            The selection; :meth:`Selection.definitions` renders it.

        Raises:
            UsageError: The injector (or its session) is closed.
        """
        if self._closed:
            raise UsageError("this injector is closed (its session ended)")
        message = _text(message, "the message")
        history = [_text(h, "a message of the history") for h in history]
        started = time.perf_counter()
        self._current = None
        self._turns = turn if turn is not None else self._turns + 1
        snap = self._snapshot()
        now = time.time()
        listed = self._listing("neutral")
        self._ensure_index(snap)
        chosen: dict[str, Choice] = {}
        filtered: list[Dropped] = []
        offline: dict[str, list[str]] = {}

        refused: set[str] = set()

        def admit(choice: Choice) -> None:
            name = choice.name
            if name in chosen or name in refused:
                return
            verdict = self._verdict(name, snap, listed, now)
            if verdict is None:
                chosen[name] = choice
                return
            refused.add(name)
            why, detail = verdict
            filtered.append(Dropped(name, why, choice.reason, choice.confidence, detail))
            if why == "offline":
                offline.setdefault(self._source(name, snap), []).append(name)

        named = [str(name) for name in explicit or ()]
        if not exact:
            wanted = set(named)
            for name, tags in self._global:
                # a global tool also named explicitly counts as explicit (kept over
                # global ones at the cap); its global groups stay in its tags
                if name in wanted:
                    admit(Choice(name, "explicit", None, tags, "global " + ", ".join(tags)))
                else:
                    admit(Choice(name, "global", None, tags))
        for name in named:
            admit(Choice(name, "explicit"))
        below: list[Dropped] = []
        if not exact and self.intent and message.strip():
            recent = list(history)[-self.history_turns :] if self.history_turns else []
            candidates = self.classifier.rank(message, recent, k=self.cap + _MARGIN)
            for c in sorted(candidates, key=lambda c: -c.confidence):
                if c.confidence < self.min_confidence:
                    below.append(Dropped(c.name, "below_threshold", "intent", c.confidence))
                    continue
                admit(Choice(c.name, "intent", c.confidence, c.tags, c.reason))

        kept, trimmed = self._cap(list(chosen.values()))
        trimmed += [d for d in below if d.name not in chosen]
        negatives: tuple[str, ...] = ()
        if self.negatives:
            close = [d.name for d in trimmed if d.wanted == "intent"]
            negatives = tuple(dict.fromkeys(close))[: self.negatives]
        selection = Selection(
            self,
            self.session.session_id,
            self._turns,
            tuple(kept),
            tuple(trimmed),
            tuple(filtered),
            negatives,
            {k: tuple(v) for k, v in offline.items()},
            self.search_enabled and not exact,
            (time.perf_counter() - started) * 1000,
        )
        self._current = selection
        self._log(
            selection,
            "selected" if kept else "empty",
            message,
            selection.duration_ms,
            selection.to_dict(),
        )
        return selection

    def _cap(self, chosen: list[Choice]) -> tuple[list[Choice], list[Dropped]]:
        """Keep at most ``cap`` tools: explicit names first, then global groups, then
        intent candidates by confidence; the rest trimmed (in the order kept)."""
        cap = self.cap
        if len(chosen) <= cap:
            return chosen, []
        explicit = [c for c in chosen if c.reason == "explicit"]
        global_ = [c for c in chosen if c.reason == "global"]
        intent = [c for c in chosen if c.reason == "intent"]
        keep: set[str] = set()
        for choice in [*explicit, *global_, *intent]:
            if len(keep) < cap:
                keep.add(choice.name)
        kept = [c for c in chosen if c.name in keep]
        trimmed = [
            Dropped(c.name, "cap", c.reason, c.confidence, c.detail)
            for c in [*explicit, *global_, *intent]
            if c.name not in keep
        ]
        return kept, trimmed

    def end_turn(self) -> None:
        """Drop the current turn's selection (found tools are forgotten too)."""
        self._current = None

    def close(self) -> None:
        """Drop the selection and write the log (the session calls it when it closes;
        idempotent)."""
        self._current = None
        if self._closed:
            return
        self._closed = True
        self._listings.clear()
        self._search_defs.clear()
        self.flush()

    def flush(self) -> None:
        """Write the queued selection entries to the center's audit now."""
        if self.center is not None:
            self.center.flush_audit()

    # -- search ---------------------------------------------------------------------------

    def search(self, query: str, *, limit: int | None = None) -> list[Choice]:
        """Tools for ``query`` that the turn did not include and the session may use;
        they join the current selection's :attr:`~Selection.found` (what
        ``search_tools`` runs). Outside a turn, or once the turn found ``cap`` tools,
        nothing is found."""
        query = _text(query, "the query")
        selection = self._current
        started = time.perf_counter()
        if selection is None or not selection.search or not query.strip():
            return []
        room = self.cap - len(selection.found)
        want = min(limit or self.search_limit, 20, room)
        if want <= 0:
            return []
        snap = self._snapshot()
        now = time.time()
        listed = self._listing("neutral")
        self._ensure_index(snap)
        taken = set(selection.names)
        found: list[Choice] = []
        for c in self.classifier.rank(query, (), k=want + len(taken) + _MARGIN):
            if c.name in taken or self._verdict(c.name, snap, listed, now) is not None:
                continue
            taken.add(c.name)
            # the query's digest, never its text (the log keeps no message or query)
            found.append(Choice(c.name, "search", c.confidence, c.tags, f"query {_digest(query)}"))
            if len(found) >= want:
                break
        selection.found.extend(found)
        self._log(
            selection,
            "search",
            query,
            (time.perf_counter() - started) * 1000,
            {
                "session": selection.session_id,
                "turn": selection.turn,
                "found": [c.to_dict() for c in found],
            },
        )
        return found

    def _search_text(self, query: str, found: Sequence[Choice]) -> str:
        if not found:
            return (
                f"No other tool matches {preview(query)!r}. Try other words once; if "
                "nothing fits, "
                "do the task with the tools you have or tell the user."
            )
        lines = [f"Found {len(found)} tool(s); call them from your next step on:"]
        listing = self._listing("neutral")
        for choice in found:
            definition = listing.get(choice.name)
            text = str(definition.get("description", "")) if definition is not None else ""
            first = text.split("\n", 1)[0].split(". ", 1)[0].strip()
            lines.append(f"- {choice.name}: {first}" if first else f"- {choice.name}")
        return "\n".join(lines)

    # -- definitions and the host loop ---------------------------------------------------

    def _definitions(self, selection: Selection, format: str, native: bool | None) -> list[Any]:
        fmt = format.strip().lower().replace("_", "-")
        native = True if native is None else native
        anthropic = native and fmt == "anthropic"
        responses = native and fmt in _RESPONSES
        listing = self._listing(format)
        # The listing follows the center (a tool disabled mid-turn leaves it); rules a
        # policy gained mid-turn are applied here (nothing to do without a policy).
        hooks = self._policy_hooks()
        out = [
            listing[c.name]
            for c in selection.chosen
            if c.name in listing and not (hooks and self._policy_refuses(c.name, hooks))
        ]
        searching = selection.search and self._search_entry is not None
        if responses:
            return [*out, responses_tool_search()] if searching else out
        if searching:
            out += self._search_definition(format)
        if not anthropic:
            # found tools last: the prefix sent before the search stays as it was
            return out + [
                listing[c.name]
                for c in selection.found
                if c.name in listing and not (hooks and self._policy_refuses(c.name, hooks))
            ]
        if searching:
            snap = self._snapshot()
            now = time.time()
            listed = self._listing("neutral")
            chosen = {c.name for c in selection.chosen}
            for name, definition in listing.items():
                if name not in chosen and self._verdict(name, snap, listed, now) is None:
                    out.append(deferred(definition))
        return out

    def _search_definition(self, format: str) -> list[Any]:
        found = self._search_defs.get(format)
        if found is None:
            from toolweave.formats import render

            assert self._search_entry is not None
            found = self._search_defs[format] = render([self._search_entry.definition], format)
        return found

    async def run_tool_calls(
        self, message: Any, provider: str = "openai", *, native: bool | None = None
    ) -> list[dict[str, Any]]:
        """Run every tool call of a model reply and return the messages (or input
        items) to append, as :meth:`Session.run_tool_calls
        <toolweave.Session.run_tool_calls>` does, answering searches in the provider's
        native form: ``tool_reference`` blocks for Anthropic, ``tool_search_output``
        items for the Responses API's ``tool_search_call`` (``native=False``: a plain
        text result everywhere, as the plain ``search_tools`` definitions expect).
        """
        from toolweave.formats._calls import get, items_of
        from toolweave.formats._calls import provider as find_provider

        name = find_provider(provider).name
        native = True if native is None else native
        if native and name == "openai-responses":
            output = get(message, "output")
            items = items_of(output if output is not None else message)
            if any(get(i, "type") == "tool_search_call" for i in items):
                return await self._responses_calls(items)
        if native and name == "anthropic":
            return await self._anthropic_calls(message)
        return await self.session.run_tool_calls(message, name)

    async def _responses_calls(self, items: list[Any]) -> list[dict[str, Any]]:
        from toolweave.formats._calls import get

        calls = [i for i in items if get(i, "type") == "function_call"]
        results = iter(
            await self.session.run_tool_calls(calls, "openai-responses") if calls else []
        )
        out: list[dict[str, Any]] = []
        for item in items:
            kind = get(item, "type")
            if kind == "function_call":
                out.append(next(results))
            elif kind == "tool_search_call" and (get(item, "execution") or "client") == "client":
                arguments = get(item, "arguments")
                call_id = get(item, "call_id")
                result = await self.session.call(
                    self.search_name, arguments if arguments is not None else {}, call_id
                )
                listing = self._listing(self._responses_format())
                tools = [listing[n] for n in _found_names(result) if n in listing]
                out.append(
                    {
                        "type": "tool_search_output",
                        "call_id": call_id,
                        "execution": "client",
                        "status": "completed",
                        "tools": tools,
                    }
                )
        return out

    def _responses_format(self) -> str:
        for fmt in ("openai-responses-strict", "openai-responses"):
            if fmt in self._listings:
                return fmt
        return "openai-responses"

    async def _anthropic_calls(self, message: Any) -> list[dict[str, Any]]:
        from toolweave.formats import anthropic
        from toolweave.formats._calls import _without_optional_nulls

        calls = [_without_optional_nulls(self.session, c) for c in anthropic.parse_calls(message)]
        if not any(c.name == self.search_name for c in calls):
            return await self.session.run_tool_calls(message, "anthropic")
        results = await self.session.call_many(calls)
        messages = anthropic.result_messages(results)
        for block, result in zip(messages[0]["content"] if messages else [], results, strict=True):
            if result.name == self.search_name and result.error is None:
                names = _found_names(result)
                if names:
                    block["content"] = [{"type": "tool_reference", "tool_name": n} for n in names]
        return messages

    # -- the view of the session and the center ------------------------------------------

    def _snapshot(self) -> Snapshot | None:
        return self.center.snapshot if self.center is not None else None

    def _listing(self, format: str) -> dict[str, Any]:
        """The session's current listing in ``format`` by name (rendered once per
        format and listing version, shared with the session)."""
        version = self.session.listing_version
        cached = self._listings.get(format)
        if cached is None or cached[0] != version:
            definitions = self.session.definitions(format)
            cached = (version, {_name_of(d): d for d in definitions})
            self._listings[format] = cached
        return cached[1]

    def _source(self, name: str, snap: Snapshot | None) -> str:
        record = snap.records.get(name) if snap is not None else None
        if record is not None:
            return record.source
        entry = self.session.resolve(name)
        return entry.tool.source if entry is not None else ""

    def _verdict(
        self, name: str, snap: Snapshot | None, listed: Mapping[str, Any], now: float
    ) -> tuple[str, str] | None:
        """Why ``name`` may not be in a turn (``(why, detail)``), or ``None``."""
        if name == self.search_name or self.session.resolve(name) is None:
            return ("unknown", "")
        source = self._source(name, snap)
        if snap is not None:
            if name in snap.records:
                roles = snap.roles.get(name)
                if roles is not None and self.role not in roles:
                    return ("role", "")
                status = snap.status.get(name, Status.ENABLED)
                off = _OFF.get(status)
                if off is not None:
                    return (off, snap.reasons.get(name, ""))
            circuits = snap.open
            if circuits:
                for key in (name, source) if source.startswith("mcp:") else (name,):
                    found = circuits.get(key)
                    if found is not None and found[1] > now:
                        return ("circuit_open", "" if key == name else key)
        if self._policy_refuses(name):
            return ("policy", "")
        if name not in listed:
            if name in self.session.unlisted and source.startswith("mcp:"):
                return ("offline", source)
            return ("unlisted", "")
        return None

    def _policy_hooks(self) -> list[PolicyHook]:
        """The session's policy hooks (most sessions have none)."""
        from toolweave.policy import PolicyHook

        return [hook for hook in self.session.hooks if isinstance(hook, PolicyHook)]

    def _policy_refuses(self, name: str, hooks: Sequence[PolicyHook] | None = None) -> bool:
        """Whether the session's permission rules refuse every call of ``name`` (a
        ``deny`` without a pattern for it, for the session's role), as they stand now
        (rules added to the session count)."""
        from toolweave.policy import Effect

        for hook in self._policy_hooks() if hooks is None else hooks:
            entry = self.session.resolve(name)
            if entry is None:
                return False
            key = (entry, hook.role, len(hook.added), id(hook))
            refused = self._refused.get(key)
            if refused is None:
                if len(self._refused) > 4096:
                    self._refused.clear()
                fixed = hook.policy.for_entry(entry, hook.role, hook.added).fixed
                refused = self._refused[key] = fixed is not None and fixed.effect is Effect.DENY
            if refused:
                return True
        return False

    def _ensure_index(self, snap: Snapshot | None) -> None:
        """(Re)index the session's tools when they or their groups changed."""
        key = (snap, self.session.external_version)
        if key == self._index_key:
            return
        entries = [
            e
            for e in (*self.session.toolset.entries, *self.session.external.values())
            if e.name != self.search_name
        ]
        groups: dict[str, tuple[str, ...]] = {}
        for entry in entries:
            mine = self.groups.get(entry.name, ())
            theirs = snap.groups.get(entry.name, ()) if snap is not None else ()
            if mine or theirs:
                groups[entry.name] = tuple(dict.fromkeys((*theirs, *mine)))
        external_changed = self._index_key is None or self._index_key[1] != key[1]
        if external_changed or groups != self._index_groups:
            self.classifier.index(tool_docs(entries, groups))
            self._index_groups = groups
            self._global = [
                (e.name, tuple(g for g in groups.get(e.name, ()) if g in self.global_groups))
                for e in entries
                if self.global_groups.intersection(groups.get(e.name, ()))
            ]
            self._warn_descriptions(entries)
        self._index_key = key

    def _warn_descriptions(self, entries: Sequence[ToolEntry]) -> None:
        missing = [
            e.name
            for e in entries
            if e.name not in self._warned
            and not (isinstance(e.description, str) and says_what_not(e.description))
        ]
        if missing:
            self._warned.update(missing)
            shown = ", ".join(missing[:10]) + (", ..." if len(missing) > 10 else "")
            logger.warning(
                "%d tool description(s) do not say what the tool must not be used for "
                "(the injector relies on it): %s",
                len(missing),
                shown,
            )

    # -- the log --------------------------------------------------------------------------

    def _log(
        self, selection: Selection, outcome: str, text: str, ms: float, data: dict[str, Any]
    ) -> None:
        if not self.log:
            return
        chosen = len(selection.chosen)
        summary = (
            f"turn {selection.turn}: {chosen} tool(s), {len(selection.found)} found, "
            f"{len(selection.trimmed)} trimmed, {len(selection.filtered)} filtered"
        )
        if self.center is not None:
            self.center.record(
                AuditEntry(
                    at=time.time(),
                    type="selection",
                    session=selection.session_id,
                    role=self.role,
                    digest=_digest(text),
                    outcome=outcome,
                    duration_ms=round(ms, 3),
                    actor="injector",
                    after=data,
                    reason=summary,
                )
            )
        elif logger.isEnabledFor(logging.INFO):
            logger.info(
                "selection %s %s",
                outcome,
                json.dumps(data, sort_keys=True, separators=(",", ":")),
                extra={"toolweave_selection": data},
            )


def _found_names(result: CallResult) -> list[str]:
    """The names a ``search_tools`` result found."""
    output = result.output
    if result.error is not None or not isinstance(output, Mapping):
        return []
    return [str(f["name"]) for f in output.get("found", ()) if isinstance(f, Mapping)]
