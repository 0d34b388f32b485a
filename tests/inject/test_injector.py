"""The injector: each mode alone and combined, the cap, the role and status filters on a
real SQLite center, negative samples, the log, temporary selections, and
``search_tools`` in every provider format through a scripted host loop, its shapes
validated against the providers' SDK types."""

from __future__ import annotations

import gc
import json
import logging
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import TypeAdapter
from toolweave import ToolSetBuilder, tool
from toolweave.catalog._external import external_tool
from toolweave.center import BreakerSettings, Center
from toolweave.inject import (
    OFFLINE_HINT,
    Candidate,
    Injector,
    KeywordClassifier,
    Selection,
    ToolDoc,
    says_what_not,
)
from toolweave.inject._injector import _name_of
from toolweave.runtime._session import Session
from toolweave.testing import ScriptedModel, step

# -- a small catalogue and a classifier whose answers the tests choose -------------------


def _tool(name: str, text: str) -> Any:
    async def run(subject: str = "") -> str:
        return f"{name} ran on {subject or 'nothing'}"

    run.__name__ = name
    run.__doc__ = f"""{text}

    Args:
        subject: What to work on.
    """
    return tool(blocking=False)(run)


TOOLS = {
    "read_file": "Read a text file. Do not use it for directories.",
    "list_dir": "List a directory. Do not use it to read files.",
    "send_email": "Send an email to someone. Not for chat messages.",
    "read_inbox": "Read the emails in the inbox. Do not use it to send email.",
    "query_db": "Query the orders database with SQL. Never for writes.",
    "update_db": "Change rows of the orders database. Do not use it for reads.",
    "create_invoice": "Create an invoice for an order. Not for refunds.",
    "refund_order": "Refund an order. Not for invoices.",
    "weather": "Tell the weather of a city. Not for forecasts beyond a week.",
    "translate": "Translate text. Do not use it to summarise.",
}
GROUPS = {
    "read_file": ["local_core"],
    "list_dir": ["local_core"],
    "send_email": ["mail"],
    "read_inbox": ["mail"],
    "query_db": ["db"],
    "update_db": ["db"],
    "create_invoice": ["billing"],
    "refund_order": ["billing"],
}


class Scripted:
    """A classifier answering fixed candidates per keyword (the tests' own)."""

    name = "scripted"

    def __init__(self, answers: dict[str, list[tuple[str, float]]]) -> None:
        self.answers = answers
        self.indexed: list[ToolDoc] = []
        self.seen: tuple[str, tuple[str, ...]] | None = None

    def index(self, docs: Sequence[ToolDoc]) -> None:
        self.indexed = list(docs)

    def rank(self, query: str, history: Sequence[str] = (), k: int = 15) -> list[Candidate]:
        self.seen = (query, tuple(history))  # the last only: memory is measured
        out: list[Candidate] = []
        for word, found in self.answers.items():
            if word in query:
                out += [Candidate(n, c, f"scripted {c}", ("intent",)) for n, c in found]
        return sorted(out, key=lambda c: -c.confidence)[:k]


ANSWERS = {
    "email": [("send_email", 0.9), ("read_inbox", 0.6), ("translate", 0.2)],
    "order": [
        ("query_db", 0.8),
        ("create_invoice", 0.7),
        ("refund_order", 0.5),
        ("update_db", 0.4),
    ],
    "orders database": [("query_db", 0.9), ("update_db", 0.5)],
}


def _session(tmp_path: Path, **kw: Any) -> Session:
    builder = ToolSetBuilder()
    for name, text in TOOLS.items():
        builder.add(_tool(name, text))
    return builder.build().session(workspace=tmp_path, **kw)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return _session(tmp_path)


@pytest.fixture
def center(tmp_path: Path) -> Iterator[Center]:
    with Center.open(tmp_path / "center.db", poll_interval=0.05) as c:
        yield c


def _names(selection: Selection) -> list[str]:
    return selection.names


# -- modes ------------------------------------------------------------------------------


