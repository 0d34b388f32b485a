"""What the injector's classifiers see and answer: tool documents in, ranked candidates
with a confidence out. Every classifier (rules, lexical retrieval, an offline embedding
model, a host's own: an embedding service, an LLM) implements :class:`Classifier`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["Candidate", "Classifier", "ToolDoc"]


@dataclass(frozen=True, slots=True)
class ToolDoc:
    """One tool as the classifiers index it (built once per catalogue, at registration).

    Attributes:
        name: The client-visible name (what a selection names).
        description: The description the model reads.
        parameters: Parameter names and their descriptions, as ``name: description``.
        groups: The center groups (intent tags) of the tool.
        examples: Requests the tool answers (from its author or generated), which
            enrich lexical and semantic matching.
        kind: The tool's kind (``read``, ``edit``, ``execute``, ...).
    """

    name: str
    description: str
    parameters: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    kind: str = "other"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A tool a classifier proposes for a turn.

    Attributes:
        name: The tool's client-visible name.
        confidence: How sure the classifier is, in ``[0, 1]`` (comparable across
            classifiers only after fusion calibrates them).
        reason: Why, for the selection log (``intent:files 0.82``, ``bm25 12.3``, ...).
        tags: The intent tags (groups) that led to it, if any.
    """

    name: str
    confidence: float
    reason: str = ""
    tags: tuple[str, ...] = field(default=())


@runtime_checkable
class Classifier(Protocol):
    """Ranks tools for a turn.

    ``index`` is called with the whole catalogue when it changes; ``rank`` with the
    turn's user message and, optionally, the recent turns of the conversation (oldest
    first). It returns at most ``k`` candidates, best first; an empty list abstains
    (nothing fits, e.g. an irrelevant request).
    """

    name: str

    def index(self, docs: Sequence[ToolDoc]) -> None:
        """(Re)build the classifier's index over ``docs``."""
        ...

    def rank(self, query: str, history: Sequence[str] = (), k: int = 15) -> list[Candidate]:
        """The best candidates for ``query`` (and the conversation ``history``)."""
        ...
