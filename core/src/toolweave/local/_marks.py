"""``@register_tool``: what a plugin file marks as a tool, with its groups and roles."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, overload

__all__ = ["LocalSpec", "collecting", "register_tool", "spec_of"]

T = TypeVar("T")

MARK = "__toolweave_local__"
"""The attribute ``@register_tool`` sets on what it decorates (in the object's own
``__dict__``: a subclass of a decorated class is not registered by inheritance)."""


@dataclass(frozen=True, slots=True)
class LocalSpec:
    """What ``@register_tool`` declared for one tool.

    Attributes:
        groups: The center groups of the tool (operators enable and disable them together).
        roles: The role whitelist (``None``: every role). Enforced by a registry center:
            the loader serves such a tool only to sessions under its center.
    """

    groups: tuple[str, ...] = ()
    roles: tuple[str, ...] | None = None


_local = threading.local()
_active: list[list[object]] = []
"""The collectors of the imports in progress, newest last."""


@contextmanager
def collecting() -> Iterator[list[object]]:
    """Collect every object ``@register_tool`` marks while the block runs (the loader
    wraps the import of one plugin file in it): those the block's thread marks, and
    those marked by other threads while it runs (a thread the file started), which go
    to the newest block. No lock is held: an import that never finishes holds up no
    other."""
    found: list[object] = []
    outer = getattr(_local, "found", None)
    _local.found = found
    _active.append(found)
    try:
        yield found
    finally:
        _active.remove(found)
        _local.found = outer


def spec_of(obj: object) -> LocalSpec | None:
    """The :class:`LocalSpec` ``@register_tool`` put on ``obj`` itself, if any."""
    spec = vars(obj).get(MARK) if hasattr(obj, "__dict__") else None
    return spec if isinstance(spec, LocalSpec) else None


def _names(value: str | Iterable[str] | None, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise TypeError(f"register_tool: every {what} is a non-empty string, not {item!r}")
    return tuple(dict.fromkeys(item.strip() for item in items))


@overload
def register_tool(target: T, /) -> T: ...
@overload
def register_tool(
    target: None = None,
    /,
    *,
    group: str | Iterable[str] | None = None,
    permission: str | Iterable[str] | None = None,
) -> Callable[[T], T]: ...


def register_tool(
    target: Any = None,
    /,
    *,
    group: str | Iterable[str] | None = None,
    permission: str | Iterable[str] | None = None,
) -> Any:
    """Mark a tool of a plugin file: the plugin-folder loader registers it, with its
    groups and role whitelist, in the registry center and in attached sessions.

    Decorates a ``Tool[Args, Output]`` class, an ``@tool`` function (put
    ``@register_tool`` above ``@tool``; a plain function is turned into a tool with
    ``@tool``'s defaults) or a :class:`~toolweave.local.BaseLocalTool` subclass. Outside a
    plugin folder it only marks the object.

    Example:
        ```python
        @register_tool(group="local_core", permission=["common_user", "admin"])
        class TextSummaryTool(BaseLocalTool):
            ...
        ```

    Args:
        target: The tool, when used bare (``@register_tool``).
        group: A group name or several (the center's ``groups``).
        permission: The roles allowed to call it (the center's role whitelist; ``None``:
            every role). Roles are enforced by a registry center: a tool that has them
            is served only to sessions under the loader's (writable) center.

    Raises:
        TypeError: The object is not a tool, or is marked already, or a group or role
            is not a non-empty string, or ``permission`` is an empty list (leave it out
            for every role).
    """
    groups = _names(group, "group") or ()
    roles = _names(permission, "role")
    if roles is not None and not roles:
        raise TypeError(
            "register_tool: permission=[] would allow no role; leave it out to allow every role"
        )
    spec = LocalSpec(groups, None if roles is None else tuple(sorted(roles)))

    def mark(obj: Any) -> Any:
        from toolweave.authoring import Tool, tool
        from toolweave.local._base import BaseLocalTool

        if spec_of(obj) is not None:
            raise TypeError(
                f"register_tool is applied twice to {getattr(obj, '__qualname__', obj)!r}; "
                "mark a tool once, with all its groups and roles"
            )
        if isinstance(obj, type) and issubclass(obj, Tool | BaseLocalTool):
            pass
        elif callable(obj) and not isinstance(obj, type):
            obj = tool(obj)
        else:
            raise TypeError(
                f"register_tool decorates a Tool class, an @tool function or a BaseLocalTool "
                f"subclass, not {obj!r}"
            )
        setattr(obj, MARK, spec)
        found = getattr(_local, "found", None)
        if found is None:
            newest = _active[-1:]  # a slice: the list may change meanwhile
            found = newest[0] if newest else None
        if found is not None:
            found.append(obj)
        return obj

    if target is not None:
        return mark(target)
    return mark