def test_global_groups_alone(session: Session) -> None:
    """Global groups put their tools in every turn, whatever the message."""
    injector = Injector(
        session, classifier=Scripted({}), groups=GROUPS, global_groups=["local_core"]
    )
    for message in ("hello", "send an email", ""):
        selection = injector.select(message)
        assert _names(selection) == ["read_file", "list_dir"]
        assert {c.reason for c in selection.chosen} == {"global"}
        assert selection.chosen[0].tags == ("local_core",)


def test_intent_alone(session: Session) -> None:
    """Intent candidates come by confidence, with their tags and the classifier's words;
    the classifier sees the recent history."""
    classifier = Scripted(ANSWERS)
    injector = Injector(session, classifier=classifier, history_turns=2)
    selection = injector.select("please send an email", history=["a", "b", "c"])
    assert _names(selection) == ["send_email", "read_inbox", "translate"]
    first = selection.chosen[0]
    assert (first.reason, first.confidence, first.tags) == ("intent", 0.9, ("intent",))
    assert classifier.seen == ("please send an email", ("b", "c"))
    assert {d.name for d in classifier.indexed} == set(TOOLS)  # search_tools is not indexed


def test_explicit_alone(session: Session) -> None:
    """``exact``: exactly the explicit tools, no global, intent or search."""
    injector = Injector(
        session, classifier=Scripted(ANSWERS), groups=GROUPS, global_groups=["local_core"]
    )
    selection = injector.select("send an email", explicit=["weather", "nope"], exact=True)
    assert _names(selection) == ["weather"]
    assert selection.chosen[0].reason == "explicit"
    assert [(d.name, d.why) for d in selection.filtered] == [("nope", "unknown")]
    assert not selection.search
    assert [d["function"]["name"] for d in selection.definitions("openai")] == ["weather"]


def test_modes_combined_in_order(session: Session) -> None:
    """Global first, then explicit, then intent by confidence; a tool named twice once."""
    injector = Injector(
        session, classifier=Scripted(ANSWERS), groups=GROUPS, global_groups=["local_core"]
    )
    selection = injector.select("an email", explicit=["weather", "read_inbox"])
    assert _names(selection) == [
        "read_file",
        "list_dir",
        "weather",
        "read_inbox",
        "send_email",
        "translate",
    ]
    assert [c.reason for c in selection.chosen] == [
        "global",
        "global",
        "explicit",
        "explicit",
        "intent",
        "intent",
    ]
    names = [d["function"]["name"] for d in selection.definitions("openai")]
    assert names == [*_names(selection), "search_tools"]


def test_min_confidence_and_abstention(session: Session) -> None:
    """Candidates under the threshold are reported, not injected; no candidate, no tool."""
    injector = Injector(session, classifier=Scripted(ANSWERS), min_confidence=0.5)
    selection = injector.select("an email")
    assert _names(selection) == ["send_email", "read_inbox"]
    assert [(d.name, d.why) for d in selection.trimmed] == [("translate", "below_threshold")]
    assert injector.select("what is the meaning of life").chosen == ()


# -- cap --------------------------------------------------------------------------------


def test_cap_trims_intent_by_confidence_keeping_global_and_explicit(session: Session) -> None:
    """Over the cap, the least confident candidates go first; explicit and global stay."""
    injector = Injector(
        session,
        classifier=Scripted(ANSWERS),
        groups=GROUPS,
        global_groups=["local_core"],
        cap=5,
    )
    selection = injector.select("an order email", explicit=["weather"])
    assert _names(selection) == ["read_file", "list_dir", "weather", "send_email", "query_db"]
    assert [(d.name, d.why, d.confidence) for d in selection.trimmed] == [
        ("create_invoice", "cap", 0.7),
        ("read_inbox", "cap", 0.6),
        ("refund_order", "cap", 0.5),
        ("update_db", "cap", 0.4),
        ("translate", "cap", 0.2),
    ]


