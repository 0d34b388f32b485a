"""What a framework adapter provides to the workloads."""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from twbench._tools import raw_for

__all__ = ["Dispatch", "Framework", "HostLoop", "Variant", "first_call_of", "host_loop_of"]

HostLoop = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]
"""A host's turn: a provider reply (an OpenAI chat message with tool calls) in, the tool
messages to append out."""


@dataclass(frozen=True)
class Variant:
    """One way of calling the tool that a framework offers (a row of W1).

    Attributes:
        key: ``async``, ``sync``, ``rich`` or a framework-specific key (``sync-thread``,
            ``async-packs``).
        kind: Which tool function runs (``async``, ``sync``, ``sleep`` or ``rich``).
        label: What the row says about the variant (how a sync tool runs).
        packs: toolweave only: the four built-in packs are loaded into the same builder,
            and the session is a host's (reminders, guards, the default state store).
    """

    key: str
    kind: str
    label: str
    packs: bool = False


@dataclass
class Dispatch:
    """A prepared tool ready to be called through a framework's natural public path.

    Attributes:
        invoke: The timed call: the raw JSON arguments in, the framework's result out.
        answer: Turns ``invoke``'s result into the text the model would read (not timed).
        path: Exactly which public path ``invoke`` goes through.
        closers: Called (not timed) when the workload is done with the dispatch.
        host: How a host runs a provider reply's tool calls with this framework (W1's
            host loop); ``None``: by hand over ``invoke`` (:func:`host_loop_of`).
        host_path: What ``host`` runs, for the tables.
        session: toolweave only: the session ``invoke`` calls (W1's state-writing rows).
    """

    invoke: Callable[[str], Awaitable[Any]]
    answer: Callable[[Any], str]
    path: str
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    host: HostLoop | None = None
    host_path: str = ""
    session: Any = None

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
            Variant("rich", "rich", "realistic async tool (8 arguments)"),
        )

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        """Build a set holding the tool (plus ``fillers`` distinct other tools) and
        return its call path."""
        raise NotImplementedError

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        """Register every function as a tool and build the framework's set (W2)."""
        raise NotImplementedError

    async def first_call(
        self, built: Any, name: str, kind: str = "async"
    ) -> Callable[[], Awaitable[str]]:
        """Prepare (untimed) the first call of tool ``name`` (a ``kind`` tool) of a fresh
        set; the returned coroutine function makes that call (timed) and returns the
        model text."""
        raise NotImplementedError

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        """Prepare (untimed) rendering OpenAI definitions of every tool of a built set; the
        returned coroutine function renders them (timed)."""
        raise NotImplementedError

    async def use_all(self, built: Any, names: Sequence[str], kind: str) -> tuple[Any, list[str]]:
        """List a built set's OpenAI definitions, then call every tool once (W2's memory
        row). Returns what a host would keep alive (the listing, a session) and each
        call's model text."""
        render = await self.definitions(built)
        listing = await render()
        texts = [await (await self.first_call(built, name, kind))() for name in names]
        return listing, texts


def first_call_of(
    invoke: Callable[[str], Awaitable[Any]], answer: Callable[[Any], str], kind: str = "async"
) -> Callable[[], Awaitable[str]]:
    """What :meth:`Framework.first_call` returns for a framework called as ``invoke(raw)``:
    one call with the benchmark's arguments for a ``kind`` tool, read as the model's text
    by ``answer``."""
    raw = raw_for(kind)

    async def call() -> str:
        return answer(await invoke(raw))

    return call


def host_loop_of(dispatch: Dispatch) -> HostLoop:
    """A host's turn written by hand over a framework's call path: for each tool call of
    the reply, its JSON arguments to ``invoke``, the result read as text, one OpenAI
    ``tool`` message per call (what a host writes for a framework with no reply-level
    API). ``invoke`` is bound to the tool already, so no name is looked up."""
    invoke, answer = dispatch.invoke, dispatch.answer

    async def run(reply: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call in reply["tool_calls"]:
            result = await invoke(call["function"]["arguments"])
            out.append({"role": "tool", "tool_call_id": call["id"], "content": answer(result)})
        return out

    return run
