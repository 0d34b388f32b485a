"""Read-only JSON containers for the listings a tool set shares with its hosts.

A rendered listing is cached and handed to every session of the set; a host that
edits one (``defs[0]["description"] += "..."``) would change every later listing of
every session. The containers below are ``dict`` and ``list`` subclasses (so
``json.dumps``, provider SDKs and ``==`` treat them as the plain types) whose
mutating methods raise ``TypeError``; ``copy.deepcopy`` of one gives plain, editable
containers.

Every frozen container is frozen all the way down (the constructors freeze what they
are given), so :func:`freeze` takes one as it is: parts shared between listings (the
JSON Schema fragments of argument types, a tool's schema) are frozen once, not copied
into every listing. Containers made from parts that are frozen already are
:class:`Prefrozen` dicts: ``dict``'s own constructor makes them, without a walk over
the values (a listing makes a few per tool).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, NoReturn

__all__ = [
    "FrozenDict",
    "FrozenList",
    "Prefrozen",
    "Titled",
    "freeze",
    "frozen_dict",
    "frozen_list",
    "titled",
]

_MESSAGE = (
    "tool definitions are shared by every session of the set and are read-only; "
    "edit a copy (copy.deepcopy(definitions))"
)


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(_MESSAGE)


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses to change (its values are frozen too)."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        dict.update(self, {k: freeze(v) for k, v in dict(*args, **kwargs).items()})

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class Prefrozen(FrozenDict):
    """A :class:`FrozenDict` of values that are frozen already (not checked), made by
    ``dict``'s constructor: ``Prefrozen(values, key=value)``."""

    __slots__ = ()

    if TYPE_CHECKING:

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    else:
        __init__ = dict.__init__


class Titled(Prefrozen):
    """A schema that is :attr:`base` (shared by many tools) with a top-level ``title``
    of its own: what drops titles (:func:`toolweave.formats._schema.untitled`) uses
    the shared base instead of walking the copy. Made by :func:`titled`."""

    __slots__ = ("base",)

    base: Prefrozen


def titled(base: Prefrozen, title: str) -> Titled:
    """``base`` (frozen) with the top-level ``title`` ``title``."""
    out = Titled(base, title=title)
    object.__setattr__(out, "base", base)
    return out


class FrozenList(list[Any]):
    """A ``list`` that refuses to change (its items are frozen too)."""

    __slots__ = ()

    def __init__(self, *args: Any) -> None:
        items: list[Any] = list(*args)
        list.extend(self, [freeze(v) for v in items])

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def freeze(value: Any) -> Any:
    """``value`` with every dict and list (at any depth) made read-only; a frozen
    container is returned as it is."""
    cls = type(value)
    if cls is Prefrozen or cls is FrozenDict or cls is FrozenList or cls is Titled:
        return value
    if cls is dict:
        return frozen_dict({k: freeze(v) for k, v in value.items()})
    if cls is list or cls is tuple:
        return frozen_list([freeze(v) for v in value])
    return value


def frozen_dict(values: dict[str, Any]) -> FrozenDict:
    """A frozen dict of ``values``, which must be frozen already (not checked)."""
    return Prefrozen(values)


def frozen_list(values: list[Any]) -> FrozenList:
    """A frozen list of ``values``, which must be frozen already (not checked)."""
    out = list.__new__(FrozenList)
    list.extend(out, values)
    return out