def test_cap_keeps_explicit_over_global(session: Session) -> None:
    """When global and explicit alone pass the cap, explicit names are kept first."""
    injector = Injector(
        session, classifier=Scripted(ANSWERS), groups=GROUPS, global_groups=["db"], cap=2
    )
    selection = injector.select("", explicit=["weather", "translate"])
    assert _names(selection) == ["weather", "translate"]
    assert [(d.name, d.wanted) for d in selection.trimmed] == [
        ("query_db", "global"),
        ("update_db", "global"),
    ]


def test_cap_must_be_positive(session: Session) -> None:
    """A cap under 1 is a usage error."""
    from toolweave.errors import UsageError

    with pytest.raises(UsageError):
        Injector(session, cap=0)


# -- the center's filters ------------------------------------------------------------------


def test_role_status_breaker_filters(session: Session, center: Center) -> None:
    """Role, disabled, quarantined, offline and circuit-open tools never appear."""
    center.attach(session, role="clerk", groups=GROUPS)
    center.set_roles("update_db", ["admin"])
    center.disable("refund_order", reason="incident 7")
    center.set_status("create_invoice", "quarantined")
    center.set_status("read_inbox", "offline")
    center.configure_breaker("send_email", BreakerSettings(failures=1, cooldown=60))
    center.outcome("send_email", True, False)  # one failure opens it
    injector = Injector(session, classifier=Scripted(ANSWERS))
    assert (injector.center, injector.role) == (center, "clerk")
    selection = injector.select("an order email", explicit=["update_db"])
    assert _names(selection) == ["query_db", "translate"]
    why = {d.name: (d.why, d.wanted) for d in selection.filtered}
    assert why == {
        "update_db": ("role", "explicit"),
        "send_email": ("circuit_open", "intent"),
        "read_inbox": ("offline", "intent"),
        "create_invoice": ("quarantined", "intent"),
        "refund_order": ("disabled", "intent"),
    }
    assert next(d for d in selection.filtered if d.name == "refund_order").detail == "incident 7"
    definitions = json.dumps(selection.definitions("anthropic"))
    for name in why:
        assert f'"{name}"' not in definitions  # not even deferred
    center.reset_breaker("send_email")
    center.enable("refund_order")
    assert "refund_order" in _names(injector.select("an order"))
    assert "send_email" in _names(injector.select("an email"))


def test_admin_role_sees_its_tools(session: Session, center: Center) -> None:
    """A session whose role is on the whitelist gets the tool."""
    center.attach(session, role="admin", groups=GROUPS)
    center.set_roles("update_db", ["admin"])
    injector = Injector(session, classifier=Scripted(ANSWERS))
    assert "update_db" in _names(injector.select("an order"))


def _remote(session: Session, server: str, name: str) -> None:
    async def call(ctx: Any, arguments: dict[str, Any]) -> str:
        return "remote"

    handle = external_tool(
        id=name,
        namespace=f"mcp_{server}",
        description=f"{name} on {server}. Do not use it offline.",
        input_schema={"type": "object", "properties": {}},
        call=call,
        source=f"mcp:{server}",
    )
    session.register_external(handle, name=f"{server}__{name}", prefix="")


def test_offline_mcp_server_hint(session: Session) -> None:
    """An offline MCP server's tools (hidden by the pool) are left out with the hint."""
    _remote(session, "github", "create_issue")
    _remote(session, "github", "list_issues")
    injector = Injector(
        session,
        classifier=Scripted(
            {"issue": [("github__create_issue", 0.9), ("github__list_issues", 0.8)]}
        ),
    )
    assert _names(injector.select("open an issue")) == [
        "github__create_issue",
        "github__list_issues",
    ]
    session.set_listed("github__create_issue", False)  # what MCPPool does when it goes
    session.set_listed("github__list_issues", False)
    selection = injector.select("open an issue")
    assert _names(selection) == []
    assert {d.why for d in selection.filtered} == {"offline"}
    assert dict(selection.offline) == {
        "mcp:github": ("github__create_issue", "github__list_issues")
    }
    hint = OFFLINE_HINT.format(server="github", tools="github__create_issue, github__list_issues")
    assert hint in selection.note


