"""Fusion of classifiers, with a confidence threshold that abstains on requests no tool
fits; and the injector's default: ``default_classifiers(config) -> Classifier``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, final

from toolweave.errors import ConfigError, ConfigIssue
from toolweave.inject._classify import Candidate, Classifier, ToolDoc
from toolweave.inject._deps import group_members, prerequisites, with_prerequisites

__all__ = ["FusionClassifier", "IntentConfig", "default_classifiers"]


@dataclass(frozen=True)
class IntentConfig:
    """How the default intent classifiers are built (``default_classifiers(config)``).

    Attributes:
        rules: ``{group: [keyword or regular expression, ...]}`` for the rule
            classifier (none: no rule classifier).
        lexical: Whether BM25 retrieval runs (needs ``toolweave[inject]``).
        embed: The offline embedding classifier (``toolweave[embed]``): ``True`` on,
            ``False`` off, ``"auto"`` on when ``wordllama`` is installed.
        history_turns: How many previous turns of the conversation count.
        history_decay: The weight of the previous turn's words (the one before: its
            square, ...); the request itself weighs 1.
        abstain_below: The fusion answers nothing when its best candidate's confidence
            is under this (an irrelevant request).
        min_confidence: Candidates under this confidence are dropped (after the best
            one passed ``abstain_below``).
        weights: Each classifier's weight in the fusion, by its ``name``.
        method: ``"relative"``: weighted sum of each classifier's confidences relative
            to its best candidate; ``"score"``: weighted sum of the confidences;
            ``"rrf"``: reciprocal-rank fusion (confidences still decide abstention).
        expand_groups: The other tools of a top candidate's group (≤ 40 tools) follow
            it at this fraction of its score (0: off).
        prerequisites: The tools the top candidates need first (a group's sign-in
            tool, the tool that changes the current directory its mates work in, the
            look-up whose result another takes as an argument; learned from the
            catalogue's documents at index time) follow each of the 5 best at this
            fraction of its score (0: off).
        missing: A tool that one classifier ranked and another did not gets, from the
            other, this fraction of that classifier's lowest answered confidence in the
            ``relative`` order (it scored at most that), when that classifier's answer
            was cut at the fusion's depth (0: nothing).
        value_weight: The weight, in BM25, of each kind of value the request states (a
            date, a time, an e-mail address, a URL, a file path, an amount of money)
            against the tools whose parameters take it (0: off).
        char_grams: The weight of a second BM25 over the character 4-grams of words
            (``bm25-grams``: inflections the stemmer keeps apart, typos, related
            languages); 0 (default): off. It costs about as much to index as the
            word BM25 and the embedding together (≈1.5 s for 10,000 tools) and, on the
            W10 dev split, lifted our labelled set's Recall@15 (0.91 → 0.95) but not
            BFCL's, with slightly more false injections.

    The defaults were chosen on the development split of W10 (benchmarks/README.md).
    """

    rules: Mapping[str, Sequence[str] | str] = field(default_factory=dict)
    lexical: bool = True
    embed: bool | Literal["auto"] = "auto"
    history_turns: int = 3
    history_decay: float = 0.2
    abstain_below: float = 0.04
    min_confidence: float = 0.0
    weights: Mapping[str, float] = field(
        default_factory=lambda: {"rules": 1.0, "bm25": 1.0, "embed": 0.5}
    )
    method: Literal["score", "rrf", "relative"] = "relative"
    expand_groups: float = 0.3
    prerequisites: float = 0.7
    missing: float = 1.0
    value_weight: float = 2.0
    char_grams: float = 0.0

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> IntentConfig:
        """A configuration from plain data (unknown keys are a :class:`ConfigError`)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                [
                    ConfigIssue(
                        "",
                        f"unknown intent setting {key!r}",
                        path=f"intent.{key}",
                        expected=sorted(known),
                        tag="unknown_setting",
                    )
                    for key in unknown
                ]
            )
        return cls(**dict(data))


