"""W10's data: (query, history, relevant tools, catalogue) cases from the Berkeley
Function-Calling Leaderboard's data (the ``bfcl-eval`` package, Apache-2.0, read as
files: its code is never imported) and from our own labelled set over the packs' tools
(``benchmarks/data/retrieval_labelled.jsonl``); and the retrieval metrics."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolweave.inject import Classifier, ToolDoc, tool_doc, tool_docs

__all__ = [
    "PACKS",
    "Case",
    "Metrics",
    "Suite",
    "bfcl_dir",
    "evaluate",
    "labelled",
    "multi_turn",
    "pack_docs",
    "single_turn",
    "split_of",
]

DATA = Path(__file__).resolve().parents[1] / "data"
LABELLED = DATA / "retrieval_labelled.jsonl"

SINGLE_TURN = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
"""BFCL's single-turn categories with ground truth (``possible_answer/``)."""
IRRELEVANCE = ("irrelevance", "live_irrelevance")
"""BFCL's categories where no offered function fits the request."""
MULTI_TURN_CLASSES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
"""The multi-turn API classes and their function files (``multi_turn_func_doc/``)."""
PACKS = ("fs", "shell", "search", "plan", "web", "memory", "skills")
"""The packs of the labelled set (built-in, then contrib)."""
HELD_OUT = 3
"""Cases whose id hashes to 0–2 (of 10) are held out: never looked at while tuning."""

