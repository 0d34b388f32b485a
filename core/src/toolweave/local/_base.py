"""``BaseLocalTool``: the untyped shape of a plugin tool (a name, a description, an
OpenAI-style function definition and ``run(params) -> dict``), and its erased handle."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any

from toolweave._threads import run_in_worker
from toolweave.catalog import ErasedTool, external_tool
from toolweave.catalog._external import unresolvable_refs
from toolweave.errors import ErrorKind, ToolError

__all__ = ["BaseLocalTool", "erase_local"]


class BaseLocalTool(abc.ABC):
    """A tool written as a class with a JSON Schema and a ``run`` method taking and
    returning plain dicts (the shape of seed 2's ``LocalToolPluginLoader`` plugins).

    The arguments are checked against the schema of :meth:`build_schema` before
    :meth:`run` is called (an invalid call answers ``invalid_params`` and ``run`` never
    sees it). ``run`` is synchronous and runs in a worker thread. A result
    ``{"ok": False, "error": "..."}`` becomes an ``execution_error`` carrying its message
    (``error``, else ``message``, else ``msg``); any other dict is the call's output.

    Example:
        ```python
        @register_tool(group="local_core", permission=["admin"])
        class Echo(BaseLocalTool):
            tool_name = "echo_text"
            tool_desc = "Repeat a text. Not for anything else."

            def build_schema(self) -> dict:
                return {"type": "function", "function": {
                    "name": self.tool_name, "description": self.tool_desc,
                    "parameters": {"type": "object",
                                   "properties": {"text": {"type": "string"}},
                                   "required": ["text"]}}}

            def run(self, params: dict) -> dict:
                return {"ok": True, "text": params["text"]}
        ```

    Attributes:
        tool_name: The tool's name (what the model calls).
        tool_desc: What the tool is for (the description the model reads, unless the
            function definition has its own).
        read_only: Whether the tool changes nothing.
        timeout: The call deadline in seconds (``None``: the session's default for
            external tools).
    """

    tool_name: str = ""
    tool_desc: str = ""
    read_only: bool = False
    timeout: float | None = None

    def build_schema(self) -> dict[str, Any]:
        """The OpenAI-style function definition: ``{"type": "function", "function":
        {"name", "description", "strict", "parameters"}}`` (a bare ``{"name",
        "description", "parameters"}`` is accepted too). The default takes no
        arguments."""
        return {
            "type": "function",
            "function": {
                "name": self.tool_name,
                "description": self.tool_desc,
                "parameters": {"type": "object", "properties": {}},
            },
        }

    @abc.abstractmethod
    def run(self, params: dict[str, Any]) -> dict[str, Any]:
        """Do the work with arguments that passed the schema; return a dict
        (``{"ok": False, "error": "..."}`` for a failure the model should read)."""


def _function(definition: Any, cls: type) -> Mapping[str, Any]:
    if not isinstance(definition, Mapping):
        raise TypeError(f"{cls.__qualname__}.build_schema() must return a dict")
    function = definition.get("function", definition)
    if not isinstance(function, Mapping):
        raise TypeError(f"{cls.__qualname__}.build_schema(): 'function' must be an object")
    return function


def erase_local(tool: BaseLocalTool, source: str) -> ErasedTool:
    """The erased handle of a :class:`BaseLocalTool` instance, from ``source``
    (``dir:<folder>``).

    Raises:
        TypeError: The definition is malformed: no name, a name that differs from
            ``tool_name``, or parameters that are not a valid JSON Schema object.
    """
    import jsonschema

    cls = type(tool)
    function = _function(tool.build_schema(), cls)
    name = function.get("name") or tool.tool_name
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__qualname__} has no tool_name")
    if tool.tool_name and name != tool.tool_name:
        raise TypeError(
            f"{cls.__qualname__}: build_schema() names the tool {name!r}, tool_name says "
            f"{tool.tool_name!r}"
        )
    description = function.get("description") or tool.tool_desc
    schema = function.get("parameters")
    if schema is None:
        schema = {"type": "object", "properties": {}}
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise TypeError(f"{name}: 'parameters' must be a JSON Schema object")
    schema = dict(schema)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise TypeError(f"{name}: 'parameters' is not a valid JSON Schema: {exc.message}") from exc
    dangling = unresolvable_refs(schema)
    if dangling:
        raise TypeError(
            f"{name}: 'parameters' refers to what it does not hold ($ref "
            f"{', '.join(map(repr, dangling))}); every call would fail"
        )
    run = tool.run

    async def call(_ctx: Any, arguments: dict[str, Any]) -> Any:
        return result_of(name, await run_in_worker(run, dict(arguments)))

    return external_tool(
        id=name,
        namespace="local",
        description=str(description),
        input_schema=schema,
        call=call,
        source=source,
        read_only=bool(tool.read_only),
        timeout=tool.timeout,
    )


def result_of(name: str, result: Any) -> Any:
    """The output of a ``run`` result; ``{"ok": False, ...}`` raises a typed error."""
    if isinstance(result, Mapping) and result.get("ok") is False:
        message: Any = None
        for key in ("error", "message", "msg"):
            message = result.get(key)
            if message:
                break
        if isinstance(message, Mapping):
            message = message.get("message") or message.get("msg") or dict(message)
        text = str(message) if message else f"{name} reported a failure without a message"
        raise ToolError(ErrorKind.EXECUTION_ERROR, text, dict(result))
    return result
