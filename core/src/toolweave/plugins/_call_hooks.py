"""The ``before_call`` / ``after_call`` / ``on_call_error`` hookspecs as call hooks:
one small :class:`~toolweave.CallHook` per pack and hook, so every implementation
runs in the one pipeline, compiled only where it is implemented, and a failing one is
isolated with its pack's name."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from toolweave.results import CallResult
from toolweave.runtime import CallHook, HookCall

__all__ = ["SPECS", "pack_call_hook"]

SPECS = ("before_call", "after_call", "on_call_error")
"""The hookspecs adapted here, in the order their steps run."""


class _Step(CallHook):
    """Runs one pack's implementation of one hookspec."""

    def __init__(self, name: str, fn: Callable[..., Any], argnames: tuple[str, ...]) -> None:
        self.name = name
        self.fn = fn
        self.argnames = argnames

    def run(self, **given: Any) -> Any:
        """Call the implementation with the arguments it names (as pluggy does)."""
        return self.fn(*[given[name] for name in self.argnames])


class _Before(_Step):
    fail_closed = True  # a check that failed never lets the call through

    def before(self, call: HookCall) -> Any:
        return self.run(call=call)


class _AsyncBefore(_Before):
    async def before(self, call: HookCall) -> Any:
        return await self.run(call=call)


class _After(_Step):
    fail_closed = False  # it adds text: when it fails, the result is kept

    def after(self, call: HookCall, result: CallResult) -> Any:
        return self.run(call=call, result=result)


class _AsyncAfter(_After):
    async def after(self, call: HookCall, result: CallResult) -> Any:
        return await self.run(call=call, result=result)


class _OnError(_Step):
    fail_closed = False

    def on_error(self, call: HookCall, result: CallResult) -> Any:
        return self.run(call=call, result=result)


class _AsyncOnError(_OnError):
    async def on_error(self, call: HookCall, result: CallResult) -> Any:
        return await self.run(call=call, result=result)


_KINDS: dict[tuple[str, bool], type[_Step]] = {
    ("before_call", False): _Before,
    ("before_call", True): _AsyncBefore,
    ("after_call", False): _After,
    ("after_call", True): _AsyncAfter,
    ("on_call_error", False): _OnError,
    ("on_call_error", True): _AsyncOnError,
}


def pack_call_hook(
    pack: str, spec: str, fn: Callable[..., Any], argnames: tuple[str, ...]
) -> CallHook:
    """The call hook that runs pack ``pack``'s implementation ``fn`` of ``spec`` (one
    of :data:`SPECS`), passing it the arguments it names (``argnames``, as pluggy
    lists them)."""
    is_async = inspect.iscoroutinefunction(inspect.unwrap(fn))
    return _KINDS[(spec, is_async)](f"pack {pack}: {spec}", fn, argnames)
