"""What a framework adapter provides to the workloads."""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from twbench._tools import RAW_ARGS

__all__ = ["Dispatch", "Framework", "Variant", "first_call_of"]


@dataclass(frozen=True)
class Variant:
    """One way of calling the tool that a framework offers (a row of W1).

    Attributes:
        key: ``async``, ``sync`` or a framework-specific key (``sync-thread``).
        kind: Which tool function runs (``async`` or ``sync``).
        label: What the row says about the variant (how a sync tool runs).
    """

    key: str
    kind: str
    label: str


@dataclass
class Dispatch:
    """A prepared tool ready to be called through a framework's natural public path.

    Attributes:
        invoke: The timed call: the raw JSON arguments in, the framework's result out.
        answer: Turns ``invoke``'s result into the text the model would read (not timed).
        path: Exactly which public path ``invoke`` goes through.
        closers: Called (not timed) when the workload is done with the dispatch.
    """

    invoke: Callable[[str], Awaitable[Any]]
    answer: Callable[[Any], str]
    path: str
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def close(self) -> None:
        """Release what the dispatch holds (clients, sessions)."""
        for closer in reversed(self.closers):
            await closer()


class Framework:
    """Base of the adapters: one per framework, each timing its natural public path.

    Subclasses set the class attributes and implement the methods a workload needs; a
    workload skips a framework whose method raises :class:`NotImplementedError`.
    """

    key: ClassVar[str]
    """Short stable name used in tables (``toolweave``, ``langchain-core``)."""
    label: ClassVar[str]
    """Name shown in tables."""
    dists: ClassVar[tuple[str, ...]] = ()
    """Distributions whose versions the report lists."""
    modules: ClassVar[tuple[str, ...]] = ()
    """Modules that must import for the framework to run."""
    sync_note: ClassVar[str] = ""
    """How the framework runs a sync tool (inline, worker thread, ...)."""
    build_path: ClassVar[str] = ""
    """What W2 times for this framework."""
    definitions_path: ClassVar[str] = ""
    """What W3 times for this framework."""

    def missing(self) -> str | None:
        """Why the framework cannot run here, or ``None``."""
        for module in self.modules:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (pip install -r benchmarks/requirements.txt)"
        return None

    def variants(self) -> Sequence[Variant]:
        """The W1 rows of this framework."""
        return (
            Variant("async", "async", "async tool"),
            Variant("sync", "sync", f"sync tool ({self.sync_note})"),
        )

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        """Build a set holding the tool (plus ``fillers`` distinct other tools) and
        return its call path."""
        raise NotImplementedError

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        """Register every function as a tool and build the framework's set (W2)."""
        raise NotImplementedError

    async def first_call(self, built: Any, name: str) -> Callable[[], Awaitable[str]]:
        """Prepare (untimed) the first call of tool ``name`` of a fresh set; the returned
        coroutine function makes that call (timed) and returns the model text."""
        raise NotImplementedError

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        """Prepare (untimed) rendering OpenAI definitions of every tool of a built set; the
        returned coroutine function renders them (timed)."""
        raise NotImplementedError


def first_call_of(
    invoke: Callable[[str], Awaitable[Any]], answer: Callable[[Any], str]
) -> Callable[[], Awaitable[str]]:
    """What :meth:`Framework.first_call` returns for a framework called as ``invoke(raw)``:
    one call with the benchmark's arguments, read as the model's text by ``answer``."""

    async def call() -> str:
        return answer(await invoke(RAW_ARGS))

    return call
