"""The merge pipeline: baseline, then external snapshots, then a remote list.

Priority is baseline > external > remote. A lower layer's entry whose tool id or
client-visible name is already taken by a higher layer (or, for external tools, by an
earlier tool of the same layer) is skipped and reported, never silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from toolweave.catalog._erasure import ErasedTool

__all__ = ["BuildReport", "Candidate", "MergeResult", "SkippedEntry", "merge_layers"]


@dataclass(frozen=True, slots=True)
class SkippedEntry:
    """A configured or offered tool that the built set leaves out, and why.

    Attributes:
        source: Where the entry came from: ``baseline``, ``external`` or ``remote``.
        name: Its client-visible name.
        tool_id: Its fully qualified id (empty when it could not be resolved).
        reason: A stable tag: ``id_conflict``, ``name_conflict``, ``mode``,
            ``dependency``, ``conflict`` or ``removed``; or ``schema``: the tool is in
            the set, but its argument schema cannot be made, so listings leave it out
            and its calls answer ``unavailable`` (found on its first listing).
        message: The same in words.
        winner: For conflicts: the layer that kept the id or name.
    """

    source: str
    name: str
    tool_id: str
    reason: str
    message: str
    winner: str = ""

    def __str__(self) -> str:
        return f"[{self.reason}] {self.source} {self.name}: {self.message}"


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What a build left out, for hosts and operators to inspect.

    Attributes:
        skipped: Every entry left out, in the order the build met them.
    """

    skipped: tuple[SkippedEntry, ...] = ()

    def by_reason(self, reason: str) -> list[SkippedEntry]:
        """The skipped entries with tag ``reason``."""
        return [s for s in self.skipped if s.reason == reason]


T = TypeVar("T")


@dataclass(slots=True)
class Candidate(Generic[T]):
    """One entry offered to the merge.

    Attributes:
        source: ``baseline``, ``external`` or ``remote``.
        name: The client-visible name it would get.
        fqid: The fully qualified id, or ``None`` when it did not resolve (such an
            entry conflicts with nothing; validation reports it).
        item: What the caller carries along (a configuration entry, a handle).
    """

    source: str
    name: str
    fqid: str | None
    item: T


@dataclass(slots=True)
class MergeResult(Generic[T]):
    """The merged layers.

    Attributes:
        builtin: Baseline entries, then the remote entries kept, in their order.
        external: External tools kept, in offered order.
        skipped: Everything left out.
    """

    builtin: list[Candidate[T]] = field(default_factory=list)
    external: list[Candidate[ErasedTool]] = field(default_factory=list)
    skipped: list[SkippedEntry] = field(default_factory=list)


def _clash(
    cand: Candidate[Any], fqids: dict[str, str], names: dict[str, str]
) -> SkippedEntry | None:
    if cand.fqid is not None and cand.fqid in fqids:
        winner = fqids[cand.fqid]
        return SkippedEntry(
            cand.source,
            cand.name,
            cand.fqid,
            "id_conflict",
            f"tool {cand.fqid} is already provided by the {winner} configuration",
            winner,
        )
    if cand.name in names:
        winner = names[cand.name]
        return SkippedEntry(
            cand.source,
            cand.name,
            cand.fqid or "",
            "name_conflict",
            f"name {cand.name!r} is already taken by the {winner} configuration",
            winner,
        )
    return None


def merge_layers(
    baseline: Sequence[Candidate[T]],
    external: Sequence[Candidate[ErasedTool]],
    remote: Sequence[Candidate[T]],
) -> MergeResult[T]:
    """Merge three layers with priority baseline > external > remote.

    Baseline entries are all kept (duplicates among them are configuration problems
    for validation to report). An external tool is skipped when its id or name is
    taken by the baseline or by an earlier external tool; a remote entry when its id is
    taken by the layers above, or its name by anything before it.
    """
    result: MergeResult[T] = MergeResult()
    fqids: dict[str, str] = {}
    names: dict[str, str] = {}
    for cand in baseline:
        result.builtin.append(cand)
        if cand.fqid is not None:
            fqids.setdefault(cand.fqid, cand.source)
        names.setdefault(cand.name, cand.source)
    for ext in external:
        skipped = _clash(ext, fqids, names)
        if skipped is not None:
            result.skipped.append(skipped)
            continue
        result.external.append(ext)
        if ext.fqid is not None:
            fqids[ext.fqid] = ext.source
        names[ext.name] = ext.source
    for cand in remote:
        skipped = _clash(cand, fqids, names)
        if skipped is not None:
            result.skipped.append(skipped)
            continue
        result.builtin.append(cand)
        names[cand.name] = cand.source
    return result
