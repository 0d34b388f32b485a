"""W10 tool retrieval: which tools the injector's intent classifiers put in front of the
model, measured on the Berkeley Function-Calling Leaderboard's data and on our own
labelled requests; how fast they select and index; how many tokens selection saves."""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from toolweave.inject import Classifier, ToolDoc, default_classifiers

from twbench._results import Config, Outcome, Row, Table, Target
from twbench._retrieval import (
    Case,
    Metrics,
    Suite,
    bfcl_dir,
    evaluate,
    labelled,
    multi_turn,
    pack_docs,
    single_turn,
)
from twbench._timing import Series
from twbench.frameworks import Framework

__all__ = ["ID", "TITLE", "judge", "run"]

ID = "W10"
TITLE = (
    "tool retrieval: Recall@1/5/15, MRR and false injections of the intent classifiers "
    "(BFCL single- and multi-turn, our labelled set); selection and index speed; tokens saved"
)

RECALL_SINGLE = 0.92
RECALL_MULTI = 0.95
SELECT_1K_MS = 2.0
SELECT_10K_MS = 10.0
BUILD_10K_S = 2.0
TOKENS_SAVED = 0.85

_METRICS = (
    ("recall1", "Recall@1"),
    ("recall5", "Recall@5"),
    ("recall15", "Recall@15"),
    ("all15", "all relevant in top 15"),
    ("mrr", "MRR"),
    ("abstained", "abstained (positives)"),
    ("false_injection", "false-injection rate (irrelevance rows)"),
)


def _classifiers() -> list[tuple[str, Callable[[], Classifier]]]:
    from toolweave.inject._embed import EmbeddingClassifier, embedding_available
    from toolweave.inject._lexical import LexicalClassifier

    out: list[tuple[str, Callable[[], Classifier]]] = [
        ("bm25", lambda: LexicalClassifier(history_decay=0.3))
    ]
    if embedding_available():
        out.append(("embed", lambda: EmbeddingClassifier(history_decay=0.3)))
    out.append(("fusion", lambda: default_classifiers(None)))
    out.append(("fusion+grams", lambda: default_classifiers({"char_grams": 0.5})))
    return out


def _sample(cases: Sequence[Case], n: int, seed: int) -> list[Case]:
    if len(cases) <= n:
        return list(cases)
    return random.Random(seed).sample(list(cases), n)


def _quality(cfg: Config, suites: Sequence[Suite], outcome: Outcome) -> dict[str, Metrics]:
    """Every classifier on every suite and split; the metrics by ``suite/split/name``."""
    results: dict[str, Metrics] = {}
    for suite in suites:
        splits = ("dev", "held-out") if suite.name.startswith("bfcl") else ("all",)
        negatives_on = (
            f"; the negatives over {len(suite.negative_docs):,} (with the tools offered with them)"
            if suite.negative_docs and suite.negatives
            else ""
        )
        table = Table(
            f"{ID}-{suite.name}",
            f"{suite.name}: {len(suite.docs):,} tools in the catalogue{negatives_on}",
            "share",
            ref=None,
            rounds=1,
        )
        for name, factory in _classifiers():
            classifier = factory()
            classifier.index(suite.docs)
            judge_negatives = classifier
            if suite.negative_docs and suite.negatives:
                judge_negatives = factory()
                judge_negatives.index(suite.negative_docs)
            for split in splits:
                cases = [c for c in suite.cases if split in ("all", c.split)]
                negatives = [c for c in suite.negatives if split in ("all", c.split)]
                cases = _sample(cases, cfg.pick(10**9, 60), 10)
                negatives = _sample(negatives, cfg.pick(10**9, 40), 11)
                m = evaluate(classifier, cases)
                on_negatives = evaluate(judge_negatives, (), negatives)
                m.negatives, m.false_injection = (
                    on_negatives.negatives,
                    on_negatives.false_injection,
                )
                results[f"{suite.name}/{split}/{name}"] = m
                for attr, label in _METRICS:
                    if attr == "false_injection" and not m.negatives:
                        continue
                    value = getattr(m, attr)
                    if not 0.0 <= value <= 1.0:
                        outcome.errors.append(f"{ID} {suite.name} {name}: {label} = {value}")
                    count = m.negatives if attr == "false_injection" else m.n
                    table.rows.append(
                        Row(
                            f"{name} {split} {attr}",
                            name,
                            f"{label} ({split}, n={count:,})",
                            f"{type(classifier).__name__}.rank(query, history, k=15)",
                            Series([value]),
                        )
                    )
        table.notes.append(
            "One pass over the cases (no rounds). dev: the split the defaults were chosen on; "
            "held-out: about 30 % of the rows (by a hash of the row id; a multi-turn "
            "conversation stays in one split), never looked at while tuning."
        )
        outcome.tables.append(table)
    return results