# -- negative samples -----------------------------------------------------------------------


def test_negative_samples(session: Session) -> None:
    """Close-but-excluded tools are named in the note as not to be called."""
    injector = Injector(session, classifier=Scripted(ANSWERS), cap=2, negatives=2)
    selection = injector.select("an order")
    assert _names(selection) == ["query_db", "create_invoice"]
    assert selection.negatives == ("refund_order", "update_db")
    assert "do not call them" in selection.note
    assert "refund_order, update_db" in selection.note
    assert (
        Injector(_session_like(session), classifier=Scripted(ANSWERS), cap=2)
        .select("an order")
        .note
        == ""
    )


def _session_like(session: Session) -> Session:
    return session.toolset.session(workspace=session.workspace)


# -- the log --------------------------------------------------------------------------------


def test_log_in_the_center_audit(session: Session, center: Center) -> None:
    """Each selection is an audit entry of type selection: session, turn, tools with
    reasons, trimmed and filtered; a search adds one more."""
    center.attach(session, role="clerk", groups=GROUPS)
    center.disable("refund_order")
    injector = Injector(session, classifier=Scripted(ANSWERS), global_groups=["local_core"], cap=4)
    injector.select("an order", turn=7)
    found = injector.search("orders database")
    assert [c.name for c in found] == ["update_db"]
    injector.flush()
    entries = center.audit(type="selection", session=session.session_id)
    assert [e.outcome for e in entries] == ["search", "selected"]
    search, selected = entries
    assert (selected.role, selected.actor, selected.session) == (
        "clerk",
        "injector",
        session.session_id,
    )
    assert selected.digest
    assert "an order" not in json.dumps(selected.after)
    data = selected.after
    assert data["turn"] == 7
    assert data["chosen"] == [
        {"name": "read_file", "reason": "global", "tags": ["local_core"]},
        {"name": "list_dir", "reason": "global", "tags": ["local_core"]},
        {"name": "query_db", "reason": "intent", "confidence": 0.8, "tags": ["intent"], "detail": "scripted 0.8"},
        {"name": "create_invoice", "reason": "intent", "confidence": 0.7, "tags": ["intent"], "detail": "scripted 0.7"},
    ]  # fmt: skip
    assert data["trimmed"] == [
        {"name": "update_db", "why": "cap", "wanted": "intent", "confidence": 0.4, "detail": "scripted 0.4"}
    ]  # fmt: skip
    assert data["filtered"] == [
        {"name": "refund_order", "why": "disabled", "wanted": "intent", "confidence": 0.5}
    ]
    assert selected.reason == "turn 7: 4 tool(s), 0 found, 1 trimmed, 1 filtered"
    assert search.after["found"][0]["name"] == "update_db"
    assert search.after["found"][0]["reason"] == "search"


def test_log_without_a_center(session: Session, caplog: pytest.LogCaptureFixture) -> None:
    """Without a center the selection goes to the toolweave logger."""
    injector = Injector(session, classifier=Scripted(ANSWERS))
    with caplog.at_level(logging.INFO, logger="toolweave"):
        injector.select("an email")
    records = [r for r in caplog.records if r.getMessage().startswith("selection selected")]
    assert len(records) == 1
    data = records[0].toolweave_selection
    assert data["session"] == session.session_id
    assert data["turn"] == 1
    assert [c["name"] for c in data["chosen"]] == ["send_email", "read_inbox", "translate"]


# -- temporary selections ---------------------------------------------------------------------


