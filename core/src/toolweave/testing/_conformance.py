"""Pack conformance: what every pack must get right, checked the same way for all.

Checks (each has a name, usable in ``skip=``):

- ``load``: the pack loads through its ``toolweave.packs`` entry point, registers at
  least one tool, and gives a new session its resources without raising.
- ``name``: client names match ``^[A-Za-z0-9_-]{1,64}$`` (what OpenAI and Anthropic accept).
- ``schema``: the argument schema is a valid JSON Schema (draft 2020-12) of an object.
- ``formats``: the definition renders in every format, OpenAI strict mode included.
- ``description``: the tool and each argument are described, and the tool's
  description says what not to use it for (``do not use``, ``not for``, ``never``,
  ``instead``, ``rather than``, ``only when``...: :func:`toolweave.inject.says_what_not`,
  the heuristic ``toolweave check`` and the injector apply too). A description that
  names the tool's own parameters literally in backticks (`` `offset` `` where
  ``{param:offset}`` would follow a configured rename:
  :func:`toolweave.catalog.literal_parameters`) is a ``ToolweaveWarning``, not a
  failure, as in ``toolweave check``.
- ``state``: every state model a tool declares names its store key on the class itself
  (``state_key: ClassVar[str] = "pack.thing"``), and no two models share a key.
  Without one the key is the module and class name, so moving or renaming the class
  silently loses what sessions stored under the old name.
- ``round_trip``: arguments the schema accepts are accepted by the tool, dump back to
  JSON and parse to the same arguments; a strict-mode reply (``null`` for every
  optional argument) is accepted too.
- ``errors``: malformed calls (unknown argument, missing argument, not an object,
  broken JSON) end as ``invalid_params`` results, never as exceptions.
- ``calls``: every tool is called at least once, in a scratch workspace, with each of
  its declared ``examples`` or, without any, with minimal arguments generated from its
  schema (:func:`example_arguments`). A call fails the check when the tool raises a
  plain exception (not a :class:`~toolweave.ToolError`), returns an output its
  declared ``Output`` does not accept, or streams to its end without a result. A
  ``ToolError`` result (``not_found`` for a generated path, ...) is fine. A tool that
  answers ``unavailable`` (it needs a resource the scratch session lacks, such as
  ``ask_user``'s handler) is skipped, and the skip is logged with its reason.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
import warnings
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from toolweave.catalog import ToolweaveWarning, literal_parameters, literal_parameters_hint
from toolweave.errors import ErrorKind, ToolError, ToolweaveError
from toolweave.formats import FORMATS, drop_optional_nulls, render, to_strict_schema
from toolweave.formats._schema import resolve_ref
from toolweave.inject import NOT_FOR_HINT, says_what_not
from toolweave.state import state_key

if TYPE_CHECKING:
    from toolweave.catalog._toolset import ToolEntry, ToolSet
    from toolweave.runtime._session import SyncSession

__all__ = [
    "CHECKS",
    "Problem",
    "assert_pack_conforms",
    "assert_toolset_conforms",
    "check_pack",
    "check_toolset",
    "example_arguments",
]

logger = logging.getLogger("toolweave.testing")

CHECKS = (
    "load",
    "name",
    "schema",
    "formats",
    "description",
    "state",
    "round_trip",
    "errors",
    "calls",
)
"""Every check, in the order they run."""

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNKNOWN_ARG = "__toolweave_unknown__"


@dataclass(frozen=True, slots=True)
class Problem:
    """One way a pack or tool falls short.

    Attributes:
        check: Which check found it (see :data:`CHECKS`).
        tool: The tool's client name, or ``""`` for the pack as a whole.
        message: What is wrong and what to do about it.
    """

    check: str
    tool: str
    message: str

    def __str__(self) -> str:
        who = f"{self.tool}: " if self.tool else ""
        return f"[{self.check}] {who}{self.message}"


class _NoExample(Exception):
    pass


_FORMAT_EXAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "ipv4": "127.0.0.1",
    "duration": "P1D",
}


def example_arguments(
    schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None, nulls: bool = False
) -> Any:
    """A small value that ``schema`` accepts: required properties only, simplest choices.

    Args:
        schema: The JSON Schema.
        root: The document ``$ref`` is resolved in (default: ``schema``).
        nulls: Choose ``null`` wherever it is allowed (as a strict-mode model would
            for optional arguments).

    Raises:
        ValueError: No example can be built (an unresolvable reference, recursion).
    """
    try:
        return _example(schema, root if root is not None else schema, nulls, 0)
    except _NoExample as exc:
        raise ValueError(str(exc)) from None


def _example(schema: Any, root: Mapping[str, Any], nulls: bool, depth: int) -> Any:
    if depth > 20:
        raise _NoExample("the schema nests too deeply")
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("$ref"), str):
        try:
            target = resolve_ref(root, schema["$ref"])
        except KeyError as exc:
            raise _NoExample(str(exc)) from None
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return _example({**target, **rest}, root, nulls, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        if nulls and None in schema["enum"]:
            return None
        return next((v for v in schema["enum"] if v is not None), None)
    union = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(union, list) and union:
        members = [m for m in union if not (isinstance(m, Mapping) and m.get("type") == "null")]
        if (nulls and len(members) < len(union)) or not members:
            return None
        return _example(members[0], root, nulls, depth + 1)
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return _example({**schema["allOf"][0], **schema}, root, nulls, depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        if nulls and "null" in typ:
            return None
        typ = next((t for t in typ if t != "null"), "null")
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if typ == "object" or (typ is None and "properties" in schema):
        props = schema.get("properties") or {}
        required = schema.get("required") or []
        keys = list(props) if nulls else [k for k in props if k in required]
        return {k: _example(props[k], root, nulls, depth + 1) for k in keys}
    if typ == "array":
        count = int(schema.get("minItems", 0))
        if count == 0:
            return []
        return [_example(schema.get("items", {}), root, nulls, depth + 1) for _ in range(count)]
    if typ == "string":
        fmt = schema.get("format")
        if fmt in _FORMAT_EXAMPLES:
            return _FORMAT_EXAMPLES[fmt]
        return "x" * max(1, int(schema.get("minLength", 1)))
    if typ in ("integer", "number"):
        low = schema.get("minimum")
        if low is None and "exclusiveMinimum" in schema:
            low = schema["exclusiveMinimum"] + 1
        value = low if low is not None else 1
        high = schema.get("maximum")
        if high is not None and value > high:
            value = high
        return int(value) if typ == "integer" else float(value)
    if typ == "boolean":
        return False
    if typ == "null":
        return None
    return "x"


# -- the checks ------------------------------------------------------------------------


def _schema_problems(entry: ToolEntry) -> list[Problem]:
    import jsonschema

    schema = entry.input_schema
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return [Problem("schema", entry.name, f"not a valid JSON Schema: {exc.message}")]
    if schema.get("type") != "object":
        return [Problem("schema", entry.name, "the arguments schema must be an object schema")]
    return []


def _format_problems(entry: ToolEntry) -> list[Problem]:
    problems: list[Problem] = []
    for fmt in FORMATS:
        try:
            json.dumps(render([entry.definition], fmt))
        except Exception as exc:
            problems.append(Problem("formats", entry.name, f"{fmt}: {exc}"))
    return problems


def _description_problems(entry: ToolEntry) -> list[Problem]:
    problems: list[Problem] = []
    text = entry.description.strip()
    if len(text.split()) < 3:
        problems.append(Problem("description", entry.name, "describe the tool in a sentence"))
    elif not says_what_not(text):
        problems.append(Problem("description", entry.name, NOT_FOR_HINT))
    literal = literal_parameters(entry.tool.description, entry.tool.argument_names())
    if literal:
        warnings.warn(
            f"{entry.name}: {literal_parameters_hint(literal)}", ToolweaveWarning, stacklevel=2
        )
    schema = entry.input_schema
    for key, sub in (schema.get("properties") or {}).items():
        node = sub
        if (
            isinstance(sub, Mapping)
            and isinstance(sub.get("$ref"), str)
            and "description" not in sub
        ):
            try:
                node = resolve_ref(schema, sub["$ref"])
            except KeyError:
                node = sub
        if not (isinstance(node, Mapping) and str(node.get("description", "")).strip()):
            problems.append(
                Problem("description", entry.name, f"argument `{key}` has no description")
            )
    return problems


def _state_problems(entry: ToolEntry, keys: dict[str, type[BaseModel]]) -> list[Problem]:
    """Problems of the state models ``entry`` declares; ``keys`` gathers the key of
    every model seen so far in the set, to find two models sharing one."""
    problems: list[Problem] = []
    for model in entry.tool.state_types:
        declared = vars(model).get("state_key")
        name = f"{model.__module__}.{model.__qualname__}"
        if not (isinstance(declared, str) and declared):
            problems.append(
                Problem(
                    "state",
                    entry.name,
                    f"state model {name} declares no state_key, so it is stored under "
                    f"{state_key(model)!r} and moving or renaming the class loses the "
                    'stored state; declare state_key: ClassVar[str] = "<pack>.<name>"',
                )
            )
            continue
        other = keys.setdefault(declared, model)
        if other is not model:
            problems.append(
                Problem(
                    "state",
                    entry.name,
                    f"state models {name} and {other.__module__}.{other.__qualname__} "
                    f"share the state_key {declared!r}; give each its own",
                )
            )
    return problems


def _dump(args: Any) -> Any:
    if isinstance(args, BaseModel):
        return args.model_dump(mode="json", by_alias=True)
    return to_jsonable_python(args)  # an @tool function's keyword arguments


def _parse_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(arguments)'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
    return str(exc)


def _round_trip_problems(entry: ToolEntry) -> list[Problem]:
    import jsonschema

    schema = entry.input_schema
    problems: list[Problem] = []
    try:
        example = example_arguments(schema)
        jsonschema.validate(example, schema)
    except (ValueError, jsonschema.ValidationError):
        example = None  # too constrained for a generated example: nothing to compare
    if example is not None:
        try:
            args = entry.parse(json.dumps(example))
            again = entry.parse(json.dumps(_dump(args)))
        except (ValidationError, ToolError) as exc:
            problems.append(
                Problem(
                    "round_trip",
                    entry.name,
                    f"arguments the schema accepts are rejected ({json.dumps(example)}): "
                    f"{_parse_error(exc)}",
                )
            )
        else:
            if _dump(again) != _dump(args):
                problems.append(
                    Problem(
                        "round_trip",
                        entry.name,
                        f"arguments change when dumped and parsed again: {_dump(args)} became "
                        f"{_dump(again)}",
                    )
                )
    try:
        strict = to_strict_schema(schema, tool=entry.name)
        reply = example_arguments(strict, nulls=True)
        jsonschema.validate(reply, strict)
    except (ToolweaveError, ValueError, jsonschema.ValidationError):
        return problems  # the formats check reports schemas that cannot be strict
    try:
        entry.parse(drop_optional_nulls(reply, schema, schema))
    except (ValidationError, ToolError) as exc:
        problems.append(
            Problem(
                "round_trip",
                entry.name,
                f"a strict-mode reply ({json.dumps(reply)}) is rejected: {_parse_error(exc)}",
            )
        )
    return problems


def _error_problems(entry: ToolEntry, session: SyncSession) -> list[Problem]:
    schema = entry.input_schema
    try:
        example = example_arguments(schema)
    except ValueError:
        example = {}
    required = [k for k in schema.get("required") or () if isinstance(k, str)]
    cases: list[tuple[str, Any, str | None]] = [
        ("an unknown argument", {**example, _UNKNOWN_ARG: 1}, _UNKNOWN_ARG),
        ("arguments that are not an object", "[1, 2]", None),
        ("broken JSON", '{"', None),
    ]
    if required:
        cases.append((f"no `{required[0]}`", {}, required[0]))
    problems: list[Problem] = []
    for what, arguments, named in cases:
        try:
            result = session.call(entry.name, arguments, None)
        except Exception as exc:
            problems.append(
                Problem(
                    "errors", entry.name, f"a call with {what} raised {type(exc).__name__}: {exc}"
                )
            )
            continue
        error = result.error
        if error is None or error.kind != ErrorKind.INVALID_PARAMS:
            got = "success" if error is None else error.kind.value
            problems.append(
                Problem(
                    "errors",
                    entry.name,
                    f"a call with {what} must fail as invalid_params, got {got}",
                )
            )
        elif named is not None and named not in error.message:
            problems.append(
                Problem(
                    "errors",
                    entry.name,
                    f"the error for {what} does not name `{named}`: {error.message}",
                )
            )
    return problems


class _Raised(logging.Handler):
    """Collects the "tool ... raised" records the runtime logs for plain exceptions."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.getMessage().startswith("tool "):
            self.records.append(record)


