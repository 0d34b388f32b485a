"""The injector's intent classifiers on the built-in packs' real tools: rules, BM25,
the offline embedding model, their fusion, and the documents they index."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest
from toolweave import load_packs
from toolweave.errors import ConfigError, UsageError
from toolweave.inject import (
    Classifier,
    FusionClassifier,
    IntentConfig,
    RuleClassifier,
    ToolDoc,
    default_classifiers,
    tool_doc,
    tool_docs,
)
from toolweave.inject._embed import EmbeddingClassifier, load_wordllama
from toolweave.inject._lexical import LexicalClassifier, query_weights
from toolweave.inject._text import words


@pytest.fixture(scope="module")
def docs() -> list[ToolDoc]:
    toolset = load_packs(include=["fs", "plan", "search", "shell"], strict=True).builder().build()
    return tool_docs(toolset.entries, {"bash": ["local_core"]})


def _names(
    classifier: Classifier, query: str, history: tuple[str, ...] = (), k: int = 15
) -> list[str]:
    return [c.name for c in classifier.rank(query, history, k)]


def test_tool_docs_enrich_from_schema_groups_and_pack(docs: list[ToolDoc]) -> None:
    """A document carries the parameters of the schema, the center's groups and the pack."""
    by_name = {d.name: d for d in docs}
    read = by_name["read_file"]
    assert any(p.startswith("path:") for p in read.parameters)
    assert "fs" in read.groups
    assert by_name["bash"].groups == ("local_core", "shell")
    assert read.kind == "read"


def test_tool_doc_nested_parameters_enums_and_examples() -> None:
    """Nested properties, enum values and argument examples become searchable text."""
    doc = tool_doc(
        "set_mode",
        "Set the mode.",
        {
            "type": "object",
            "properties": {
                "options": {
                    "type": "object",
                    "properties": {
                        "unit": {"enum": ["celsius", "fahrenheit"], "description": "Unit."}
                    },
                }
            },
        },
        examples=[{"unit": "celsius"}, "switch to fahrenheit"],
    )
    assert "options.unit: Unit. (celsius, fahrenheit)" in doc.parameters
    assert doc.examples == ("unit celsius", "switch to fahrenheit")


def test_words_split_identifiers_and_stem() -> None:
    """Identifiers split on case and underscores; stop words go; words are stemmed."""
    assert words("readFile the read_files") == ["read", "file", "read", "file"]


def test_rules_propose_the_group_with_confidence(docs: list[ToolDoc]) -> None:
    """A matching keyword or regular expression proposes its group's tools; none abstains."""
    rules = RuleClassifier({"search": ["grep", r"\bfind\b.*\bfiles?\b"], "plan": ["todo"]})
    rules.index(docs)
    found = rules.rank("find the files named *.py")
    assert {c.name for c in found} == {"grep", "glob"}
    assert all(0 < c.confidence <= 1 and c.tags == ("search",) for c in found)
    both = rules.rank("grep to find files")[0].confidence
    assert both > found[0].confidence
    assert rules.rank("what's the weather like?") == []
    assert {c.name for c in rules.rank("and then?", ("update the todo list",))} >= {"todo_write"}


def test_rules_report_every_invalid_pattern() -> None:
    """Invalid regular expressions are a ConfigError listing each one."""
    with pytest.raises(ConfigError) as info:
        RuleClassifier({"a": ["(unclosed"], "b": ["[bad"]})
    assert len(info.value.issues) == 2


def test_bm25_ranks_the_right_tool_first(docs: list[ToolDoc]) -> None:
    """BM25 over the enriched documents puts the obvious tool first."""
    bm25 = LexicalClassifier()
    bm25.index(docs)
    assert _names(bm25, "run a shell command")[0] == "bash"
    assert _names(bm25, "switch to plan mode before a risky change")[0] == "enter_plan"
    assert bm25.rank("zebra quokka xylophone") == []


