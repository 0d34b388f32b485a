"""Arguments generated from every built-in tool's JSON Schema (hypothesis-jsonschema).

For every tool of the fs, search, shell and plan packs, loaded as a host loads them:

- arguments the listed schema accepts are never refused by validation, as Python values
  or as JSON text (a call hook that runs after validation answers instead of the tool,
  so nothing is executed);
- arguments made invalid in one place (a value the schema refuses, a required field
  left out, an unknown field, no object at all) are always ``invalid_params``, and the
  hook never sees them. Read-only tools validate in pydantic's lax mode, so a scalar
  the lax mode converts (``"5"`` or ``true`` for an integer, ``0`` for a boolean) may be
  accepted there; nothing else may;
- valid arguments really executed (every tool but ``bash``, whose generated commands
  would be arbitrary shell) end in a typed result and never in an exception the
  pipeline had to catch.

The normal run draws a few examples per tool (profile ``robustness``); the tests marked
``soak`` draw many more (profile ``robustness-soak``; ``nox -s soak`` runs them).
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from toolweave import CallHook, CallResult, ErrorKind, HookCall, Session, ToolError, load_packs

PACKS = ("fs", "search", "shell", "plan")

settings.register_profile(
    "robustness",
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
settings.register_profile(
    "robustness-soak",
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
NORMAL = settings.get_profile("robustness")
SOAK = settings.get_profile("robustness-soak")

_TOOLSET = load_packs(include=PACKS, strict=True).build()
SCHEMAS: dict[str, dict[str, Any]] = {
    d["function"]["name"]: copy.deepcopy(d["function"]["parameters"])
    for d in _TOOLSET.definitions("openai")
}
"""Each tool's listed JSON Schema, as a model sees it."""

TOOLS = sorted(SCHEMAS)
EXECUTED = [name for name in TOOLS if name != "bash"]
VALIDATED = "validated; not executed"
"""The answer of :class:`StopAfterValidation` in place of the tool's."""

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
"""Any JSON value."""


class StopAfterValidation(CallHook):
    """Answers every call that passed validation with :data:`VALIDATED`."""

    def before(self, call: HookCall) -> ToolError:
        """Refuse the validated call so that the tool never runs."""
        return ToolError(ErrorKind.CUSTOM, VALIDATED)


def _validating_session(workspace: Path) -> Session:
    session = _TOOLSET.session(workspace=workspace)
    session.add_hook(StopAfterValidation())
    return session


def _run(session: Session, name: str, arguments: Any) -> CallResult:
    async def call() -> CallResult:
        with anyio.fail_after(60):
            return await session.call(name, arguments, "p")

    return anyio.run(call)


class _Collect(logging.Handler):
    """Keeps the error records it is given."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.ERROR)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record``."""
        self.records.append(record)


@contextmanager
def _nothing_raised() -> Iterator[None]:
    """Fail when the pipeline logs a tool that raised instead of answering."""
    records: list[logging.LogRecord] = []
    handler = _Collect(records)
    logger = logging.getLogger("toolweave")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records if "raised" in r.getMessage()] == []


def _object(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Objects ``schema`` accepts: each property drawn by hypothesis-jsonschema from its own
    schema, composed here (0.23's object strategy relies on a Hypothesis internal that
    Hypothesis 6.170 no longer has)."""
    if "$ref" in schema:
        return _object(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if schema.get("type") != "object":
        return from_schema({**schema, "$defs": defs})
    props = {k: _object(v, defs) for k, v in schema.get("properties", {}).items()}
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: v for k, v in props.items() if k in required},
        optional={k: v for k, v in props.items() if k not in required},
    )


def _items_as_objects(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Arrays whose items are objects, through :func:`_object`; other schemas as they are."""
    items = schema.get("items", {})
    if schema.get("type") == "array" and ("$ref" in items or items.get("type") == "object"):
        return st.lists(
            _object(items, defs),
            min_size=schema.get("minItems", 0),
            max_size=schema.get("maxItems", 5),
        )
    return _object(schema, defs)


def _beyond_the_schema(name: str, arguments: dict[str, Any]) -> bool:
    """Whether ``arguments`` break the one rule the listed schemas cannot state:
    ``ask_user``'s choices are distinct also when surrounding spaces are left out (the
    schema states that they are not blank and that no two are alike as given)."""
    if name == "ask_user" and arguments.get("choices"):
        cleaned = [c.strip() for c in arguments["choices"]]
        return len(set(cleaned)) != len(cleaned)
    return False


def _valid(name: str) -> st.SearchStrategy[dict[str, Any]]:
    schema = SCHEMAS[name]
    defs = schema.get("$defs", {})
    props = {k: _items_as_objects(v, defs) for k, v in schema.get("properties", {}).items()}
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: v for k, v in props.items() if k in required},
        optional={k: v for k, v in props.items() if k not in required},
    ).filter(lambda arguments: not _beyond_the_schema(name, arguments))


def _accepts(name: str, arguments: Any) -> bool:
    return bool(jsonschema.Draft202012Validator(SCHEMAS[name]).is_valid(arguments))