_BROKEN_RESULTS = (
    ("declared Output is", "returned an output its declared Output does not accept"),
    ("ended without a result", "streamed to its end without a result"),
)


def _call_problems(entry: ToolEntry, session: SyncSession, skipped: list[str]) -> list[Problem]:
    examples = [dict(e) for e in getattr(entry.tool.tool, "examples", None) or ()]
    declared = bool(examples)
    if not examples:
        try:
            examples = [example_arguments(entry.input_schema)]
        except ValueError as exc:
            return [
                Problem(
                    "calls",
                    entry.name,
                    f"no arguments can be generated from the schema ({exc}); declare "
                    "`examples` on the tool",
                )
            ]
    problems: list[Problem] = []
    log = logging.getLogger("toolweave")
    for arguments in examples:
        shown = _short(json.dumps(arguments, default=str))
        handler = _Raised()
        level = log.level
        log.addHandler(handler)
        if not log.isEnabledFor(logging.ERROR):
            log.setLevel(logging.ERROR)  # the runtime logs a plain exception at ERROR
        try:
            result = session.call(entry.name, arguments, None)
        except Exception as exc:
            problems.append(
                Problem("calls", entry.name, f"a call with {shown} raised {type(exc).__name__}")
            )
            continue
        finally:
            log.removeHandler(handler)
            log.setLevel(level)
        error = result.error
        if handler.records:
            record = handler.records[0]
            exc_type = record.exc_info[0] if record.exc_info else None
            name = exc_type.__name__ if exc_type is not None else "an exception"
            problems.append(
                Problem(
                    "calls",
                    entry.name,
                    f"a call with {shown} raised {name} instead of failing with a "
                    f"ToolError: {_short(result.text)}",
                )
            )
        elif error is not None and error.kind is ErrorKind.UNAVAILABLE:
            skipped.append(f"{entry.name}: {_short(error.message)}")
        elif error is not None and error.kind is ErrorKind.INVALID_PARAMS and declared:
            problems.append(
                Problem("calls", entry.name, f"its example {shown} is refused: {error.message}")
            )
        elif error is not None:
            for marker, what in _BROKEN_RESULTS:
                if marker in error.message:
                    problems.append(
                        Problem("calls", entry.name, f"a call with {shown} {what}: {error.message}")
                    )
    return problems


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_toolset(
    toolset: ToolSet,
    *,
    skip: Collection[str] = (),
    workspace: str | Path | None = None,
) -> list[Problem]:
    """Run the tool-level checks on every tool of ``toolset``.

    Args:
        toolset: The set to check.
        skip: Names of checks to leave out (see :data:`CHECKS`).
        workspace: Where the calls of the ``errors`` check run (default: a new
            temporary folder). Those calls carry invalid arguments, so no tool runs.

    Returns:
        Every problem found; empty when the set conforms.
    """
    problems: list[Problem] = []
    state_keys: dict[str, type[BaseModel]] = {}
    for entry in toolset:
        if "name" not in skip and not _NAME.match(entry.name):
            problems.append(
                Problem("name", entry.name, f"the name must match {_NAME.pattern} for providers")
            )
        if "schema" not in skip:
            problems += _schema_problems(entry)
        if "formats" not in skip:
            problems += _format_problems(entry)
        if "description" not in skip:
            problems += _description_problems(entry)
        if "state" not in skip:
            problems += _state_problems(entry, state_keys)
        if "round_trip" not in skip:
            problems += _round_trip_problems(entry)
    if "errors" not in skip and len(toolset):
        with tempfile.TemporaryDirectory(prefix="toolweave-check-") as tmp:
            session = toolset.session(workspace=workspace or tmp, default_timeout=10.0)
            with session.sync() as sync:
                for entry in toolset:
                    problems += _error_problems(entry, sync)
    if "calls" not in skip and len(toolset):
        skipped: list[str] = []
        with tempfile.TemporaryDirectory(prefix="toolweave-calls-") as tmp:
            # Always a scratch workspace: these calls run the tools for real.
            session = toolset.session(workspace=tmp, default_timeout=10.0)
            with session.sync() as sync:
                for entry in toolset:
                    problems += _call_problems(entry, sync, skipped)
        for reason in skipped:
            logger.info("conformance: not called (unavailable here): %s", reason)
    return problems