def test_bm25_uses_the_history_weighted_lower(docs: list[ToolDoc]) -> None:
    """A vague request is resolved by the previous turn; the request itself dominates."""
    weights = query_weights("stop it", ("start the dev server in the background",), decay=0.3)
    assert weights["stop"] == 1.0
    assert weights["background"] == pytest.approx(0.3)
    bm25 = LexicalClassifier()
    bm25.index(docs)
    assert bm25.rank("do it again") == []
    assert "kill_task" in _names(bm25, "stop it", ("the background task hangs",), k=3)


def test_embedding_loads_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """wordllama loads from the weights inside its wheel with every socket refused, and
    leaves the root logger as it was."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("network used")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    load_wordllama.cache_clear()
    model = load_wordllama()
    assert model.embed(["read a file"], norm=True).shape == (1, 256)
    assert (list(root.handlers), root.level) == before


def test_embedding_ranks_by_meaning(docs: list[ToolDoc]) -> None:
    """The embedding classifier finds tools by meaning and uses the history."""
    embed = EmbeddingClassifier()
    embed.index(docs)
    assert "read_file" in _names(embed, "read the text file main.py", k=5)
    assert all(0 < c.confidence <= 1 for c in embed.rank("delete the build folder"))


def test_fusion_orders_by_agreement_and_abstains(docs: list[ToolDoc]) -> None:
    """Tools two classifiers agree on come first (the rule's whole group, then what BM25
    and the embedding also like); a request nothing fits gets an empty answer."""
    fusion = default_classifiers({"rules": {"shell": ["pytest"]}})
    assert isinstance(fusion, FusionClassifier)
    assert [c.name for c in fusion.classifiers] == ["rules", "bm25", "embed"]
    fusion.index(docs)
    ranked = fusion.rank("run the tests with pytest")
    assert "bash" in [c.name for c in ranked[:3]]
    assert {c.name for c in ranked[:4]} <= {"bash", "task_output", "wait_tasks", "kill_task"}
    bash = next(c for c in ranked if c.name == "bash")
    assert "rule shell" in bash.reason
    assert "bm25" in bash.reason
    assert fusion.rank("zebra quokka xylophone") == []


def test_fusion_expands_a_matched_group(docs: list[ToolDoc]) -> None:
    """The other tools of a matched group follow its best member."""
    fusion = FusionClassifier([LexicalClassifier()], expand_groups=0.3)
    fusion.index(docs)
    names = _names(fusion, "stop the background task")
    assert names[0] == "kill_task"
    assert {"task_output", "wait_tasks", "bash"} <= set(names)


def test_intent_config_rejects_unknown_keys() -> None:
    """A misspelt setting is a ConfigError, not silently ignored."""
    with pytest.raises(ConfigError):
        default_classifiers({"abstain": 0.2})
    assert IntentConfig().method == "relative"
    lexical_only = default_classifiers(IntentConfig(embed=False))
    assert [c.name for c in lexical_only.classifiers] == ["bm25"]  # type: ignore[attr-defined]


def test_empty_catalogue_abstains() -> None:
    """With nothing indexed, every classifier answers nothing."""
    for classifier in (LexicalClassifier(), EmbeddingClassifier(), default_classifiers(None)):
        classifier.index([])
        assert classifier.rank("read a file") == []


def test_words_match_splitting_identifiers_first() -> None:
    """The one-pass word pattern finds the words of split_identifier(text) (the old two
    passes), on identifiers of every shape."""
    import random
    import re

    from toolweave.inject._text import raw_words, split_identifier

    two_pass = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
    rng = random.Random(7)
    samples = ["HTTPServer", "readFile", "x1Y", "AB1c", "ABCd", "get_URLs2go", "12AB", "café"]
    samples += [
        "".join(rng.choice("aAbZ09_ .-é") for _ in range(rng.randint(0, 12))) for _ in range(5000)
    ]
    for text in samples:
        assert raw_words(text) == two_pass.findall(split_identifier(text)), text


def test_bm25_matrix_equals_bm25s(docs: list[ToolDoc]) -> None:
    """The vectorised index holds bm25s's lucene scores, bit for bit."""
    bm25s = pytest.importorskip("bm25s")
    import numpy as np
    from toolweave.inject._lexical import doc_words

    ours = LexicalClassifier()
    ours.index(docs)
    ref = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    ref.index([doc_words(d) or ["_empty_"] for d in docs], show_progress=False)
    indptr, indices, data = (ref.scores[k] for k in ("indptr", "indices", "data"))
    for word, tid in ours._vocab.items():
        theirs = ref.vocab_dict[word]
        a, b = (
            slice(indptr[theirs], indptr[theirs + 1]),
            slice(ours._indptr[tid], ours._indptr[tid + 1]),
        )
        assert np.array_equal(indices[a], ours._indices[b])
        assert np.array_equal(data[a], ours._data[b])


