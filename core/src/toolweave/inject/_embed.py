"""Semantic retrieval with a small embedding model that runs offline: ``wordllama``
(its 16 MB weights ship inside the wheel; ``pip install 'toolweave[embed]'``)."""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, final

from toolweave.errors import UsageError
from toolweave.inject._classify import Candidate, ToolDoc
from toolweave.inject._text import split_identifier

__all__ = ["EmbeddingClassifier", "embedding_available", "load_wordllama"]

INSTALL_HINT = "pip install 'toolweave[embed]'"

_lock = threading.Lock()


def embedding_available() -> bool:
    """Whether ``wordllama`` (and ``threadpoolctl``) are installed."""
    return (
        importlib.util.find_spec("wordllama") is not None
        and importlib.util.find_spec("threadpoolctl") is not None
    )


@lru_cache(maxsize=1)
def load_wordllama() -> Any:
    """The bundled WordLlama model (256-d ``l2_supercat``), loaded once per process with
    no network: from the weights inside the wheel, downloads disabled (its default
    loader looks in another folder and would try to download)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    except ImportError as exc:
        raise UsageError(f"embedding tool retrieval needs wordllama: {INSTALL_HINT}") from exc
    finally:
        # wordllama calls logging.basicConfig(level=INFO) on import: undo it, the
        # host's logging is the host's.
        root.handlers[:] = handlers
        root.setLevel(level)
    with _lock:
        return wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )


@lru_cache(maxsize=1)
def _blas() -> Any:
    """A threadpoolctl controller: one BLAS thread per product (a query against 10,000
    tools takes ≈0.5 ms on one thread, several ms when BLAS wakes threads on a busy
    machine)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError as exc:
        raise UsageError(f"embedding tool retrieval needs threadpoolctl: {INSTALL_HINT}") from exc
    return ThreadpoolController()


def embed_text(doc: ToolDoc) -> str:
    """What is embedded for a tool: its name as words, description, parameter names,
    groups and examples."""
    params = " ".join(p.split(":", 1)[0] for p in doc.parameters)
    parts = [split_identifier(doc.name), doc.description, params, " ".join(doc.groups)]
    parts.extend(doc.examples)
    return ". ".join(p for p in parts if p)


_CHUNK = 16
"""Documents pooled per step (their token vectors stay in the CPU cache)."""


@lru_cache(maxsize=4)
def _unpadded(model: Any) -> Any:
    """A copy of the model's tokenizer that neither pads nor truncates."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def embed_many(model: Any, texts: Sequence[str]) -> Any:
    """``model.embed(texts, norm=True)`` for many texts, faster: one tokenizer call
    over every text (``encode_batch_fast``: no offsets, no padding), then each text's
    token vectors averaged in small chunks of texts (WordLlama's pooling is their mean)
    and normalised. Equal to ``model.embed`` up to float rounding (≈1e-7)."""
    import numpy as np

    if not texts:
        return np.zeros((0, model.embedding.shape[1]), dtype=np.float32)
    tokenizer = _unpadded(model)
    encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
    encoded = encode(list(texts), add_special_tokens=False)
    lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(encoded))
    ids = np.fromiter((i for e in encoded for i in e.ids), dtype=np.int64, count=int(lengths.sum()))
    table = model.embedding
    np.clip(ids, 0, table.shape[0] - 1, out=ids)
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    out = np.zeros((len(lengths), table.shape[1]), dtype=np.float32)
    for i in range(0, len(lengths), _CHUNK):
        part = lengths[i : i + _CHUNK]
        first, last = int(starts[i]), int(starts[i + len(part)])
        if last == first:
            continue
        offsets = np.minimum(starts[i : i + len(part)] - first, last - first - 1)
        sums = np.add.reduceat(table[ids[first:last]], offsets, axis=0)
        out[i : i + len(part)] = np.where(part[:, None] > 0, sums, 0.0)
    out /= np.maximum(lengths, 1)[:, None].astype(np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.where(norms > 0.0, norms, 1.0)
    return out


@final
class EmbeddingClassifier:
    """Cosine similarity between the request (plus its history, weighted lower) and the
    tools' embedded documents.

    Confidence: the cosine mapped linearly from ``[floor, ceiling]`` to ``[0, 1]``.

    Args:
        history_decay: Weight of the previous turn's vector (the one before: its square).
        history_turns: How many previous turns count.
        floor: A cosine at or under it is confidence 0 (dropped).
        ceiling: A cosine at or above it is confidence 1.
        model: A loaded WordLlama model (default: the bundled one, see
            :func:`load_wordllama`).
    """

    name = "embed"

    def __init__(
        self,
        *,
        history_decay: float = 0.3,
        history_turns: int = 3,
        floor: float = 0.15,
        ceiling: float = 0.65,
        model: Any = None,
    ) -> None:
        self.history_decay = history_decay
        self.history_turns = history_turns
        self.floor = floor
        self.ceiling = ceiling
        self._model = model
        self._names: list[str] = []
        self._groups: list[tuple[str, ...]] = []
        self._matrix: Any = None

    @property
    def model(self) -> Any:
        """The embedding model (loaded on first use)."""
        if self._model is None:
            self._model = load_wordllama()
        return self._model

    def _embed(self, texts: list[str]) -> Any:
        with _blas().limit(limits=1, user_api="blas"):
            return self.model.embed(texts, norm=True)

    def index(self, docs: Sequence[ToolDoc]) -> None:
        """Embed every document (see :func:`embed_many`)."""
        self._names = [d.name for d in docs]
        self._groups = [d.groups for d in docs]
        self._matrix = embed_many(self.model, [embed_text(d) for d in docs]) if docs else None

    def rank(self, query: str, history: Sequence[str] = (), k: int = 15) -> list[Candidate]:
        """The ``k`` tools closest to the request (and its history)."""
        if self._matrix is None or k <= 0 or not query.strip():
            return []
        import numpy as np

        recent = list(history)[-self.history_turns :] if self.history_turns > 0 else []
        texts = [query, *reversed(recent)]
        weights = np.array([1.0] + [self.history_decay**a for a in range(1, len(texts))])
        with _blas().limit(limits=1, user_api="blas"):
            vectors = self.model.embed(texts, norm=True)
            q = (weights[:, None] * vectors).sum(axis=0)
            norm = float(np.linalg.norm(q))
            if norm == 0.0:
                return []
            sims = self._matrix @ (q / norm).astype(self._matrix.dtype)
        n = len(sims)
        k = min(k, n)
        top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-sims[top], kind="stable")]
        span = self.ceiling - self.floor
        out: list[Candidate] = []
        for i in top:
            cos = float(sims[i])
            conf = min(1.0, (cos - self.floor) / span)
            if conf <= 0.0:
                break
            out.append(Candidate(self._names[i], conf, f"embed {cos:.2f}", self._groups[i]))
        return out