def check_pack(name: str, *, skip: Collection[str] = ()) -> list[Problem]:
    """Load the pack ``name`` through its entry point, alone, and run every check.

    Args:
        name: The pack's entry-point name (``fs``).
        skip: Names of checks to leave out (see :data:`CHECKS`).

    Returns:
        Every problem found; empty when the pack conforms.
    """
    from toolweave.plugins import PackManager

    manager = PackManager()
    manager.discover(include=[name], autoload=False, environ={})
    info = manager.packs.get(name)
    if info is None:
        return [
            Problem(
                "load",
                "",
                f"no entry point named {name!r} in the group 'toolweave.packs'; declare "
                f'[project.entry-points."toolweave.packs"] {name} = "toolweave_{name}:pack" '
                "and install the distribution",
            )
        ]
    builder = manager.builder()
    if info.status != "loaded":
        return [Problem("load", "", str(info.error))]
    if not info.tools:
        return [Problem("load", "", f"pack {name!r} registers no tools")]
    try:
        toolset = builder.build()
    except ToolweaveError as exc:
        return [Problem("load", "", f"the pack's tools do not build into a set: {exc}")]
    problems: list[Problem] = []
    if "load" not in skip:
        with tempfile.TemporaryDirectory(prefix="toolweave-check-") as tmp:
            manager.strict = True
            try:
                toolset.session(workspace=tmp)
            except Exception as exc:
                problems.append(Problem("load", "", f"provide_resources failed: {exc}"))
            finally:
                manager.strict = False
    return problems + check_toolset(toolset, skip=skip)


def _raise(problems: list[Problem], what: str) -> None:
    if problems:
        lines = "\n".join(f"  {p}" for p in problems)
        count = len(problems)
        raise AssertionError(
            f"{what} has {count} conformance problem{'s' * (count != 1)}:\n{lines}"
        )


def assert_pack_conforms(name: str, *, skip: Collection[str] = ()) -> None:
    """Fail (``AssertionError`` listing every problem) unless the pack ``name`` conforms.

    Example:
        A pack's ``tests/test_conformance.py``::

            from toolweave.testing import assert_pack_conforms

            def test_conformance() -> None:
                \"\"\"The pack passes toolweave's pack conformance checks.\"\"\"
                assert_pack_conforms("fs")
    """
    _raise(check_pack(name, skip=skip), f"pack {name!r}")


def assert_toolset_conforms(toolset: ToolSet, *, skip: Collection[str] = ()) -> None:
    """Fail (``AssertionError`` listing every problem) unless every tool of ``toolset`` conforms."""
    _raise(check_toolset(toolset, skip=skip), "the tool set")