def test_embed_many_equals_the_models_embed(docs: list[ToolDoc]) -> None:
    """Batch embedding (one tokenizer call, unpadded pooling) gives wordllama's vectors;
    an empty text gives a zero vector (not NaN)."""
    import numpy as np
    from toolweave.inject._embed import embed_many, embed_text

    model = load_wordllama()
    texts = [embed_text(d) for d in docs]
    assert np.allclose(embed_many(model, texts), model.embed(texts, norm=True), atol=1e-6)
    assert not embed_many(model, ["", "read"]).any(axis=1)[0]
    assert embed_many(model, []).shape == (0, 256)


def test_bm25_confidence_is_not_diluted_by_chatty_words(docs: list[ToolDoc]) -> None:
    """BM25's confidence is the evidence of the matched words over ``scale·ln(1+N)``:
    words that match no tool do not lower it, so a long request that names the tool
    plainly is not abstained on (the fusion keeps it above its threshold)."""
    import math

    bm25 = LexicalClassifier()
    bm25.index(docs)
    short = bm25.rank("run a shell command")[0]
    chatty = bm25.rank(
        "good morning, hope you slept well; whenever convenient, run a shell command "
        "for me, ideally before lunchtime tomorrow, thanks a million"
    )[0]
    assert short.name == chatty.name == "bash"
    assert chatty.confidence == pytest.approx(short.confidence)
    scores, _ = bm25.scores("run a shell command")
    assert short.confidence == pytest.approx(float(scores.max()) / (8.0 * math.log1p(len(docs))))
    fusion = default_classifiers(IntentConfig(embed=False))
    fusion.index(docs)
    assert _names(fusion, "hey, so, if it's not too much trouble: grep")[0] == "grep"


def test_char_grams_match_inflections_and_typos() -> None:
    """The 4-gram analyzer matches what stems keep apart and misspellings; the fusion
    takes it as a member when char_grams is set."""
    from toolweave.inject._text import grams

    assert grams("readFile the") == ["#rea", "read", "ead#", "#fil", "file", "ile#"]
    assert grams("a to") == []
    assert set(grams("multiplication")) & set(grams("multiply"))
    maths = [tool_doc("multiply", "Multiply two integers."), tool_doc("add", "Add two integers.")]
    stems = LexicalClassifier()
    stems.index(maths)
    assert stems.rank("multiplication") == []  # Snowball: multipl vs multipli
    bm25 = LexicalClassifier(analyzer="grams", scale=20.0)
    assert bm25.name == "bm25-grams"
    bm25.index(maths)
    assert _names(bm25, "multiplication") == ["multiply"]
    assert _names(bm25, "multiplcation of 3 and 4") == ["multiply"]
    with pytest.raises(UsageError):
        LexicalClassifier(analyzer="letters")
    fusion = default_classifiers(IntentConfig(embed=False, char_grams=0.5))
    assert [c.name for c in fusion.classifiers] == ["bm25", "bm25-grams"]  # type: ignore[attr-defined]
    assert fusion.weights["bm25-grams"] == 0.5  # type: ignore[attr-defined]