def test_turns_replace_and_session_end_clears(session: Session) -> None:
    """Each turn replaces the last selection (found tools included); end_turn and the
    session's end drop it, and a closed injector refuses new turns."""
    from toolweave.errors import UsageError

    injector = Injector(session, classifier=Scripted(ANSWERS))
    first = injector.select("an email")
    assert injector.search("orders database")
    assert first.found
    assert injector.current is first
    second = injector.select("an email")
    assert second.found == []
    assert injector.current is second
    injector.end_turn()
    assert injector.current is None
    assert injector.search("orders database") == []  # outside a turn, nothing is found
    injector.select("an email")
    anyio.run(session.aclose)
    assert injector.current is None
    with pytest.raises(UsageError):
        injector.select("an email")


def test_memory_stays_flat_over_10000_turns(session: Session) -> None:
    """Ten thousand turns (each with a search) leave no trace in memory."""
    injector = Injector(
        session, classifier=Scripted(ANSWERS), global_groups=["local_core"], groups=GROUPS
    )

    def turns(n: int) -> None:
        for i in range(n):
            injector.select("an order email" if i % 2 else "an email", history=["x"] * 5)
            injector.search("orders database")
            injector.current.definitions("openai") if injector.current else None

    turns(200)  # caches warm
    gc.collect()
    tracemalloc.start()
    try:
        turns(1000)
        gc.collect()
        early, _ = tracemalloc.get_traced_memory()
        turns(9000)
        gc.collect()
        late, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert late - early < 64 * 1024, f"memory grew by {late - early} bytes over 9000 turns"


# -- descriptions ---------------------------------------------------------------------------


def test_description_heuristic() -> None:
    """The heuristic accepts the usual ways of saying what a tool is not for."""
    for text in (
        "Read a file. Do not use it for directories.",
        "Read a file. Don't use it for images.",
        "Read a file; not for binary files.",
        "Send mail. Never use it for chat.",
        "Search text. To find files by name, use glob instead.",
        "Read tasks. This tool only reads tasks that exist.",
        "Reads rather than writes.",
    ):
        assert says_what_not(text), text
    assert not says_what_not("Read a file from the workspace and return its lines.")


def test_builtin_packs_say_what_not() -> None:
    """Every tool of the built-in packs installed here states what it must not do."""
    from toolweave.plugins import PackManager

    manager = PackManager()
    manager.discover(autoload=True, environ={})
    toolset = manager.builder().build()
    assert len(toolset) > 0
    missing = [e.name for e in toolset if not says_what_not(e.description)]
    assert missing == []


