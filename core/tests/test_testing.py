"""The pack author's kit: the scripted model, the conformance checks and the pytest plugin."""

from __future__ import annotations

import datetime
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field
from toolweave import (
    Context,
    ErrorKind,
    Kind,
    Progress,
    Session,
    Tool,
    ToolError,
    ToolSet,
    ToolSetBuilder,
    tool,
)
from toolweave.testing import (
    CHECKS,
    ScriptedModel,
    Step,
    assert_toolset_conforms,
    check_pack,
    check_toolset,
    example_arguments,
    step,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class CountArgs(BaseModel):
    """Arguments of count."""

    model_config = ConfigDict(extra="forbid")
    upto: int = Field(3, ge=1, le=10, description="Count up to this number.")


class Count(Tool[CountArgs, str]):
    id = "count"
    kind = Kind.EXECUTE
    description = "Count up, reporting each number as progress. Do not use it for arithmetic."

    async def stream(self, ctx: Context, args: CountArgs) -> AsyncIterator[Progress | str]:
        for i in range(1, args.upto + 1):
            yield Progress(str(i), progress=i, total=args.upto)
        yield f"counted to {args.upto}"


@tool(blocking=False)
def greet(name: str, punctuation: str = "!") -> str:
    """Greet someone by name. Do not use it for anything else.

    Args:
        name: Who to greet.
        punctuation: What ends the greeting.
    """
    if name == "nobody":
        raise ToolError(ErrorKind.NOT_FOUND, "there is nobody to greet")
    return f"hello {name}{punctuation}"


@pytest.fixture
def toolset() -> ToolSet:
    builder = ToolSetBuilder()
    builder.add_all([Count, greet])
    return builder.build()


@pytest.fixture
def session(toolset: ToolSet, tmp_path: Path) -> Session:
    return toolset.session(workspace=tmp_path)


SCRIPT: list[Step | list[Step]] = [
    step("greet", {"name": "ada"}, contains="hello ada!"),
    [
        step("count", {"upto": 2}, contains="counted to 2"),
        step("greet", {"name": "nobody"}, expect="not_found"),
    ],
    step("greet", {"name": "bob", "punctuation": None}, contains="hello bob!"),
    step("greet", {}, expect=ErrorKind.INVALID_PARAMS),
]


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
async def test_scripted_model_runs_through_every_provider_format(
    session: Session, provider: str
) -> None:
    """The same script behaves the same in every provider's message format."""
    transcript = await ScriptedModel(SCRIPT, provider=provider).run(session)
    assert transcript.ok, transcript.problems
    assert transcript.calls == 5
    assert dict(transcript.errors_by_kind) == {"not_found": 1, "invalid_params": 1}
    assert [t.call.call_id for t in transcript.turns] == [f"call_{i}" for i in range(1, 6)]
    assert len(transcript.messages) >= 8  # four replies, each followed by its results


@pytest.mark.anyio
async def test_progress_is_recorded_and_reported(session: Session) -> None:
    """A streaming tool's progress reaches the hook and the turn, in order."""
    seen: list[str] = []
    transcript = await ScriptedModel([step("count", {"upto": 3})]).run(
        session, on_progress=lambda s, p: seen.append(f"{s.name}:{p.message}")
    )
    assert seen == ["count:1", "count:2", "count:3"]
    assert [p.progress for p in transcript.turns[0].progress] == [1, 2, 3]


@pytest.mark.anyio
async def test_unexpected_behaviour_becomes_a_problem(session: Session) -> None:
    """A step that fails unexpectedly, succeeds unexpectedly or misses its text is reported."""
    transcript = await ScriptedModel(
        [
            step("greet", {"name": "nobody"}),
            step("greet", {"name": "x"}, expect="not_found"),
            step("greet", {"name": "x"}, contains="goodbye"),
            step("greet", {"name": "x"}, check=lambda r: None if r.ok else "bad"),
            step("count", {"upto": 11}, expect="permission_denied"),
        ]
    ).run(session)
    assert not transcript.ok
    assert transcript.problems == [
        "step 1 (greet): expected success, got not_found: there is nobody to greet",
        "step 2 (greet): expected not_found, but the call succeeded",
        "step 3 (greet): expected the model text to contain 'goodbye'",
        transcript.problems[3],
    ]
    assert transcript.problems[3].startswith(
        "step 5 (count): expected permission_denied, got invalid_params"
    )


@pytest.mark.anyio
async def test_missing_tools_are_skipped_only_when_asked(session: Session) -> None:
    """With skip_missing a missing tool is listed as skipped; without, it is a not_found failure."""
    script = [step("bash", {"command": "ls"}), step("greet", {"name": "a"})]
    skipped = await ScriptedModel(script, skip_missing=True).run(session)
    assert skipped.ok
    assert [t.step.name for t in skipped.skipped] == ["bash"]
    assert skipped.calls == 1
    failed = await ScriptedModel(script).run(session)
    assert failed.problems == [failed.problems[0]]
    assert "no tool named 'bash'" in failed.problems[0]


def test_example_arguments_fill_required_fields_only() -> None:
    """Examples hold the required fields with the simplest values the schema allows."""
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 5},
            "s": {"type": "string", "minLength": 3},
            "e": {"enum": ["a", "b"]},
            "o": {"type": "integer"},
            "l": {"type": "array", "items": {"type": "boolean"}, "minItems": 2},
            "u": {"anyOf": [{"type": "null"}, {"type": "number", "exclusiveMinimum": 0}]},
        },
        "required": ["n", "s", "e", "l", "u"],
    }
    assert example_arguments(schema) == {
        "n": 5,
        "s": "xxx",
        "e": "a",
        "l": [False, False],
        "u": 1.0,
    }
    assert example_arguments(schema, nulls=True)["u"] is None