@final
class FusionClassifier:
    """Several classifiers as one: their candidates merged, calibrated, thresholded.

    Each classifier ranks ``depth`` candidates. A tool's fused confidence is the
    weighted mean of its confidences, plus the best single one (so one sure classifier
    is not outvoted by silence), halved. The order: ``method="relative"`` (default) by
    ``Σ weight · confidence / the classifier's best confidence`` (per-request
    normalisation: BM25 and cosine scales differ); ``"score"`` by the fused confidence;
    ``"rrf"`` by ``Σ weight / (rrf_k + rank)``. The fusion abstains (answers ``[]``)
    when the best fused confidence is under ``abstain_below``.

    Args:
        classifiers: The members (each a :class:`Classifier`).
        weights: Weight by classifier name (1 when absent).
        abstain_below: The abstention threshold on the best candidate's confidence.
        min_confidence: Candidates under this are dropped.
        method: ``"relative"``, ``"score"`` or ``"rrf"``.
        depth: How many candidates each member ranks.
        rrf_k: The constant of reciprocal-rank fusion.
        expand_groups: Group expansion (see :class:`IntentConfig`).
        max_group: Groups larger than this are not expanded (nor searched for
            prerequisites).
        prerequisites: Prerequisites of the best candidates follow them at this
            fraction of their score (see :class:`IntentConfig`; 0: off).
        prerequisite_leaders: How many of the best candidates bring their
            prerequisites.
        missing: The share of a member's lowest answered confidence that a tool it
            did not rank gets in the ``relative`` order, when its answer was cut at
            ``depth`` (see :class:`IntentConfig`).
    """

    name = "fusion"

    def __init__(
        self,
        classifiers: Sequence[Classifier],
        *,
        weights: Mapping[str, float] | None = None,
        abstain_below: float = 0.04,
        min_confidence: float = 0.0,
        method: Literal["score", "rrf", "relative"] = "relative",
        depth: int = 50,
        rrf_k: float = 60.0,
        expand_groups: float = 0.0,
        max_group: int = 40,
        prerequisites: float = 0.0,
        prerequisite_leaders: int = 5,
        missing: float = 0.0,
    ) -> None:
        self.missing = missing
        self.prerequisites = prerequisites
        self.prerequisite_leaders = prerequisite_leaders
        self._requires: dict[str, tuple[str, ...]] = {}
        self.expand_groups = expand_groups
        self.max_group = max_group
        self._members: dict[str, list[str]] = {}
        self._groups_of: dict[str, tuple[str, ...]] = {}
        self.classifiers = tuple(classifiers)
        self.weights = dict(weights or {})
        self.abstain_below = abstain_below
        self.min_confidence = min_confidence
        self.method = method
        self.depth = depth
        self.rrf_k = rrf_k

    def index(self, docs: Sequence[ToolDoc]) -> None:
        """Index ``docs`` in every member; remember each group's tools."""
        self._members = {
            group: [d.name for d in tools]
            for group, tools in group_members(docs).items()
            if len(tools) <= self.max_group
        }
        self._groups_of = {d.name: d.groups for d in docs}
        self._requires = (
            prerequisites(docs, max_group=self.max_group) if self.prerequisites > 0.0 else {}
        )
        for classifier in self.classifiers:
            classifier.index(docs)

    def rank(self, query: str, history: Sequence[str] = (), k: int = 15) -> list[Candidate]:
        """The fused candidates, best first; ``[]`` when nothing is confident enough."""
        answers = [
            (c.name, self.weights.get(c.name, 1.0), c.rank(query, history, max(k, self.depth)))
            for c in self.classifiers
        ]
        return fuse(
            answers,
            k=k,
            method=self.method,
            abstain_below=self.abstain_below,
            min_confidence=self.min_confidence,
            rrf_k=self.rrf_k,
            expand=self.expand_groups,
            members=self._members,
            groups_of=self._groups_of,
            prerequisites=self.prerequisites,
            prerequisite_leaders=self.prerequisite_leaders,
            requires=self._requires,
            missing=self.missing,
            depth=max(k, self.depth),
        )


