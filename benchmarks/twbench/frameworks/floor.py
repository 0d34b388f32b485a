"""The floor: what any framework must do at least, written by hand with pydantic."""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, TypeAdapter, create_model

from twbench._tools import floor_adapter, fresh, raw_for
from twbench.frameworks._base import Dispatch, Framework, HostLoop, Variant

__all__ = ["Floor"]

_PATH = "cached TypeAdapter(Args).validate_json(raw) + direct call + str()"


def _args_model(fn: Callable[..., Any]) -> type[BaseModel]:
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], default)
    model: type[BaseModel] = create_model(f"{fn.__name__}_args", **fields)
    return model


_HOST_PATH = (
    "per tool call of the reply: dict lookup by name, W1's floor call, "
    "{role: tool, tool_call_id, content}"
)


def _host(table: dict[str, Callable[[str], Awaitable[str]]]) -> HostLoop:
    async def run(reply: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for call in reply["tool_calls"]:
            fn = call["function"]
            text = await table[fn["name"]](fn["arguments"])
            out.append({"role": "tool", "tool_call_id": call["id"], "content": text})
        return out

    return run


class _Built:
    __slots__ = ("adapters", "fns", "models")

    def __init__(self) -> None:
        self.fns: dict[str, Callable[..., Any]] = {}
        self.adapters: dict[str, TypeAdapter[Any]] = {}
        self.models: dict[str, type[BaseModel]] = {}


class Floor(Framework):
    """Validation with a cached pydantic ``TypeAdapter``, a direct call, ``str()``."""

    key: ClassVar[str] = "floor"
    label: ClassVar[str] = "floor (pydantic by hand)"
    dists: ClassVar[tuple[str, ...]] = ("pydantic", "pydantic-core")
    sync_note: ClassVar[str] = "inline"
    build_path: ClassVar[str] = (
        "per function: signature -> pydantic create_model -> TypeAdapter (validator built eagerly)"
    )
    definitions_path: ClassVar[str] = (
        "per tool: TypeAdapter.json_schema() -> OpenAI function dict (no cache)"
    )

    def variants(self) -> Sequence[Variant]:
        return (
            Variant("async", "async", "async tool"),
            Variant("sync", "sync", "sync tool (inline)"),
            Variant("rich", "rich", "realistic async tool (8 arguments)"),
        )

    async def dispatch(self, variant: Variant, fillers: int = 0) -> Dispatch:
        validate = floor_adapter(variant.kind).validate_json
        if variant.kind == "sync":
            sync_fn = fresh("sync", "join")

            async def invoke_sync(raw: str) -> str:
                args = validate(raw)
                return str(sync_fn(args.a, args.b, args.c))

            return Dispatch(
                invoke_sync, str, _PATH, host=_host({"join": invoke_sync}), host_path=_HOST_PATH
            )
        if variant.kind == "rich":
            rich_fn = fresh("rich", "join")

            async def invoke_rich(raw: str) -> str:
                a = validate(raw)
                return str(
                    await rich_fn(
                        a.title,
                        a.body,
                        a.priority,
                        a.labels,
                        a.location,
                        a.assignees,
                        a.due_in_days,
                        a.draft,
                    )
                )

            return Dispatch(
                invoke_rich, str, _PATH, host=_host({"join": invoke_rich}), host_path=_HOST_PATH
            )
        async_fn = fresh("sleep" if variant.kind == "sleep" else "async", "join")
        others: dict[str, Any] = {f"filler{i}": None for i in range(fillers)}
        others["join"] = async_fn
        table = others  # the floor's "registry": a dict lookup by name

        async def invoke(raw: str) -> str:
            args = validate(raw)
            return str(await table["join"](args.a, args.b, args.c))

        return Dispatch(
            invoke,
            str,
            _PATH + (" (dict lookup)" if fillers else ""),
            host=_host({"join": invoke}),
            host_path=_HOST_PATH,
        )

    def build(self, fns: Sequence[Callable[..., Any]]) -> Any:
        built = _Built()
        for fn in fns:
            model = _args_model(fn)
            built.fns[fn.__name__] = fn
            built.models[fn.__name__] = model
            built.adapters[fn.__name__] = TypeAdapter(model)
        return built

    async def first_call(
        self, built: Any, name: str, kind: str = "async"
    ) -> Callable[[], Awaitable[str]]:
        fn = built.fns[name]
        adapter = built.adapters[name]
        raw = raw_for(kind)

        async def call() -> str:
            args = adapter.validate_json(raw)
            result = fn(**args.__dict__)
            if asyncio.iscoroutine(result):
                result = await result
            return str(result)

        return call

    async def definitions(self, built: Any) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        async def render() -> list[dict[str, Any]]:
            return [
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": inspect.getdoc(built.fns[name]) or "",
                        "parameters": adapter.json_schema(),
                    },
                }
                for name, adapter in built.adapters.items()
            ]

        return render
