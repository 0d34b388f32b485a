"""Lexical retrieval: BM25 (``bm25s``) over enriched tool documents, the request and,
weighted lower, the recent turns of the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, final

from toolweave.errors import UsageError
from toolweave.inject._classify import Candidate, ToolDoc
from toolweave.inject._text import split_identifier, words

__all__ = ["LexicalClassifier", "doc_words", "query_weights"]

INSTALL_HINT = "pip install 'toolweave[inject]'"


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise UsageError(f"lexical tool retrieval needs bm25s: {INSTALL_HINT}") from exc
    return bm25s


def doc_words(doc: ToolDoc, *, name_weight: int = 3, group_weight: int = 2) -> list[str]:
    """The words BM25 indexes for ``doc``: its name (split, repeated ``name_weight``
    times), groups (``group_weight`` times), description, parameters and examples."""
    name = words(split_identifier(doc.name).replace(".", " "))
    tags = words(" ".join(doc.groups))
    body = words(" ".join((doc.description, *doc.parameters, *doc.examples)))
    return name * name_weight + tags * group_weight + body


@lru_cache(maxsize=4096)
def _cached_words(text: str) -> tuple[str, ...]:
    return tuple(words(text))


def query_weights(
    query: str, history: Sequence[str] = (), *, decay: float = 0.5, turns: int = 3
) -> dict[str, float]:
    """Each word of the request with weight 1, words of the ``turns`` latest history
    turns (oldest first in ``history``) with ``decay``, ``decay**2``, …; a word keeps its
    highest weight."""
    weights: dict[str, float] = {}
    recent = list(history)[-turns:] if turns > 0 else []
    for age, text in enumerate(reversed(recent), start=1):
        w = decay**age
        for word in _cached_words(text):
            if weights.get(word, 0.0) < w:
                weights[word] = w
    for word in _cached_words(query):
        weights[word] = 1.0
    return weights


@final
class LexicalClassifier:
    """BM25 over tool documents (``bm25s``'s index; the query side weighted by turn).

    Confidence of a candidate: its score over the score a document would get that
    matched every known word of the request (and its weighted history) at saturation
    (``Σ w·idf·(k1+1)``), so a request whose words a tool mostly shares scores near 1
    and one that shares a single common word with it scores low; an empty answer when
    no word is known.

    Args:
        history_decay: Weight of the previous turn's words (the one before: its square).
        history_turns: How many previous turns count.
        k1: BM25's term-frequency saturation.
        b: BM25's length normalisation.
        min_confidence: Candidates under this confidence are dropped.
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
    ) -> None:
        self.history_decay = history_decay
        self.history_turns = history_turns
        self.k1 = k1
        self.b = b
        self.min_confidence = min_confidence
        self._names: list[str] = []
        self._groups: list[tuple[str, ...]] = []
        self._vocab: dict[str, int] = {}
        self._data: Any = None
        self._indices: Any = None
        self._indptr: Any = None
        self._idf: Any = None

    def index(self, docs: Sequence[ToolDoc]) -> None:
        """Build the BM25 index over ``docs``."""
        self._names = [d.name for d in docs]
        self._groups = [d.groups for d in docs]
        if not docs:
            self._vocab = {}
            return
        bm25s = _bm25s()
        import numpy as np

        retriever = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
        corpus = [doc_words(d) or ["_empty_"] for d in docs]
        retriever.index(corpus, show_progress=False)
        scores = retriever.scores
        self._vocab = dict(retriever.vocab_dict)
        self._data = scores["data"]
        self._indices = scores["indices"]
        self._indptr = scores["indptr"]
        n = len(docs)
        df = np.diff(self._indptr).astype(np.float64)
        self._idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str, history: Sequence[str] = ()) -> tuple[Any, float]:
        """The BM25 score of every document and the saturation score of the request."""
        import numpy as np

        out = np.zeros(len(self._names), dtype=np.float32)
        ideal = 0.0
        weights = query_weights(query, history, decay=self.history_decay, turns=self.history_turns)
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
        out: list[Candidate] = []
        for i in top:
            score = float(scores[i])
            if score <= 0.0:
                break
            confidence = min(1.0, score / ideal)
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