def fuse(
    answers: Sequence[tuple[str, float, Sequence[Candidate]]],
    *,
    k: int = 15,
    method: Literal["score", "rrf", "relative"] = "score",
    abstain_below: float = 0.0,
    min_confidence: float = 0.0,
    rrf_k: float = 60.0,
    expand: float = 0.0,
    members: Mapping[str, Sequence[str]] | None = None,
    groups_of: Mapping[str, Sequence[str]] | None = None,
    prerequisites: float = 0.0,
    prerequisite_leaders: int = 5,
    requires: Mapping[str, Sequence[str]] | None = None,
    missing: float = 0.0,
    depth: int = 50,
) -> list[Candidate]:
    """Merge ``(classifier name, weight, candidates)`` answers (see
    :class:`FusionClassifier`; ``requires``: each tool's prerequisites)."""
    total = sum(w for _, w, _ in answers) or 1.0
    summed: dict[str, float] = {}
    best: dict[str, float] = {}
    rrf: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}
    tags: dict[str, tuple[str, ...]] = {}
    relative: dict[str, float] = {}
    for _name, weight, candidates in answers:
        best_conf = max((c.confidence for c in candidates), default=0.0) or 1.0
        for rank, cand in enumerate(candidates):
            n = cand.name
            conf = max(0.0, min(1.0, cand.confidence))
            relative[n] = relative.get(n, 0.0) + weight * conf / best_conf
            summed[n] = summed.get(n, 0.0) + weight * conf
            if conf * min(weight, 1.0) > best.get(n, 0.0):
                best[n] = conf * min(weight, 1.0)
            rrf[n] = rrf.get(n, 0.0) + weight / (rrf_k + rank + 1)
            if cand.reason:
                reasons.setdefault(n, []).append(cand.reason)
            if cand.tags:
                tags[n] = tuple(dict.fromkeys((*tags.get(n, ()), *cand.tags)))
    if not summed:
        return []
    if missing > 0.0:
        # A tool one member ranked and another did not gets, from the other, a share
        # of that member's last (lowest) answered confidence: it scored at most that.
        # Only from a member whose answer was cut at ``depth``: one that answered
        # fewer gave everything else nothing.
        for _name, weight, candidates in answers:
            if not candidates or len(candidates) < depth:
                continue
            best_conf = max(c.confidence for c in candidates) or 1.0
            floor = missing * max(0.0, min(1.0, candidates[-1].confidence))
            have = {c.name for c in candidates}
            for n in relative:
                if n not in have:
                    relative[n] += weight * floor / best_conf
    confidence = {n: 0.5 * (summed[n] / total + best[n]) for n in summed}
    key = rrf if method == "rrf" else relative if method == "relative" else confidence
    if max(confidence.values()) < abstain_below:
        return []
    if expand > 0.0 and members and groups_of:
        # Group expansion: the other tools of a matched group follow its best member,
        # at ``expand`` times its score (tools of one server or pack work together).
        leaders = sorted(key, key=lambda n: -key[n])[:k]
        for n in leaders:
            for group in groups_of.get(n, ()):
                for sibling in members.get(group, ()):
                    if sibling in key:
                        continue
                    key[sibling] = expand * key[n]
                    confidence[sibling] = expand * confidence[n]
                    reasons[sibling] = [f"group {group} of {n}"]
                    tags[sibling] = (group,)
    if prerequisites > 0.0 and requires:
        # Prerequisites: the tools the best candidates need first (sign in, change the
        # current directory, look up an argument) follow them (see ``_deps``).
        raised = with_prerequisites(
            key, requires, leaders=prerequisite_leaders, share=prerequisites
        )
        for before, after in raised.items():
            confidence[before] = max(confidence.get(before, 0.0), prerequisites * confidence[after])
            reasons[before] = [f"before {after}", *reasons.get(before, ())]
    ranked = sorted(key, key=lambda n: -key[n])
    out: list[Candidate] = []
    for n in ranked:
        c = confidence[n]
        if c < min_confidence:
            continue
        out.append(Candidate(n, c, "; ".join(reasons.get(n, ())), tags.get(n, ())))
        if len(out) >= k:
            break
    return out


def default_classifiers(config: IntentConfig | Mapping[str, Any] | None = None) -> Classifier:
    """``default_classifiers(config) -> Classifier``: the injector's intent classifier,
    a :class:`FusionClassifier` of the rule classifier (when ``config.rules`` has rules),
    BM25 retrieval (``toolweave[inject]``) and the offline embedding classifier
    (``toolweave[embed]``; with ``embed="auto"``, only when installed).

    Args:
        config: An :class:`IntentConfig`, its fields as a mapping, or ``None`` for the
            defaults.

    Returns:
        The fusion, not indexed yet: call ``index(tool_docs(...))`` first.
    """
    if config is None:
        config = IntentConfig()
    elif not isinstance(config, IntentConfig):
        config = IntentConfig.from_mapping(config)
    members: list[Classifier] = []
    if config.rules:
        from toolweave.inject._rules import RuleClassifier

        members.append(RuleClassifier(config.rules))
    if config.lexical:
        from toolweave.inject._lexical import LexicalClassifier

        members.append(
            LexicalClassifier(
                history_decay=config.history_decay,
                history_turns=config.history_turns,
                value_weight=config.value_weight,
            )
        )
    weights = dict(config.weights)
    if config.char_grams > 0:
        from toolweave.inject._lexical import LexicalClassifier

        members.append(
            LexicalClassifier(
                history_decay=config.history_decay,
                history_turns=config.history_turns,
                analyzer="grams",
                scale=20.0,
            )
        )
        weights.setdefault("bm25-grams", config.char_grams)
    if config.embed:
        from toolweave.inject._embed import EmbeddingClassifier, embedding_available

        if config.embed is True or embedding_available():
            members.append(
                EmbeddingClassifier(
                    history_decay=config.history_decay, history_turns=config.history_turns
                )
            )
    return FusionClassifier(
        members,
        weights=weights,
        abstain_below=config.abstain_below,
        min_confidence=config.min_confidence,
        method=config.method,
        expand_groups=config.expand_groups,
        prerequisites=config.prerequisites,
        missing=config.missing,
    )