def _grow(docs: Sequence[ToolDoc], n: int) -> list[ToolDoc]:
    """``n`` tool documents: ``docs`` repeated under new names."""
    out: list[ToolDoc] = []
    i = 0
    while len(out) < n:
        doc = docs[i % len(docs)]
        copy = i // len(docs)
        out.append(doc if copy == 0 else replace(doc, name=f"{doc.name}_v{copy}"))
        i += 1
    return out


def _speed(
    cfg: Config, docs: Sequence[ToolDoc], queries: Sequence[Case], outcome: Outcome
) -> dict[int, list[str]]:
    """Selection over 1,000 and 10,000 tools, index build of 10,000; the names selected
    at 1,000 tools for each query."""
    from toolweave.inject._embed import embedding_available, load_wordllama

    notes = ""
    if embedding_available():
        t0 = time.perf_counter()
        load_wordllama()
        notes = f"The embedding model's one-time load took {time.perf_counter() - t0:.2f} s (not in the build time). "
    rounds = cfg.rounds_for(5, 1)
    select = Table(
        f"{ID}-select", "selecting the tools for one turn, ms", "ms", ref=None, rounds=rounds
    )
    build = Table(f"{ID}-build", "indexing a catalogue, s", "s", ref=None, rounds=rounds)
    chosen: dict[int, list[str]] = {}
    n_queries = cfg.pick(1000, 50)
    sample = _sample(queries, n_queries, 12)
    for size in (1_000, 10_000):
        catalogue = _grow(docs, size)
        builds: list[float] = []
        medians: list[float] = []
        classifier = default_classifiers(None)
        for _ in range(rounds):
            classifier = default_classifiers(None)
            t0 = time.perf_counter()
            classifier.index(catalogue)
            builds.append(time.perf_counter() - t0)
            times: list[float] = []
            for case in sample:
                t0 = time.perf_counter()
                classifier.rank(case.query, case.history, 15)
                times.append(time.perf_counter() - t0)
            medians.append(statistics.median(times) * 1e3)
        if size == 1_000:
            chosen = {
                i: [c.name for c in classifier.rank(q.query, q.history, 15)]
                for i, q in enumerate(sample)
            }
        select.rows.append(
            Row(
                f"{size}",
                "toolweave",
                f"{size:,} tools: median over {len(sample):,} requests",
                "default_classifiers(None).rank(query, history, k=15) (BM25 + embedding fusion)",
                Series(medians),
            )
        )
        build.rows.append(
            Row(
                f"{size}",
                "toolweave",
                f"{size:,} tools",
                "default_classifiers(None).index(docs)",
                Series(builds),
            )
        )
    select.notes.append(
        "Catalogues of BFCL's pooled functions (repeated under new names to reach 10,000); "
        "requests: BFCL and labelled cases with their history. One round: the median of "
        "the requests' times."
    )
    build.notes.append(notes + "Tool documents are built before (tool_docs / tool_doc).")
    outcome.tables.extend([select, build])
    return chosen


def _tokens(
    definitions: dict[str, object],
    catalogue: Sequence[ToolDoc],
    chosen: dict[int, list[str]],
    outcome: Outcome,
) -> None:
    """Tokens of the definitions injected per turn vs all 1,000 tools (≈ 4 characters a
    token of their JSON)."""

    def tokens(name: str) -> float:
        base = name.rsplit("_v", 1)[0] if name not in definitions else name
        definition = definitions.get(base)
        return len(json.dumps(definition)) / 4 if definition is not None else 0.0

    everything = sum(tokens(d.name) for d in catalogue)
    per_turn = [sum(tokens(n) for n in names) for names in chosen.values()] or [0.0]
    table = Table(
        f"{ID}-tokens",
        "tokens of the definitions sent per turn at 1,000 tools",
        "tokens",
        ref=None,
        rounds=1,
    )
    table.rows.append(
        Row(
            "all",
            "toolweave",
            "all 1,000 tools",
            "len(json.dumps(definition)) / 4, summed",
            Series([everything]),
        )
    )
    table.rows.append(
        Row(
            "injected",
            "toolweave",
            "the selection (≤ 15 tools), mean over the requests",
            "the same for the tools default_classifiers selected",
            Series([statistics.mean(per_turn)]),
        )
    )
    table.notes.append(
        "A token is taken as 4 characters of the definition's JSON (name, description, parameters)."
    )
    outcome.tables.append(table)