_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\(")


@dataclass(frozen=True)
class Case:
    """One request and the tools that answer it.

    Attributes:
        id: Where it comes from (``bfcl:multiple_12``, ``labelled:7``).
        query: The turn's user message.
        history: The previous user turns, oldest first.
        relevant: The tools that answer it (empty: none does).
        offered: For an irrelevance row, the tools BFCL offered with it (none fits);
            an answer naming any of them is a false injection.
        split: ``dev`` (tuning) or ``held-out``.
    """

    id: str
    query: str
    history: tuple[str, ...] = ()
    relevant: frozenset[str] = frozenset()
    offered: frozenset[str] = frozenset()
    split: str = "dev"


@dataclass
class Suite:
    """A catalogue and its cases."""

    name: str
    docs: list[ToolDoc]
    cases: list[Case] = field(default_factory=list)
    negatives: list[Case] = field(default_factory=list)
    definitions: dict[str, Any] = field(default_factory=dict)
    """The provider-neutral definition of each tool (name, description, parameters),
    for counting the tokens of what is injected."""
    negative_docs: list[ToolDoc] = field(default_factory=list)
    """The catalogue the negatives are ranked over, when it is not ``docs`` (it must
    hold the tools offered with them)."""


def split_of(key: str) -> str:
    """``held-out`` for about 30 % of keys (a stable hash), else ``dev``."""
    digest = hashlib.sha256(key.encode()).digest()
    return "held-out" if digest[0] % 10 < HELD_OUT else "dev"


def bfcl_dir() -> Path | None:
    """The ``bfcl_eval/data`` folder of the installed ``bfcl-eval``, if any."""
    try:
        dist = importlib.metadata.distribution("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file("bfcl_eval/data")))
    return path if path.is_dir() else None


def _lines(path: Path) -> Iterable[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


_TAG_LETTERS = "bcdfghjklmnpqrstvwxz"
"""Consonants: a variant's tag is one made-up word no request contains."""


def _description(function: Mapping[str, Any]) -> str:
    return str(function.get("description", ""))


def _keys(functions: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """Each BFCL function's catalogue name, by (name, description): the name itself
    when the pool offers it with one description; else the name and a tag of its
    description (``get_weather~kzqd``; the same name comes with different descriptions
    in different rows).

    The tag is a word of consonants that no request contains, so that what tells the
    variants apart adds no match of its own: a hash in hex digits would, for numbers
    ("40" in a request against ``area_circle~40bab8``).
    """
    descriptions: dict[str, set[str]] = {}
    for function in functions:
        descriptions.setdefault(str(function["name"]), set()).add(_description(function))
    keys: dict[tuple[str, str], str] = {}
    for name, texts in descriptions.items():
        for text in texts:
            if len(texts) == 1:
                keys[name, text] = name
                continue
            digest = hashlib.sha1(text.encode()).digest()
            tag = "".join(_TAG_LETTERS[b % len(_TAG_LETTERS)] for b in digest[:6])
            keys[name, text] = f"{name}~{tag}"
    if len(set(keys.values())) != len(keys):  # pragma: no cover - 20**6 tags per name
        raise ValueError("two BFCL function variants got the same catalogue name")
    return keys


def _doc(function: Mapping[str, Any], key: str, groups: Sequence[str] = ()) -> ToolDoc:
    return tool_doc(
        key,
        _description(function),
        function.get("parameters") if isinstance(function.get("parameters"), Mapping) else None,
        groups=groups,
    )


def _user_turns(question: Sequence[Any]) -> list[str]:
    """The user messages of each turn, a turn's messages joined."""
    out: list[str] = []
    for turn in question:
        messages = turn if isinstance(turn, list) else [turn]
        out.append(
            " ".join(str(m.get("content", "")) for m in messages if m.get("role") in ("user", None))
        )
    return out


def single_turn(data: Path, *, pooled: bool = False) -> Suite:
    """BFCL single-turn: a case per row with ground truth (the last user message,
    earlier turns as history), ranked over the pooled catalogue of every distinct
    function offered in the single-turn categories; a negative per irrelevance row,
    ranked over that catalogue plus the functions the irrelevance rows offer (an answer
    naming one offered with the row is a false injection).

    With ``pooled``, the cases too are ranked over the catalogue with the irrelevance
    rows' functions (622 more topical neighbours), and there are no negatives.
    """
    docs: dict[str, ToolDoc] = {}
    extra: dict[str, ToolDoc] = {}
    suite = Suite("bfcl-single-pooled" if pooled else "bfcl-single", [])
    rows = {c: list(_lines(data / f"BFCL_v4_{c}.json")) for c in (*SINGLE_TURN, *IRRELEVANCE)}
    keys = _keys(f for category in rows.values() for row in category for f in row["function"])
    for category, category_rows in rows.items():
        answers: dict[str, Any] = {}
        answer_file = data / "possible_answer" / f"BFCL_v4_{category}.json"
        if answer_file.exists():
            answers = {row["id"]: row["ground_truth"] for row in _lines(answer_file)}
        catalogue = extra if category in IRRELEVANCE and not pooled else docs
        for row in category_rows:
            by_name: dict[str, str] = {}
            for function in row["function"]:
                key = keys[function["name"], _description(function)]
                by_name.setdefault(function["name"], key)
                if key not in docs and key not in extra:
                    catalogue[key] = _doc(function, key)
                    suite.definitions[key] = function
            turns = _user_turns(row["question"])
            if not turns:
                continue
            query, history = turns[-1], tuple(t for t in turns[:-1] if t)
            case_id = f"bfcl:{row['id']}"
            if category in IRRELEVANCE:
                if not pooled:
                    suite.negatives.append(
                        Case(
                            case_id,
                            query,
                            history,
                            offered=frozenset(by_name.values()),
                            split=split_of(case_id),
                        )
                    )
                continue
            truth = answers.get(row["id"])
            if not truth:
                continue
            relevant = frozenset(
                by_name[name] for call in truth for name in call if name in by_name
            )
            if relevant:
                suite.cases.append(Case(case_id, query, history, relevant, split=split_of(case_id)))
    suite.docs = list(docs.values())
    if extra:
        suite.negative_docs = [*suite.docs, *extra.values()]
    return suite


def multi_turn(data: Path, category: str = "multi_turn_base") -> Suite:
    """The multi-turn catalogue (every function of the 8 API classes, pooled; each
    function's class is its group, as a server's tools are in a registry) and one
    case per turn that calls something: the turn's user message, the previous user
    turns as history, the functions its ground-truth call strings name."""
    docs: dict[str, ToolDoc] = {}
    by_name: dict[str, str] = {}
    files = [
        (cls, list(_lines(data / "multi_turn_func_doc" / f"{stem}.json")))
        for cls, stem in MULTI_TURN_CLASSES.items()
    ]
    keys = _keys(function for _, functions in files for function in functions)
    for cls, functions in files:
        for function in functions:
            key = keys[function["name"], _description(function)]
            by_name.setdefault(function["name"], key)
            docs.setdefault(key, _doc(function, key, (cls,)))
    suite = Suite("bfcl-multi", list(docs.values()))
    answers = {
        row["id"]: row["ground_truth"]
        for row in _lines(data / "possible_answer" / f"BFCL_v4_{category}.json")
    }
    for row in _lines(data / f"BFCL_v4_{category}.json"):
        turns = _user_turns(row["question"])
        split = split_of(f"bfcl:{row['id']}")  # a conversation stays in one split
        for i, (text, calls) in enumerate(zip(turns, answers.get(row["id"], ()), strict=False)):
            names = {m.group(1).rsplit(".", 1)[-1] for c in calls if (m := _CALL.match(c))}
            relevant = frozenset(by_name[n] for n in names if n in by_name)
            if text and relevant:
                history = tuple(t for t in turns[:i] if t)
                suite.cases.append(
                    Case(f"bfcl:{row['id']}#{i}", text, history, relevant, split=split)
                )
    return suite


def pack_docs(packs: Sequence[str] = PACKS) -> tuple[list[ToolDoc], list[str]]:
    """The documents of the packs' tools (as the injector builds them) and the packs
    that could not be imported."""
    from toolweave.plugins import PackManager

    manager = PackManager(strict=True)
    missing: list[str] = []
    for name in packs:
        try:
            module = importlib.import_module(f"toolweave_{name}")
        except ImportError:
            missing.append(name)
            continue
        manager.add(name, module.pack)
    toolset = manager.builder().build()
    return tool_docs(toolset.entries), missing


def labelled(docs: Sequence[ToolDoc], path: Path = LABELLED) -> Suite:
    """Our labelled requests over the packs' tools (``relevant: []`` rows are
    negatives: every pack tool counts as offered)."""
    names = frozenset(d.name for d in docs)
    suite = Suite("labelled", list(docs))
    for i, row in enumerate(_lines(path)):
        case_id = f"labelled:{i}"
        relevant = frozenset(row["relevant"]) & names
        history = tuple(row.get("history", ()))
        if not row["relevant"]:
            suite.negatives.append(Case(case_id, row["query"], history, offered=names))
        elif relevant:
            suite.cases.append(Case(case_id, row["query"], history, relevant))
    return suite


@dataclass
class Metrics:
    """Retrieval quality over cases (means; ``false_injection`` over negatives)."""

    n: int = 0
    recall1: float = 0.0
    recall5: float = 0.0
    recall15: float = 0.0
    all15: float = 0.0
    mrr: float = 0.0
    abstained: float = 0.0
    negatives: int = 0
    false_injection: float = 0.0


def evaluate(
    classifier: Classifier,
    cases: Sequence[Case],
    negatives: Sequence[Case] = (),
    *,
    k: int = 15,
    use_history: bool = True,
) -> Metrics:
    """Recall@1/5/15, all relevant in the top 15, MRR and the share of abstentions over
    ``cases``; the false-injection rate over ``negatives`` (an answer naming a tool
    offered with the request, though none fits)."""
    m = Metrics(n=len(cases), negatives=len(negatives))
    for case in cases:
        got = [c.name for c in classifier.rank(case.query, case.history if use_history else (), k)]
        rel = case.relevant
        if not got:
            m.abstained += 1
        for cut, attr in ((1, "recall1"), (5, "recall5"), (k, "recall15")):
            hit = len(rel.intersection(got[:cut])) / len(rel)
            setattr(m, attr, getattr(m, attr) + hit)
        if rel.issubset(got[:k]):
            m.all15 += 1
        for rank, name in enumerate(got, start=1):
            if name in rel:
                m.mrr += 1.0 / rank
                break
    if cases:
        for attr in ("recall1", "recall5", "recall15", "all15", "mrr", "abstained"):
            setattr(m, attr, getattr(m, attr) / len(cases))
    for case in negatives:
        answer = classifier.rank(case.query, case.history if use_history else (), k)
        if any(c.name in case.offered for c in answer):
            m.false_injection += 1
    if negatives:
        m.false_injection /= len(negatives)
    return m
