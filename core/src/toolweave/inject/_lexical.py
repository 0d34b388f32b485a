"""Lexical retrieval: BM25 (the scores of ``bm25s``'s ``lucene`` method) over enriched tool documents, the request and,
weighted lower, the recent turns of the conversation."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, final

from toolweave.errors import UsageError
from toolweave.inject._classify import Candidate, ToolDoc
from toolweave.inject._text import grams, parameter_types, value_types, words

__all__ = ["LexicalClassifier", "doc_words", "query_weights"]

INSTALL_HINT = "pip install 'toolweave[inject]'"


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise UsageError(f"lexical tool retrieval needs numpy: {INSTALL_HINT}") from exc
    return numpy


ANALYZERS: dict[str, Callable[[str], list[str]]] = {"words": words, "grams": grams}
"""How text becomes BM25 terms: stemmed words, or character 4-grams of words."""


def doc_words(
    doc: ToolDoc,
    *,
    name_weight: int = 3,
    group_weight: int = 2,
    analyzer: str = "words",
    values: bool = True,
) -> list[str]:
    """The terms BM25 indexes for ``doc``: its name (split, repeated ``name_weight``
    times), groups (``group_weight`` times), description, parameters and examples; with
    ``values`` (and the ``words`` analyzer), the kinds of values its parameters take
    (``__value_date``, see :func:`~toolweave.inject._text.parameter_types`), once each."""
    terms = ANALYZERS[analyzer]
    name = terms(doc.name)
    tags = terms(" ".join(doc.groups))
    body = terms(" ".join((doc.description, *doc.examples)))
    params = terms(" ".join(doc.parameters))
    if values and analyzer == "words":
        params += parameter_types(params)
    body += params
    return name * name_weight + tags * group_weight + body


def bm25_matrix(
    token_ids: Any, lengths: Sequence[int], n_vocab: int, *, k1: float = 1.2, b: float = 0.75
) -> tuple[Any, Any, Any]:
    """The BM25 (``lucene``) score of every (word, document) pair, as the compressed
    columns ``(data, indices, indptr)`` of ``bm25s.BM25(method="lucene").index``: column
    ``t`` (``data[indptr[t]:indptr[t + 1]]``) holds word ``t``'s scores in the documents
    ``indices[...]``, ascending.

    Args:
        token_ids: Every document's word ids, concatenated (``lengths`` long each).
        lengths: Each document's number of words.
        n_vocab: The number of distinct words.
        k1: Term-frequency saturation.
        b: Length normalisation.
    """
    import numpy as np

    n = len(lengths)
    doc_len = np.asarray(lengths, dtype=np.int64)
    doc = np.repeat(np.arange(n, dtype=np.int64), doc_len)
    pairs, tf = np.unique(np.asarray(token_ids, dtype=np.int64) * n + doc, return_counts=True)
    tok, doc = np.divmod(pairs, n)
    df = np.bincount(tok, minlength=n_vocab)
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5)).astype(np.float32)
    norm = k1 * ((1.0 - b) + b * doc_len / doc_len.mean())
    tfc = tf.astype(np.float32) / (norm[doc] + tf.astype(np.float32))
    data = (idf[tok] * tfc).astype(np.float32)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return data, doc.astype(np.int32), indptr


class _TextCache:
    """The terms of recent texts (a history message is read again every turn), least
    recently used first out, bounded by entries and by size: an entry costs its text's
    bytes plus 64 per term, and one that would cost over ``1/64`` of the
    budget (a hostile 8,000-letter word has 8,000 n-grams) is not kept. Thread-safe."""

    __slots__ = ("_entries", "_held", "_lock", "budget", "max_entries")

    def __init__(self, max_entries: int = 4096, budget: int = 16 << 20) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self.budget = budget

    @staticmethod
    def cost(text: str, terms: tuple[str, ...]) -> int:
        return sys.getsizeof(text) + 64 * len(terms)

    def get(self, key: tuple[str, str], make: Callable[[str], list[str]]) -> tuple[str, ...]:
        entries = self._entries
        with self._lock:
            found = entries.get(key)
            if found is not None:
                entries.move_to_end(key)
                return found
        terms = tuple(make(key[1]))
        cost = self.cost(key[1], terms)
        if cost > self.budget >> 6:
            return terms
        with self._lock:
            if key not in entries:
                entries[key] = terms
                self._held += cost
                while len(entries) > self.max_entries or self._held > self.budget:
                    (_, text), old = entries.popitem(last=False)
                    self._held -= self.cost(text, old)
        return terms

    @property
    def held(self) -> int:
        """The cost of what is kept."""
        return self._held

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0


_terms = _TextCache()


def _cached_terms(text: str, analyzer: str = "words") -> tuple[str, ...]:
    return _terms.get((analyzer, text), ANALYZERS[analyzer])


def _cached_values(text: str) -> tuple[str, ...]:
    return _terms.get(("values", text), value_types)


def query_weights(
    query: str,
    history: Sequence[str] = (),
    *,
    decay: float = 0.5,
    turns: int = 3,
    analyzer: str = "words",
    value_weight: float = 0.0,
) -> dict[str, float]:
    """Each word of the request with weight 1, words of the ``turns`` latest history
    turns (oldest first in ``history``) with ``decay``, ``decay**2``, …; a word keeps its
    highest weight. With ``value_weight`` (and the ``words`` analyzer), the kinds of
    values the request states (a date, a file path, ...: ``__value_date``) with that
    weight: they meet the parameters that take them."""
    weights: dict[str, float] = {}
    recent = list(history)[-turns:] if turns > 0 else []
    for age, text in enumerate(reversed(recent), start=1):
        w = decay**age
        for word in _cached_terms(text, analyzer):
            if weights.get(word, 0.0) < w:
                weights[word] = w
    for word in _cached_terms(query, analyzer):
        weights[word] = 1.0
    if value_weight > 0.0 and analyzer == "words":
        for kind in _cached_values(query):
            weights[kind] = value_weight
    return weights


@final
class LexicalClassifier:
    """BM25 over tool documents (``bm25s``'s lucene scores; the query side weighted by
    turn).

    Confidence of a candidate: its score over ``scale · ln(1 + N)`` (``N`` tools in the
    catalogue; ``ln(1 + N)`` bounds one word's idf), capped at 1: the evidence of the
    words it matches, comparable across catalogues of any size and not diluted by the
    request's other words (a long chatty request that names the tool plainly is not less
    sure than a short one). An empty answer when no word is known.

    Args:
        history_decay: Weight of the previous turn's words (the one before: its square).
        history_turns: How many previous turns count.
        k1: BM25's term-frequency saturation.
        b: BM25's length normalisation.
        min_confidence: Candidates under this confidence are dropped.
        scale: How many fully matched rare words make confidence 1.
        analyzer: ``"words"`` (stemmed words; the classifier's name is ``bm25``) or
            ``"grams"`` (character 4-grams of words; named ``bm25-grams``).
        value_weight: The weight of a kind of value the request states (a date, a
            time, an e-mail address, a URL, a file path, an amount of money) as a term
            matched with the tools whose parameters take it (``words`` analyzer only;
            0: off). 2 (default) was chosen on W10's development split.
    """

    name = "bm25"

    def __init__(
        self,
        *,
        history_decay: float = 0.3,
        history_turns: int = 3,
        k1: float = 1.2,
        b: float = 0.75,
        min_confidence: float = 0.0,
        scale: float = 8.0,
        analyzer: str = "words",
        value_weight: float = 2.0,
    ) -> None:
        if analyzer not in ANALYZERS:
            raise UsageError(f"unknown analyzer {analyzer!r}: one of {sorted(ANALYZERS)}")
        self.analyzer = analyzer
        self.name = "bm25" if analyzer == "words" else f"bm25-{analyzer}"
        self.scale = scale
        self.history_decay = history_decay
        self.history_turns = history_turns
        self.k1 = k1
        self.b = b
        self.min_confidence = min_confidence
        self.value_weight = value_weight
        self._names: list[str] = []
        self._groups: list[tuple[str, ...]] = []
        self._vocab: dict[str, int] = {}
        self._data: Any = None
        self._indices: Any = None
        self._indptr: Any = None
        self._idf: Any = None

    def index(self, docs: Sequence[ToolDoc]) -> None:
        """Build the BM25 index over ``docs`` (every distinct word stemmed once; the
        matrix built with array operations, the scores of ``bm25s``'s ``lucene``
        method)."""
        self._names = [d.name for d in docs]
        self._groups = [d.groups for d in docs]
        if not docs:
            self._vocab = {}
            return
        np = _numpy()
        flat: list[str] = []
        lengths: list[int] = []
        for doc in docs:
            tokens = doc_words(doc, analyzer=self.analyzer, values=self.value_weight > 0.0)
            tokens = tokens or ["_empty_"]
            lengths.append(len(tokens))
            flat.extend(tokens)
        vocab = {word: i for i, word in enumerate(dict.fromkeys(flat))}
        ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        data, indices, indptr = bm25_matrix(ids, lengths, len(vocab), k1=self.k1, b=self.b)
        n = len(docs)
        df = np.diff(indptr).astype(np.float64)
        self._data, self._indices, self._indptr = data, indices, indptr
        self._idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        self._vocab = vocab

    def scores(self, query: str, history: Sequence[str] = ()) -> tuple[Any, float]:
        """The BM25 score of every document and the saturation score of the request."""
        import numpy as np

        out = np.zeros(len(self._names), dtype=np.float32)
        ideal = 0.0
        weights = query_weights(
            query,
            history,
            decay=self.history_decay,
            turns=self.history_turns,
            analyzer=self.analyzer,
            value_weight=self.value_weight,
        )
        vocab, indptr, indices, data = self._vocab, self._indptr, self._indices, self._data
        for word, w in weights.items():
            tid = vocab.get(word)
            if tid is None:
                continue
            start, end = indptr[tid], indptr[tid + 1]
            out[indices[start:end]] += w * data[start:end]
            ideal += w * float(self._idf[tid]) * (self.k1 + 1.0)
        return out, ideal

    def rank(self, query: str, history: Sequence[str] = (), k: int = 15) -> list[Candidate]:
        """The ``k`` best-scoring tools for the request (and its history)."""
        if not self._vocab or k <= 0:
            return []
        import numpy as np

        scores, ideal = self.scores(query, history)
        if ideal <= 0.0:
            return []
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        unit = self.scale * float(np.log1p(len(scores)))
        out: list[Candidate] = []
        for i in top:
            score = float(scores[i])
            if score <= 0.0:
                break
            confidence = min(1.0, score / unit)
            if confidence < self.min_confidence:
                break
            out.append(
                Candidate(
                    self._names[i],
                    confidence,
                    f"bm25 {score:.1f} ({confidence:.2f})",
                    self._groups[i],
                )
            )
        return out