@st.composite
def _invalid(draw: st.DrawFn, name: str) -> tuple[Any, bool]:
    """Arguments the schema refuses, and whether lax validation may convert them."""
    schema = SCHEMAS[name]
    valid = draw(_valid(name))
    props = list(schema.get("properties", {}))
    required = list(schema.get("required", []))
    how = draw(st.sampled_from(["value", "missing", "unknown", "no object"]))
    if how == "value" and props:
        prop = draw(st.sampled_from(props))
        value = draw(JSON.filter(lambda v: not _accepts(name, {**valid, prop: v})))
        declared = json.dumps(schema["properties"][prop])
        numeric = '"integer"' in declared or '"boolean"' in declared
        lax = numeric and isinstance(value, (bool, int, float, str))
        return {**valid, prop: value}, lax
    if how == "missing" and required:
        drop = draw(st.sampled_from(required))
        return {k: v for k, v in valid.items() if k != drop}, False
    if how == "no object":
        return draw(JSON.filter(lambda v: not isinstance(v, dict) and v is not None)), False
    unknown = draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in props))
    return {**valid, unknown: draw(JSON)}, False


def _check_valid(workspace: Path) -> Callable[[str, dict[str, Any]], None]:
    session = _validating_session(workspace)

    def check(name: str, arguments: dict[str, Any]) -> None:
        for given_as in (arguments, json.dumps(arguments)):
            result = _run(session, name, given_as)
            assert result.error is not None
            assert result.text == VALIDATED, (name, arguments, result.text)

    return check


def _check_invalid(workspace: Path) -> Callable[[str, tuple[Any, bool]], None]:
    session = _validating_session(workspace)
    strict = {name: _TOOLSET[name].tool.strict_arguments for name in TOOLS}

    def check(name: str, case: tuple[Any, bool]) -> None:
        arguments, lax = case
        result = _run(session, name, arguments)
        assert result.error is not None
        if lax and not strict[name] and result.text == VALIDATED:
            return
        assert result.error.kind is ErrorKind.INVALID_PARAMS, (name, arguments, result.text)
        assert len(result.text) <= 2_000

    return check


def _check_executed(workspace: Path) -> Callable[[str, dict[str, Any]], None]:
    session = _TOOLSET.session(workspace=workspace)

    def check(name: str, arguments: dict[str, Any]) -> None:
        with _nothing_raised():
            result = _run(session, name, arguments)
        if result.error is not None:
            assert result.error.kind is not ErrorKind.INVALID_PARAMS or "Invalid arguments" not in (
                result.text
            ), (name, arguments, result.text)
        _run(session, "exit_plan", {"plan": "p"})  # plan mode off for the next example

    return check


def _workspace_in(root: Path) -> Path:
    (root / "notes.txt").write_text("hello\n")
    return root


def _workspace(factory: pytest.TempPathFactory) -> Path:
    return _workspace_in(factory.mktemp("ws"))


@pytest.fixture(scope="module")
def check_valid(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, dict[str, Any]], None]:
    """Checks that valid arguments pass validation (nothing runs)."""
    return _check_valid(_workspace(tmp_path_factory))


@pytest.fixture(scope="module")
def check_invalid(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, tuple[Any, bool]], None]:
    """Checks that invalid arguments are invalid_params (nothing runs)."""
    return _check_invalid(_workspace(tmp_path_factory))


@pytest.fixture(scope="module")
def check_executed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, dict[str, Any]], None]:
    """Checks that valid arguments, executed, end in a typed result."""
    return _check_executed(_workspace(tmp_path_factory))


@pytest.mark.parametrize("name", TOOLS)
def test_valid_arguments_pass_validation(
    check_valid: Callable[[str, dict[str, Any]], None], name: str
) -> None:
    """Whatever the schema accepts, validation accepts (as values and as JSON text)."""
    given(_valid(name))(NORMAL(lambda arguments: check_valid(name, arguments)))()


@pytest.mark.parametrize("name", TOOLS)
def test_invalid_arguments_are_invalid_params(
    check_invalid: Callable[[str, tuple[Any, bool]], None], name: str
) -> None:
    """Whatever the schema refuses is invalid_params, save lax conversions of scalars."""
    given(_invalid(name))(NORMAL(lambda case: check_invalid(name, case)))()


@pytest.mark.parametrize("name", EXECUTED)
def test_executed_valid_arguments_end_in_typed_results(
    check_executed: Callable[[str, dict[str, Any]], None], name: str
) -> None:
    """Valid arguments run by the tool end in a typed result; nothing raises."""
    given(_valid(name))(NORMAL(lambda arguments: check_executed(name, arguments)))()


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("grep", {"pattern": "\x00"}, "pattern"),
        ("grep", {"pattern": "a", "glob": "*\x00"}, "glob"),
        ("glob", {"pattern": "*\x00"}, "pattern"),
    ],
)
def test_a_nul_in_a_search_pattern_is_invalid_params(
    tmp_path: Path, name: str, arguments: dict[str, Any], field: str
) -> None:
    """A NUL in grep's pattern or glob, or in glob's pattern, is refused as
    invalid_params naming the parameter, not raised."""
    session = _TOOLSET.session(workspace=_workspace_in(tmp_path))
    with _nothing_raised():
        result = _run(session, name, arguments)
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text
    assert f"`{field}` contains a NUL character" in result.text


@pytest.mark.soak
@pytest.mark.parametrize("name", TOOLS)
def test_soak_generated_arguments(
    check_valid: Callable[[str, dict[str, Any]], None],
    check_invalid: Callable[[str, tuple[Any, bool]], None],
    check_executed: Callable[[str, dict[str, Any]], None],
    name: str,
) -> None:
    """The three properties above with the soak profile's many examples."""
    given(_valid(name))(SOAK(lambda arguments: check_valid(name, arguments)))()
    given(_invalid(name))(SOAK(lambda case: check_invalid(name, case)))()
    if name in EXECUTED:
        given(_valid(name))(SOAK(lambda arguments: check_executed(name, arguments)))()
