"""The injector against hostile or careless input: bounded word caches, explicit names
over global groups, refused backtracking rule patterns, escaped CLI output, no query
text in the log, non-string descriptions, linear value patterns, short search echoes."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import ToolSetBuilder, tool
from toolweave.catalog._external import external_tool
from toolweave.center import Center
from toolweave.errors import ConfigError, UsageError
from toolweave.inject import Injector, KeywordClassifier, _lexical, _text
from toolweave.inject._docs import tool_doc
from toolweave.inject._rules import RuleClassifier, compile_rules
from toolweave.runtime._session import Session

TOOLS = {
    "read_notes": "Read the user's notes. Do not use it to change them.",
    "send_email": "Send an email. Not for chat messages.",
    "read_inbox": "Read the emails in the inbox. Do not use it to send email.",
    "refund_order": "Refund a customer's order. Not for invoices.",
    "create_invoice": "Create an invoice for an order. Not for refunds.",
}


def _tool(name: str, text: str) -> Any:
    async def run(subject: str = "") -> str:
        return f"{name}: done with {subject}"

    run.__name__ = name
    run.__doc__ = f"{text}\n\n    Args:\n        subject: What to work on.\n    "
    return tool(blocking=False)(run)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    builder = ToolSetBuilder()
    for name, text in TOOLS.items():
        builder.add(_tool(name, text))
    return builder.build().session(workspace=tmp_path)


def _ext(name: str, description: Any) -> Any:
    async def call(ctx: Any, arguments: dict[str, Any]) -> str:
        return "ok"

    return external_tool(
        id=name,
        namespace="x",
        description=description,
        input_schema={"type": "object", "properties": {}},
        call=call,
        source="mcp:x",
    )


# -- 1. the word caches hold short words only, and are bounded in size ----------------------


def _long_word(seed: int, n: int = 2_000) -> str:
    rnd = random.Random(seed)
    return "q" + "".join(rnd.choice("bcdfghjklmnpqrstvwxz") for _ in range(n - 1))


def test_long_words_are_not_cached_but_still_analysed() -> None:
    """A hostile word of thousands of letters is stemmed and cut into n-grams as any
    other, but no process-wide cache keeps it (nor its n-grams)."""
    word = _long_word(1)
    assert _text.words(f"refund {word}") == [_text.stem("refund"), _text.stem(word)]
    assert word not in _text._normal
    found = _text.grams(word)
    assert len(found) == len(word) + 2 - _text.GRAM + 1
    assert found[0] == "#" + word[:3]
    assert found[-1] == word[-3:] + "#"
    assert word not in _text._grams
    assert max(map(len, _text._normal), default=0) <= _text.CACHED_WORD
    assert max(map(len, _text._grams), default=0) <= _text.CACHED_WORD
    # short words are still cached (the common path stays a dictionary look-up)
    assert _text.words("invoices") == [_text.stem("invoices")]
    assert "invoices" in _text._normal


def test_the_gram_cache_is_bounded_by_its_grams(monkeypatch: pytest.MonkeyPatch) -> None:
    """The n-gram cache stops taking words once it holds its budget of n-grams."""
    monkeypatch.setattr(_text, "_grams", {})
    monkeypatch.setattr(_text, "_grams_held", 0)
    monkeypatch.setattr(_text, "_GRAMS_MAX", 50)
    words = [f"word{'x' * (i % 7)}{chr(97 + i % 26)}{i}" for i in range(200)]
    out = _text.grams(" ".join(words))
    assert len(out) > 50
    held = sum(len(g) for g in _text._grams.values())
    assert held == _text._grams_held <= 50
    assert 0 < len(_text._grams) < len(words)


def test_hostile_turns_leave_no_large_cache_entries(session: Session) -> None:
    """Turns of one unique 8,000-letter word each (with character n-grams on) add
    nothing to the word caches, and the cache of recent messages' terms keeps not their
    8,000 n-grams and stays within its byte budget: memory stays flat."""
    from toolweave.inject import IntentConfig, default_classifiers

    cfg = IntentConfig(char_grams=1.0, embed=False)
    injector = Injector(session, classifier=default_classifiers(cfg), cap=3)
    injector.select("refund my order")
    normal, grams = len(_text._normal), len(_text._grams)
    budget = _lexical._terms.budget
    for i in range(20):
        message = _long_word(100 + i, 7_999)
        injector.select(message, history=[message])
        injector.end_turn()
        # 8,000 n-grams: over a 64th of the budget, not kept (its one stem may be)
        assert ("grams", message) not in _lexical._terms._entries
    assert len(_text._normal) == normal
    assert len(_text._grams) == grams
    assert _lexical._terms.held <= budget


def test_the_term_cache_is_bounded_by_size() -> None:
    """The cache of recent texts' terms evicts the least recently used past its byte
    budget, and does not keep an entry over a 64th of it."""
    cache = _lexical._TextCache(max_entries=1000, budget=64 * 1024)
    big = "x" * 2_000
    assert cache.get(("words", big), lambda t: [t] * 100) == (big,) * 100
    assert len(cache) == 0  # 2,000 + 64 x 100 bytes > 1,024
    for i in range(500):
        cache.get(("words", f"text {i}"), str.split)
    assert cache.held <= cache.budget
    assert 0 < len(cache) < 500
    assert ("words", "text 499") in cache._entries
    assert ("words", "text 0") not in cache._entries


# -- 2. a tool named explicitly is explicit, even when a global group holds it ---------------


def test_an_explicit_name_in_a_global_group_is_kept_as_explicit(session: Session) -> None:
    injector = Injector(
        session,
        classifier=KeywordClassifier(),
        groups={"read_notes": ["local_core"], "read_inbox": ["local_core"]},
        global_groups=["local_core"],
        cap=1,
    )
    selection = injector.select("hello", explicit=["read_inbox"])
    assert selection.names == ["read_inbox"]
    (choice,) = selection.chosen
    assert choice.reason == "explicit"
    assert choice.tags == ("local_core",)  # its global group is still shown
    assert "global" in choice.detail
    assert [(d.name, d.why, d.wanted) for d in selection.trimmed] == [
        ("read_notes", "cap", "global")
    ]
    # with room for both, the order is the catalogue's global order, reasons kept apart
    wide = Injector(
        session,
        classifier=KeywordClassifier(),
        groups={"read_notes": ["local_core"], "read_inbox": ["local_core"]},
        global_groups=["local_core"],
        cap=5,
        search=False,
    )
    both = wide.select("hello", explicit=["read_inbox"])
    assert [(c.name, c.reason) for c in both.chosen] == [
        ("read_notes", "global"),
        ("read_inbox", "explicit"),
    ]


# -- 3. rule patterns that backtrack exponentially are refused ------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        r"(\w+\s?)+invoice",
        r"(a*)*b",
        r"(?:x+y){2,}",
        r"((a+))+$",
        r"(?i:(a+)+)",
        r"(?=(a+)+)x",
        r"(a+){2}b",
        r"(?P<x>a)(?(x)(b+)+|c)",
    ],
)
def test_a_nested_repeat_rule_is_refused(pattern: str) -> None:
    with pytest.raises(ConfigError) as info:
        RuleClassifier({"billing": ["invoice", pattern]})
    (issue,) = info.value.issues
    assert issue.tag == "unsafe_rule"
    assert issue.path == "intent.rules.billing[1]"
    assert "'billing'" in issue.message
    assert repr(pattern) in issue.message


def test_the_default_classifiers_refuse_it_when_configured() -> None:
    from toolweave.inject import IntentConfig, default_classifiers

    with pytest.raises(ConfigError, match="unsafe_rule"):
        default_classifiers(IntentConfig(rules={"billing": [r"(\w+\s?)+invoice"]}, embed=False))


@pytest.mark.parametrize(
    "pattern",
    [
        "invoice",
        "credit note",
        "bill-to",
        "client's order",
        r"refunds?",
        r"\binv\w*",
        r"(\w++\s?)+invoice",  # possessive inner repeat
        r"(?>\w+\s?)+invoice",  # atomic inner repeat
        r"(a|b)+c",
        r"(ab){1,3}\d+",
    ],
)
def test_keywords_and_flat_patterns_are_accepted(pattern: str) -> None:
    (compiled,) = compile_rules({"billing": [pattern]})["billing"]
    assert isinstance(compiled, re.Pattern)


def test_a_pattern_that_cannot_be_parsed_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        compile_rules({"billing": ["(("]})
    assert info.value.issues[0].tag == "invalid_rule"


# -- 4. the CLI shows names as they are, never as markup -------------------------------------


@pytest.mark.parametrize("name", ["[/]", "[link=file:///etc/passwd]click[/link]", "[bold]x"])
def test_cli_select_escapes_names(name: str) -> None:
    pytest.importorskip("typer", reason="the CLI extra (toolweave[cli]) is not installed")
    from toolweave.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(
        app,
        ["select", "hello", "--packs", "fs", "--cap", "1", "--explicit", name],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert name in result.stdout
    assert "this is a bug" not in result.output


# -- 5. the log keeps a digest of a search query, never its text ----------------------------


def test_the_log_keeps_no_query_text(session: Session, tmp_path: Path) -> None:
    card = "4111-1111-1111-1111"
    with Center.open(tmp_path / "c.db", poll_interval=0.05) as center:
        center.attach(session, role="clerk")
        injector = Injector(session, classifier=KeywordClassifier(), cap=2)
        injector.select(f"my card {card} was charged twice, refund the order")
        found = injector.search(f"send email about card {card}")
        assert found
        assert all(card not in c.detail for c in found)
        injector.flush()
        entries = center.audit(type="selection")
    assert len(entries) == 2
    for entry in entries:
        assert card not in json.dumps(entry.after)
        assert card not in (entry.reason or "")
    (search,) = [e for e in entries if e.outcome == "search"]
    assert all(f["detail"] == f"query {search.digest}" for f in search.after["found"])


# -- 6. a description that is not a string ------------------------------------------------------


@pytest.mark.parametrize("description", [None, 123, ["a list"]])
def test_external_tool_refuses_a_non_string_description(description: Any) -> None:
    with pytest.raises(UsageError, match="description"):
        _ext("odd", description)


def test_the_document_builder_reads_only_string_descriptions(session: Session) -> None:
    assert tool_doc("odd", 123).description == ""  # type: ignore[arg-type]
    assert tool_doc("odd", None).description == ""  # type: ignore[arg-type]
    odd = _ext("odd", "Refund things. Not for x.")
    object.__setattr__(odd, "description", 123)  # set behind the constructor's back
    session.register_external(odd, name="odd", prefix="")
    selection = Injector(session, classifier=KeywordClassifier(), cap=3).select("refund")
    assert "refund_order" in selection.names


# -- 7. value patterns run in linear time and find what the plain forms find -----------------

_PLAIN_FORMS = {
    "email": re.compile(r"\b[\w.+-]+@[\w-]+\.\w[\w.]*\b"),
    "path": re.compile(
        r"(?:\b[A-Za-z]:)?(?:[\\/][\w.-]+){2,}"
        r"|\b[\w-]+\.(?:txt|csv|json|md|pdf|py|log|xml|ya?ml|docx?|xlsx?)\b",
        re.IGNORECASE,
    ),
    "money": re.compile(
        r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:dollars?|euros?|usd|eur|gbp)\b", re.IGNORECASE
    ),
}
"""The quadratic forms the patterns replaced: the same matches, slower."""


def test_value_patterns_are_the_linear_forms() -> None:
    """Each run of a local part, file name or amount is entered once, from its start (a
    look-behind), and taken possessively: no retry from every character of the run."""
    stated = dict(_text._STATED)
    assert r"(?<![\w.+-])[.+-]*+\w[\w.+-]*+@" in stated["email"].pattern
    assert r"(?<![\w-])-*+\w[\w-]*+\." in stated["path"].pattern
    assert r"(?<![\d,.])(?=[\d,.]*?\b\d)[\d,.]++" in stated["money"].pattern


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("mail bob.smith+x@example.co.uk now", {"email"}),
        ("-.@example.com", set()),
        ("a.@example.com", {"email"}),
        ("open notes/today.md and C:\\tmp\\a.txt", {"path"}),
        ("open my-file.pdf", {"path"}),
        ("pay 1,250.00 dollars", {"money"}),
        ("pay abc1,250 usd", {"money"}),
        ("pay x12 usd", set()),
        ("pay €30", {"money"}),
        ("1." * 4000, set()),
        ("1," * 4000 + " usd", {"money"}),
        ("a." * 3999 + "b@", set()),
        ("a-" * 4000 + ".txt", {"path"}),
    ],
)
def test_value_types_on_ordinary_and_hostile_text(text: str, kinds: set[str]) -> None:
    found = {k.removeprefix(_text.VALUE_PREFIX) for k in _text.value_types(text)}
    assert found & {"email", "path", "money"} == kinds


def test_value_patterns_match_as_the_plain_forms_did() -> None:
    """Over random text of the characters that matter, each pattern finds a match
    exactly where its plain form does."""
    stated = dict(_text._STATED)
    alphabets = {"email": "ab1_.+-@ x!é", "path": "ab1_-. txtmd/\\:C", "money": "12,. $usdeurUS a_"}
    tails = {
        "email": ["@x.com", "@a-b.c", "@.c", ""],
        "path": [".txt", ".md", ""],
        "money": [" usd", "usd", "eur", " dollars", ""],
    }
    rnd = random.Random(7)
    for kind, plain in _PLAIN_FORMS.items():
        for _ in range(20_000):
            text = "".join(rnd.choice(alphabets[kind]) for _ in range(rnd.randint(0, 12)))
            text += rnd.choice(tails[kind])
            assert bool(stated[kind].search(text)) == bool(plain.search(text)), (kind, text)


# -- search_tools echoes a short preview of a huge query ------------------------------------


def test_search_tools_echoes_a_short_preview(session: Session) -> None:
    injector = Injector(session, classifier=KeywordClassifier(), cap=2)
    injector.select("read my notes")
    query = "refund " * 100_000
    reply = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "search_tools", "arguments": json.dumps({"query": query})},
            }
        ],
    }
    (message,) = anyio.run(injector.run_tool_calls, reply, "openai")
    assert len(message["content"]) < 1_000
    result = anyio.run(session.call, "search_tools", {"query": "zzz " * 10_000})
    assert len(result.output["query"]) < 300
    assert len(result.text) < 1_000