async def run(cfg: Config, frameworks: Sequence[Framework]) -> Outcome:
    """Measure retrieval quality, speed and tokens saved."""
    outcome = Outcome(ID, TITLE)
    docs, missing = pack_docs()
    if missing:
        outcome.notes.append(
            f"Packs not installed, left out of the labelled set: {', '.join(missing)}."
        )
    suites = [labelled(docs)]
    data = bfcl_dir()
    if data is None:
        outcome.notes.append(
            "bfcl-eval is not installed: the BFCL rows are skipped and their targets PENDING."
        )
    else:
        outcome.notes.append(
            f"BFCL data from bfcl-eval's files ({data.name}/, read as JSON lines; its code is "
            "never imported). Single-turn (bfcl-single): one pooled catalogue of every distinct "
            "function offered in the single-turn categories (a name offered with several "
            "descriptions is one tool per description, told apart by a made-up word, "
            "never by digits a request could match); a case per row with ground truth; the "
            "irrelevance rows are negatives, ranked over that catalogue plus the functions "
            "they offer (an answer naming a tool offered with the row is a false injection). "
            "bfcl-single-pooled: the same cases ranked over the catalogue with the irrelevance "
            "rows' functions too (not judged). "
            "Multi-turn (multi_turn_base): every function of the 8 API classes in one "
            "catalogue (a class is a group), a case per turn that calls something, the "
            "earlier user turns as history."
        )
        single, multi = single_turn(data), multi_turn(data)
        suites += [single, multi, single_turn(data, pooled=True)]
    if cfg.quick:
        outcome.notes.append(
            "--quick: 60 cases and 40 negatives per suite and split, 50 timed requests."
        )
    results = _quality(cfg, suites, outcome)
    sanity = results.get("labelled/all/fusion")
    if sanity is not None and sanity.recall15 < 0.5:
        outcome.errors.append(
            f"{ID}: the fusion's Recall@15 on the labelled set is {sanity.recall15:.2f}"
        )
    if data is not None:
        queries = [*suites[1].cases, *suites[2].cases, *suites[0].cases]
        chosen = _speed(cfg, suites[1].docs, queries, outcome)
        _tokens(suites[1].definitions, _grow(suites[1].docs, 1_000), chosen, outcome)
    outcome.targets.extend(judge(outcome.tables))
    return outcome


def _value(tables: dict[str, Table], table: str, key: str) -> float | None:
    t = tables.get(table)
    return t.median(key) if t is not None else None


def judge(tables: Sequence[Table]) -> list[Target]:
    """Recall@15 of the fusion on BFCL's held-out split (≥ 0.92 single-turn, ≥ 0.95
    multi-turn); selection under 2 ms (1,000 tools) and 10 ms (10,000); index build of
    10,000 tools under 2 s; ≥ 85 % fewer tokens than listing all 1,000 tools."""
    by_id = {t.id: t for t in tables}
    targets: list[Target] = []
    for suite, goal, what in (
        ("bfcl-single", RECALL_SINGLE, "single-turn"),
        ("bfcl-multi", RECALL_MULTI, "multi-turn"),
    ):
        held = _value(by_id, f"{ID}-{suite}", "fusion held-out recall15")
        dev = _value(by_id, f"{ID}-{suite}", "fusion dev recall15")
        text = f"W10: Recall@15 ≥ {goal} on BFCL {what} (fusion, held-out split)"
        if held is None:
            targets.append(
                Target(f"{ID}-recall-{what}", text, "not measured (bfcl-eval missing)", None)
            )
        else:
            measured = f"{held:.3f} held-out (dev {dev:.3f})" if dev is not None else f"{held:.3f}"
            targets.append(Target(f"{ID}-recall-{what}", text, measured, held >= goal))
    for key, goal, text in (
        ("1000", SELECT_1K_MS, "W10: selection over 1,000 tools under 2 ms (median)"),
        ("10000", SELECT_10K_MS, "W10: selection over 10,000 tools under 10 ms (median)"),
    ):
        ms = _value(by_id, f"{ID}-select", key)
        targets.append(
            Target(
                f"{ID}-select-{key}",
                text,
                "not measured" if ms is None else f"{ms:.2f} ms",
                None if ms is None else ms < goal,
            )
        )
    s = _value(by_id, f"{ID}-build", "10000")
    targets.append(
        Target(
            f"{ID}-build-10000",
            "W10: index build for 10,000 tools under 2 s",
            "not measured" if s is None else f"{s:.2f} s",
            None if s is None else s < BUILD_10K_S,
        )
    )
    everything = _value(by_id, f"{ID}-tokens", "all")
    injected = _value(by_id, f"{ID}-tokens", "injected")
    if everything and injected is not None:
        saved = 1 - injected / everything
        targets.append(
            Target(
                f"{ID}-tokens",
                "W10: ≥ 85 % fewer tokens of injected definitions than all 1,000 tools",
                f"{saved:.1%} fewer ({injected:,.0f} vs {everything:,.0f})",
                saved >= TOKENS_SAVED,
            )
        )
    else:
        targets.append(
            Target(f"{ID}-tokens", "W10: ≥ 85 % fewer tokens at 1,000 tools", "not measured", None)
        )
    return targets