def test_injector_warns_about_descriptions(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The injector warns once about tools whose description lacks the statement."""
    builder = ToolSetBuilder()
    builder.add(_tool("vague", "Does things with stuff."))
    session = builder.build().session(workspace=tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolweave"):
        injector = Injector(session, classifier=KeywordClassifier())
        injector.select("things")
        injector.select("stuff")
    warned = [r for r in caplog.records if "must not be used for" in r.getMessage()]
    assert len(warned) == 1
    assert "vague" in warned[0].getMessage()


# -- search_tools in every provider format, through a scripted host loop --------------------


def _conforms(value: Any, typed: Any) -> None:
    """``value`` validates as the SDK type ``typed`` and has no key the type lacks."""
    checked = TypeAdapter(typed).validate_python(value)
    if isinstance(value, dict):
        assert set(checked) == set(value), f"keys unknown to {typed}: {set(value) - set(checked)}"


def _injector_for_loop(session: Session) -> Injector:
    return Injector(
        session,
        classifier=KeywordClassifier(),
        groups=GROUPS,
        global_groups=["local_core"],
        intent=False,
    )


def _tool_names(definitions: list[Any]) -> list[str]:
    return [
        d.get("name") or d["function"]["name"]
        for d in definitions
        if d.get("type") != "tool_search"
    ]


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
def test_search_tools_plain_host_loop(session: Session, provider: str) -> None:
    """The plain meta-tool: the model searches, the found tool is listed after the
    injected ones in the next step, and the model calls it."""
    fmt = provider
    injector = _injector_for_loop(session)
    selection = injector.select("what is the refund status of order 12?")
    before = selection.definitions(fmt, native=False)
    assert _tool_names(before) == ["read_file", "list_dir", "search_tools"]
    _validate_definitions(fmt, before, native=False)
    model = ScriptedModel(
        [
            step("search_tools", {"query": "refund an order"}),
            step("refund_order", {"subject": "order 12"}, contains="refund_order ran"),
        ],
        provider=provider,
    )

    async def loop() -> list[Any]:
        tools = before
        transcript: list[Any] = []
        for index in range(len(model.replies)):
            reply = model.reply(index)
            for call in model.replies[index]:
                assert call.name in _tool_names(tools)  # the model calls what it sees
            transcript += await injector.run_tool_calls(reply, provider, native=False)
            tools = selection.definitions(fmt, native=False)
        return transcript

    transcript = anyio.run(loop)
    after = selection.definitions(fmt, native=False)
    assert _tool_names(after)[:3] == _tool_names(before)  # the prefix is unchanged
    assert _tool_names(after)[3] == "refund_order"
    assert next(c.reason for c in selection.found) == "search"
    text = json.dumps(transcript)
    assert "refund_order" in text
    assert "refund_order ran on order 12" in text
    _validate_definitions(fmt, after, native=False)


def test_search_tools_mcp_format(session: Session) -> None:
    """In the MCP format the meta-tool is a plain MCP tool."""
    mcp_types = pytest.importorskip("mcp.types")
    injector = _injector_for_loop(session)
    definitions = injector.select("hello").definitions("mcp")
    assert _tool_names(definitions)[-1] == "search_tools"
    for definition in definitions:
        mcp_types.Tool.model_validate(definition)


def test_search_native_anthropic_host_loop(session: Session) -> None:
    """Anthropic: other tools deferred, the search answered with tool_reference blocks,
    the tool list unchanged between steps (cache-stable), the found tool callable."""
    anthropic_types = pytest.importorskip("anthropic.types")
    injector = _injector_for_loop(session)
    selection = injector.select("refund order 12")
    tools = selection.definitions("anthropic")
    names = _tool_names(tools)
    assert names[:3] == ["read_file", "list_dir", "search_tools"]
    assert [d.get("defer_loading", False) for d in tools][:3] == [False, False, False]
    assert all(d["defer_loading"] for d in tools[3:])
    assert set(names[3:]) == set(TOOLS) - {"read_file", "list_dir"}
    for definition in tools:
        _conforms(definition, anthropic_types.ToolParam)
    model = ScriptedModel(
        [
            step("search_tools", {"query": "refund an order"}),
            step("refund_order", {"subject": "order 12"}),
        ],
        provider="anthropic",
    )

    async def loop() -> list[Any]:
        messages: list[Any] = []
        for index in range(len(model.replies)):
            reply = model.reply(index)
            _conforms(reply, anthropic_types.MessageParam)
            messages += [reply, *await injector.run_tool_calls(reply, "anthropic")]
            assert selection.definitions("anthropic") == tools  # unchanged: cache-stable
        return messages

    messages = anyio.run(loop)
    search_result = messages[1]["content"][0]
    assert search_result["content"][0] == {"type": "tool_reference", "tool_name": "refund_order"}
    for message in messages:
        _conforms(message, anthropic_types.MessageParam)
    assert messages[3]["content"][0]["content"] == "refund_order ran on order 12"
    assert next(c.name for c in selection.found) == "refund_order"


def test_search_native_openai_responses_host_loop(session: Session) -> None:
    """OpenAI Responses: a client tool_search; its tool_search_call is answered with a
    tool_search_output carrying the found definitions, then the model calls one."""
    responses = pytest.importorskip("openai.types.responses")
    from openai.types.responses.response_input_item_param import ToolSearchCall
    from openai.types.responses.response_tool_search_output_item_param_param import (
        ResponseToolSearchOutputItemParamParam,
    )

    injector = _injector_for_loop(session)
    selection = injector.select("refund order 12")
    tools = selection.definitions("openai-responses")
    assert _tool_names(tools) == ["read_file", "list_dir"]
    assert tools[-1]["type"] == "tool_search"
    assert tools[-1]["execution"] == "client"
    _conforms(tools[-1], responses.ToolSearchToolParam)
    for definition in tools[:-1]:
        _conforms(definition, responses.FunctionToolParam)
    search_call = {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": "call_s1",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": "refund an order"},
    }
    _conforms(search_call, ToolSearchCall)
    model = ScriptedModel(
        [step("refund_order", {"subject": "order 12"})], provider="openai-responses"
    )

    async def loop() -> list[Any]:
        items: list[Any] = [search_call]
        outputs = await injector.run_tool_calls([search_call], "openai-responses")
        items += outputs
        assert selection.definitions("openai-responses") == tools  # unchanged
        reply = model.reply(0)
        items += reply
        items += await injector.run_tool_calls(reply, "openai-responses")
        return items

    items = anyio.run(loop)
    output = items[1]
    assert output["type"] == "tool_search_output"
    assert output["call_id"] == "call_s1"
    assert next(t["name"] for t in output["tools"]) == "refund_order"
    _conforms(output, ResponseToolSearchOutputItemParamParam)
    for definition in output["tools"]:
        _conforms(definition, responses.FunctionToolParam)
    assert items[-1]["output"] == "refund_order ran on order 12"
    _conforms(items, responses.ResponseInputParam)


def _validate_definitions(fmt: str, definitions: list[Any], *, native: bool) -> None:
    if fmt == "openai":
        chat = pytest.importorskip("openai.types.chat")
        for d in definitions:
            _conforms(d, chat.ChatCompletionFunctionToolParam)
    elif fmt == "openai-responses":
        responses = pytest.importorskip("openai.types.responses")
        for d in definitions:
            _conforms(d, responses.FunctionToolParam)
    elif fmt == "anthropic":
        anthropic_types = pytest.importorskip("anthropic.types")
        for d in definitions:
            _conforms(d, anthropic_types.ToolParam)
    elif fmt == "gemini":
        genai = pytest.importorskip("google.genai.types")
        genai.Tool.model_validate({"functionDeclarations": definitions})


def test_cli_select_prints_reasons_and_logs_to_the_center(tmp_path: Path) -> None:
    """`toolweave select` prints the chosen tools with reasons and confidences (JSON and
    table) and, with --center, logs the selection in the center's audit."""
    pytest.importorskip("typer", reason="the CLI extra (toolweave[cli]) is not installed")
    from toolweave.cli import app
    from typer.testing import CliRunner

    runner = CliRunner()
    store = tmp_path / "center.db"
    args = ["select", "read the README file", "--packs", "fs", "--cap", "2", "--json"]
    result = runner.invoke(app, [*args, "--center", str(store), "--role", "dev"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["chosen"]) == 2
    assert all(c["reason"] == "intent" and "confidence" in c for c in data["chosen"])
    assert {d["why"] for d in data["trimmed"]} <= {"cap", "below_threshold"}
    with Center.open(store) as c:
        (entry,) = c.audit(type="selection")
    assert entry.role == "dev"
    assert entry.after["chosen"] == data["chosen"]
    table = runner.invoke(app, ["select", "read the README file", "--packs", "fs"])
    assert table.exit_code == 0, table.output
    assert "read_file" in table.stdout
    assert "intent" in table.stdout


# -- the session's permission rules and hostile text ----------------------------------------


def test_tools_the_permission_rules_refuse_are_never_injected_nor_found(
    session: Session,
) -> None:
    """A tool the session's rules deny outright (for its role) is filtered as
    ``policy``, from the turn and from search; one refused only for some arguments (a
    rule with a pattern) stays."""
    from toolweave.policy import attach_policy

    attach_policy(
        session,
        {"deny": ["refund_order", "read_file(*.env)"], "roles": {"trial": {"deny": ["send_email"]}}},
        role="trial",
    )  # fmt: skip
    injector = Injector(session, classifier=Scripted(ANSWERS))
    selection = injector.select("an order and an email", explicit=["read_file"])
    assert {"refund_order", "send_email"}.isdisjoint(_names(selection))
    assert {"read_file", "read_inbox", "query_db"} <= set(_names(selection))
    assert {d.name: d.why for d in selection.filtered} == {
        "refund_order": "policy",
        "send_email": "policy",
    }
    assert "refund_order" not in [c.name for c in injector.search("refund the order")]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai-responses"])
def test_a_tool_denied_mid_turn_leaves_the_turns_definitions(
    session: Session, provider: str
) -> None:
    """A deny the session's policy gains after the turn was selected takes the tool out
    of that turn's definitions at once (chosen and found alike), as a center's status
    change does; the next turn filters it as ``policy``."""
    from toolweave.policy import attach_policy

    hook = attach_policy(session, {})
    injector = Injector(session, classifier=Scripted(ANSWERS))
    selection = injector.select("an email")
    found = [c.name for c in injector.search("an order")]
    assert "send_email" in selection.names
    assert "query_db" in found

    def names() -> set[str]:
        return {_name_of(d) for d in selection.definitions(provider)}

    assert "send_email" in names()
    if provider == "openai":  # found tools are listed after the search
        assert "query_db" in names()
    hook.add_rule("send_email", "deny")
    hook.add_rule("query_db", "deny")
    assert "send_email" not in names()
    assert "query_db" not in names()
    assert "read_inbox" in names()
    after = injector.select("an email")
    assert "send_email" not in after.names
    assert {d.name: d.why for d in after.filtered}["send_email"] == "policy"


@pytest.mark.parametrize(
    "message",
    [
        "refund \udcff the order",  # a lone surrogate (non-UTF-8 bytes decoded leniently)
        "an order\x00\x00 with NUL bytes",
        "order " + "x" * 1_000_000,  # a megabyte: read by its last characters
    ],
)
def test_hostile_text_is_read_not_crashed_on(session: Session, message: str) -> None:
    """What a model or a user sends is read within bounds: a lone surrogate or a NUL
    byte never reaches the classifiers, a huge message is cut to its end; the default
    classifiers answer, and a search with the same text works."""
    from toolweave.inject import MAX_TEXT

    seen = Scripted(ANSWERS)
    injector = Injector(session, classifier=seen)
    injector.select(message, history=[message])
    assert seen.seen is not None
    query, history = seen.seen
    assert len(query) <= MAX_TEXT
    assert all(len(h) <= MAX_TEXT for h in history)
    assert "\x00" not in query
    query.encode("utf-8")  # no lone surrogate left
    real = Injector(session, search_name="find_tools")  # the default classifiers
    real.select(message)
    assert isinstance(real.search(message), list)


def test_text_that_is_not_a_string_is_a_usage_error(session: Session) -> None:
    from toolweave.errors import UsageError

    injector = Injector(session, classifier=Scripted(ANSWERS))
    with pytest.raises(UsageError, match="is text, not bytes"):
        injector.select(b"an order")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="is text, not NoneType"):
        injector.select("an order", history=[None])  # type: ignore[list-item]


class _Opaque:
    """A type pydantic cannot describe as a JSON Schema."""


def test_a_tool_whose_schema_cannot_be_made_is_left_out_of_the_index() -> None:
    """Such a tool is listed nowhere, so the injector indexes the others and selects
    from them instead of failing on it."""

    @tool(blocking=False)
    async def mystery(thing: _Opaque) -> str:
        """Handle a mystery thing. Do not use it for weather."""
        return "?"

    builder = ToolSetBuilder()
    builder.add(_tool("weather", TOOLS["weather"]))
    builder.add(mystery)
    session = builder.build().session()
    selection = Injector(session, search=False).select("what is the weather in Paris")
    assert _names(selection) == ["weather"]
    assert [d["function"]["name"] for d in selection.definitions("openai")] == ["weather"]
