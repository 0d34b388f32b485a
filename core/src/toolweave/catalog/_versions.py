"""Behaviour versions: ordering, lifecycle, and which version a configuration gets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolweave.authoring._tool import Lifecycle

if TYPE_CHECKING:
    from toolweave.catalog._erasure import ErasedTool

__all__ = ["DeprecatedVersionWarning", "ToolweaveWarning", "choose_version", "version_key"]


class ToolweaveWarning(UserWarning):
    """Base class of the warnings toolweave emits."""


class DeprecatedVersionWarning(ToolweaveWarning):
    """A configuration chose a deprecated behaviour version of a tool.

    Attributes:
        tool_id: The tool's fully qualified id.
        version: The deprecated version chosen.
        replacement: What to use instead, if the tool says.
    """

    def __init__(self, tool_id: str, version: str, replacement: str | None) -> None:
        self.tool_id = tool_id
        self.version = version
        self.replacement = replacement
        instead = f"; use {replacement} instead" if replacement else ""
        super().__init__(f"{tool_id} version {version} is deprecated{instead}")


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key of a version string: dot- or dash-separated parts, numbers compared as numbers.

    Example:
        >>> sorted(["10", "2", "2.1"], key=version_key)
        ['2', '2.1', '10']
    """
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"[.\-]", version)
    )


@dataclass(frozen=True, slots=True)
class VersionChoice:
    """The outcome of choosing a version.

    Attributes:
        tool: The chosen handle, or ``None`` when nothing can be chosen.
        problem: Why nothing was chosen.
        available: The versions a configuration may name (not removed), oldest first.
        deprecated: ``True`` when the chosen version is deprecated.
    """

    tool: ErasedTool | None
    problem: str = ""
    available: tuple[str, ...] = ()
    deprecated: bool = False


def choose_version(
    fqid: str, versions: Mapping[str, ErasedTool], wanted: str | None
) -> VersionChoice:
    """Pick the version a configuration gets.

    ``wanted`` names a version, or ``None`` for the newest active one (when no version
    is active, the newest deprecated one). Removed versions are never chosen.
    """
    ordered = sorted(versions.values(), key=lambda t: version_key(t.version))
    usable = tuple(t.version for t in ordered if t.lifecycle is not Lifecycle.REMOVED)
    if wanted is not None:
        tool = versions.get(wanted)
        if tool is None:
            return VersionChoice(None, f"{fqid} has no version {wanted!r}", usable)
        if tool.lifecycle is Lifecycle.REMOVED:
            instead = f"; use {tool.replacement} instead" if tool.replacement else ""
            return VersionChoice(None, f"{fqid} version {wanted} was removed{instead}", usable)
        return VersionChoice(tool, "", usable, tool.lifecycle is Lifecycle.DEPRECATED)
    for lifecycle in (Lifecycle.ACTIVE, Lifecycle.DEPRECATED):
        candidates = [t for t in ordered if t.lifecycle is lifecycle]
        if candidates:
            return VersionChoice(candidates[-1], "", usable, lifecycle is Lifecycle.DEPRECATED)
    return VersionChoice(None, f"every version of {fqid} was removed", usable)
