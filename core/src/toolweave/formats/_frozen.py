"""Read-only JSON containers for the listings a tool set shares with its hosts.

A rendered listing is cached and handed to every session of the set; a host that
edits one (``defs[0]["description"] += "..."``) would change every later listing of
every session. The containers below are ``dict`` and ``list`` subclasses (so
``json.dumps``, provider SDKs and ``==`` treat them as the plain types) whose
mutating methods raise ``TypeError``; ``copy.deepcopy`` of one gives plain, editable
containers.
"""

from __future__ import annotations

import copy
from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList", "freeze"]

_MESSAGE = (
    "tool definitions are shared by every session of the set and are read-only; "
    "edit a copy (copy.deepcopy(definitions))"
)


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(_MESSAGE)


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` that refuses to change."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def freeze(value: Any) -> Any:
    """``value`` with every dict and list (at any depth) made read-only."""
    cls = type(value)
    if cls is dict or cls is FrozenDict:
        return dict.__new__(FrozenDict) if not value else _frozen_dict(value)
    if cls is list or cls is FrozenList or cls is tuple:
        return _frozen_list(value)
    return value


def _frozen_dict(value: dict[str, Any]) -> FrozenDict:
    out = FrozenDict()
    dict.update(out, {k: freeze(v) for k, v in value.items()})
    return out


def _frozen_list(value: Any) -> FrozenList:
    out = FrozenList()
    list.extend(out, [freeze(v) for v in value])
    return out
