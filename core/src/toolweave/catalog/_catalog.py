"""The execution registry: fully qualified id → erased handle, per behaviour version."""

from __future__ import annotations

from collections.abc import Iterator
from typing import final

from toolweave.catalog._erasure import ErasedTool
from toolweave.errors import DuplicateToolError

__all__ = ["Catalog"]


@final
class Catalog:
    """Every registered tool, keyed by ``namespace:id`` and then by version.

    Registration order is kept: listings and default configurations follow it.
    """

    __slots__ = ("_by_bare", "_by_fqid")

    def __init__(self) -> None:
        self._by_fqid: dict[str, dict[str, ErasedTool]] = {}
        self._by_bare: dict[str, dict[str, None]] = {}

    def register(self, tool: ErasedTool) -> None:
        """Add a handle.

        Raises:
            DuplicateToolError: The same id and version were registered before; the
                error names both origins.
        """
        versions = self._by_fqid.setdefault(tool.fqid, {})
        existing = versions.get(tool.version)
        if existing is not None:
            raise DuplicateToolError(tool.fqid, existing.origin, tool.origin)
        versions[tool.version] = tool
        self._by_bare.setdefault(_bare(tool.fqid), {})[tool.fqid] = None

    def remove_origin(self, origin: str) -> list[str]:
        """Remove every registration made by ``origin``; returns the ids removed."""
        removed: list[str] = []
        for fqid, versions in list(self._by_fqid.items()):
            for version, tool in list(versions.items()):
                if tool.origin == origin:
                    del versions[version]
                    removed.append(fqid)
            if not versions:
                del self._by_fqid[fqid]
                same = self._by_bare.get(_bare(fqid))
                if same is not None:
                    same.pop(fqid, None)
                    if not same:
                        del self._by_bare[_bare(fqid)]
        return removed

    def versions(self, fqid: str) -> dict[str, ErasedTool]:
        """Every version registered for ``fqid`` (empty when unknown)."""
        return dict(self._by_fqid.get(fqid, {}))

    def latest(self, fqid: str) -> ErasedTool | None:
        """The most recently registered version of ``fqid``, or ``None``."""
        versions = self._by_fqid.get(fqid)
        if not versions:
            return None
        return next(reversed(versions.values()))

    def resolve(self, tool_id: str) -> list[str]:
        """The fully qualified ids a configured id may mean.

        ``ns:id`` matches itself; a bare ``id`` matches that id in every namespace
        (a result with more than one element is ambiguous).
        """
        if ":" in tool_id:
            return [tool_id] if tool_id in self._by_fqid else []
        return list(self._by_bare.get(tool_id, ()))

    def __contains__(self, fqid: object) -> bool:
        return fqid in self._by_fqid

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_fqid)

    def __len__(self) -> int:
        return len(self._by_fqid)


def _bare(fqid: str) -> str:
    """The id without its namespace."""
    return fqid.split(":", 1)[1]