def test_a_conforming_toolset_has_no_problems(toolset: ToolSet) -> None:
    """Well-described tools with typed errors pass every check."""
    assert check_toolset(toolset) == []
    assert_toolset_conforms(toolset)


class LooseArgs(BaseModel):
    model_config = ConfigDict(extra="allow")
    env: dict[str, str] = {}


class Loose(Tool[LooseArgs, str]):
    id = "loose.tool"
    description = "Runs."

    async def run(self, ctx: Context, args: LooseArgs) -> str:
        return "ran"


class Renamed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    when: int = Field(validation_alias="at", serialization_alias="time", description="When.")


class Aliased(Tool[Renamed, str]):
    id = "aliased"
    description = "Does a thing. Never use it for other things."

    async def run(self, ctx: Context, args: Renamed) -> str:
        return str(args.when)


def test_each_check_reports_its_problem() -> None:
    """A badly made tool is reported by name, formats, description, round-trip and error checks."""
    builder = ToolSetBuilder()
    builder.add_all([Loose, Aliased])
    problems = check_toolset(builder.build())
    found = {(p.check, p.tool) for p in problems}
    assert ("name", "loose.tool") in found
    assert ("formats", "loose.tool") in found
    assert ("description", "loose.tool") in found
    assert ("errors", "loose.tool") in found
    assert ("round_trip", "aliased") in found
    messages = [str(p) for p in problems]
    assert any("openai-strict" in m and "open mapping" in m for m in messages)
    assert any("must fail as invalid_params, got success" in m for m in messages)
    assert any("argument `env` has no description" in m for m in messages)
    assert {p.check for p in check_toolset(builder.build(), skip=CHECKS)} == set()


class Unkeyed(BaseModel):
    """State stored under its module and class name."""

    seen: int = 0


class Keyed(BaseModel):
    """State with a key of its own."""

    state_key: ClassVar[str] = "docs.keyed"
    seen: int = 0


class KeyedToo(BaseModel):
    """State that takes another model's key."""

    state_key: ClassVar[str] = "docs.keyed"
    seen: int = 0


class InheritsKey(Keyed):
    """State that only inherits its parent's key."""


def test_state_models_need_a_key_of_their_own() -> None:
    """A state model without its own state_key, or with another model's, is a state
    problem naming the model and the key it would be stored under."""

    @tool(kind=Kind.OTHER, state=(Unkeyed, Keyed))
    def remember() -> str:
        """Remember. Not for files."""
        return "ok"

    @tool(kind=Kind.OTHER, state=(Keyed, KeyedToo, InheritsKey))
    def recall() -> str:
        """Recall. Not for files."""
        return "ok"

    builder = ToolSetBuilder()
    builder.add_all([remember, recall])
    problems = [p for p in check_toolset(builder.build()) if p.check == "state"]
    assert [(p.tool, p.message.split(" ")[2]) for p in problems] == [
        ("remember", f"{__name__}.Unkeyed"),
        ("recall", f"{__name__}.KeyedToo"),
        ("recall", f"{__name__}.InheritsKey"),
    ]
    assert f"stored under '{__name__}:Unkeyed'" in problems[0].message
    assert "moving or renaming the class loses" in problems[0].message
    assert "share the state_key 'docs.keyed'" in problems[1].message
    assert check_toolset(builder.build(), skip=["state"]) == []


class Span(BaseModel):
    start: datetime.date = Field(description="First day.")
    days: int = Field(ge=1, description="How many days.")


def test_function_tools_with_rich_types_conform() -> None:
    """An @tool function whose arguments are dates, paths and models round-trips: its
    keyword arguments are dumped to JSON and parsed back unchanged."""

    @tool(kind=Kind.READ)
    async def book(room: Path, span: Span, note: str | None = None) -> str:
        """Book a room for a span of days. Do not use it to cancel; use unbook instead.

        Args:
            room: The room's path.
            span: When.
            note: A note for the desk.
        """
        return f"{room} {span.start} {note}"

    builder = ToolSetBuilder()
    builder.add(book)
    assert check_toolset(builder.build()) == []


def test_missing_pack_is_a_load_problem() -> None:
    """Checking a pack that is not installed says how to declare its entry point."""
    (problem,) = check_pack("no_such_pack_xyz")
    assert problem.check == "load"
    assert 'entry-points."toolweave.packs"' in problem.message


def _installed(name: str) -> bool:
    return any(ep.name == name for ep in entry_points(group="toolweave.packs"))


@pytest.mark.skipif(not _installed("fs"), reason="toolweave-fs is not installed")
def test_fs_pack_conforms_through_its_entry_point() -> None:
    """The fs pack, loaded alone through its entry point, passes every check."""
    assert check_pack("fs") == []


@pytest.mark.slow
@pytest.mark.skipif(
    not any(ep.value.startswith("toolweave.testing") for ep in entry_points(group="pytest11")),
    reason="toolweave is not installed with its pytest11 entry point",
)
def test_pytest_plugin_gives_sessions_over_packs(tmp_path: Path) -> None:
    """In a fresh pytest run, the plugin's toolweave_session fixture loads packs by name
    and turns debug mode on."""
    test_file = tmp_path / "test_plugin_use.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import pytest

            def test_session(toolweave_session, tmp_path):
                session = toolweave_session()
                assert session.workspace == tmp_path.resolve()
                assert session.debug is True
                assert toolweave_session(debug=False).debug is False

            def test_missing_pack(toolweave_session):
                from toolweave import UsageError

                with pytest.raises(UsageError, match="no pack named 'nope'"):
                    toolweave_session("nope")
            """
        )
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "error",
            str(test_file),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
