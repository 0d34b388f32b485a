"""Sample tools shaped like the built-in packs, for configuration tests."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, Kind, Lifecycle, Tool, ToolSetBuilder


class ReadParams(BaseModel):
    max_lines: int = Field(2000, gt=0, le=100_000)
    """Most lines one call returns."""


class ReadArgs(BaseModel):
    path: str = Field(description="File path, relative to the workspace")
    offset: int = 0
    limit: int | None = None


class ReadFile(Tool[ReadArgs, dict]):
    id = "read_file"
    namespace = "fs"
    kind = Kind.READ
    params = ReadParams
    description = "Read a text file. Change it with {tool:edit}."

    async def run(self, ctx: Context, args: ReadArgs) -> dict:
        limit = ctx.params(ReadParams).max_lines
        return {"path": args.path, "offset": args.offset, "limit": args.limit, "max": limit}


class EditArgs(BaseModel):
    path: str
    old_string: str
    new_string: str


class EditFile(Tool[EditArgs, str]):
    id = "edit_file"
    namespace = "fs"
    kind = Kind.EDIT
    requires = "kind:read"
    description = "Replace text in a file; read it first with {tool:read}."

    async def run(self, ctx: Context, args: EditArgs) -> str:
        return "edited"


class PatchArgs(BaseModel):
    patch: str


class ApplyPatch(Tool[PatchArgs, str]):
    id = "apply_patch"
    namespace = "fs"
    kind = Kind.EDIT
    conflicts = ("edit_file",)
    description = "Apply a unified diff."

    async def run(self, ctx: Context, args: PatchArgs) -> str:
        return "patched"


class WriteArgs(BaseModel):
    path: str
    content: str


class WriteFile(Tool[WriteArgs, str]):
    id = "write_file"
    namespace = "fs"
    kind = Kind.WRITE
    description = "Write a whole file."

    async def run(self, ctx: Context, args: WriteArgs) -> str:
        return "written"


class BashParams(BaseModel):
    max_timeout_ms: int = Field(120_000, gt=0, le=600_000)
    """Longest timeout a call may ask for."""
    enabled_background: bool = False
    """Whether commands may run in the background."""


class BashArgs(BaseModel):
    command: str
    timeout_ms: int = 30_000
    run_in_background: bool = False


class Bash(Tool[BashArgs, dict]):
    id = "bash"
    namespace = "shell"
    kind = Kind.EXECUTE
    params = BashParams
    description = "Run a shell command."

    async def run(self, ctx: Context, args: BashArgs) -> dict:
        params = ctx.params(BashParams)
        return {
            "command": args.command,
            "timeout_ms": min(args.timeout_ms, params.max_timeout_ms),
            "background": args.run_in_background and params.enabled_background,
        }


class TaskArgs(BaseModel):
    task_id: str


class TaskOutput(Tool[TaskArgs, str]):
    id = "task_output"
    namespace = "shell"
    kind = Kind.BACKGROUND_TASK_ACTION
    requires = "param:bash.enabled_background == true"
    description = "Read the output of a background task started by {name:bash}."

    async def run(self, ctx: Context, args: TaskArgs) -> str:
        return ""


class NoArgs(BaseModel):
    pass


class EnterPlan(Tool[NoArgs, str]):
    id = "enter_plan"
    namespace = "plan"
    kind = Kind.PLAN
    requires = "tool:exit_plan"
    description = "Start planning; call {name:exit_plan} to present the plan."

    async def run(self, ctx: Context, args: NoArgs) -> str:
        return "planning"


class ExitPlan(Tool[NoArgs, str]):
    id = "exit_plan"
    namespace = "plan"
    kind = Kind.PLAN
    description = "Present the plan."

    async def run(self, ctx: Context, args: NoArgs) -> str:
        return "presented"


class GrepArgs(BaseModel):
    pattern: str


def _grep(version: str, lifecycle: Lifecycle, replacement: str | None) -> type[Tool[Any, Any]]:
    class Grep(Tool[GrepArgs, str]):
        id = "grep"
        namespace = "search"
        kind = Kind.SEARCH
        description = f"Search file contents (behaviour {version})."

        async def run(self, ctx: Context, args: GrepArgs) -> str:
            return f"grep v{version}: {args.pattern}"

    Grep.version = version
    Grep.lifecycle = lifecycle
    Grep.replacement = replacement
    return Grep


GREP_V1 = _grep("1", Lifecycle.REMOVED, "3")
GREP_V2 = _grep("2", Lifecycle.DEPRECATED, "3")
GREP_V3 = _grep("3", Lifecycle.ACTIVE, None)
GREP_V10 = _grep("10", Lifecycle.ACTIVE, None)


class Notes(Tool[NoArgs, str]):
    """A tool that declares itself not read-only although its kind would say so."""

    id = "notes"
    namespace = "main"
    kind = Kind.MEMORY_SEARCH
    capabilities = Capabilities(read_only=False)
    description = "Search and update notes."

    async def run(self, ctx: Context, args: NoArgs) -> str:
        return ""


class Lint(Tool[NoArgs, str]):
    """A tool of kind ``other`` that a configuration may re-kind."""

    id = "lint"
    namespace = "main"
    kind = Kind.OTHER
    description = "Report lint findings."

    async def run(self, ctx: Context, args: NoArgs) -> str:
        return "clean"


ALL_TOOLS: list[type[Tool[Any, Any]]] = [
    ReadFile,
    EditFile,
    ApplyPatch,
    WriteFile,
    Bash,
    TaskOutput,
    EnterPlan,
    ExitPlan,
    GREP_V1,
    GREP_V2,
    GREP_V3,
    Notes,
    Lint,
]

SAMPLES = SimpleNamespace(
    ReadFile=ReadFile,
    EditFile=EditFile,
    ApplyPatch=ApplyPatch,
    WriteFile=WriteFile,
    Bash=Bash,
    BashParams=BashParams,
    ReadParams=ReadParams,
    TaskOutput=TaskOutput,
    EnterPlan=EnterPlan,
    ExitPlan=ExitPlan,
    GREP_V1=GREP_V1,
    GREP_V2=GREP_V2,
    GREP_V3=GREP_V3,
    GREP_V10=GREP_V10,
    Notes=Notes,
    Lint=Lint,
    ALL=ALL_TOOLS,
)


@pytest.fixture
def samples() -> SimpleNamespace:
    """The sample tool classes."""
    return SAMPLES


@pytest.fixture
def builder() -> ToolSetBuilder:
    """A builder holding every sample tool."""
    b = ToolSetBuilder()
    b.add_all(ALL_TOOLS)
    return b


@pytest.fixture
def make_builder() -> Callable[..., ToolSetBuilder]:
    """Build a builder holding only the given tool classes."""

    def make(*tools: type[Tool[Any, Any]]) -> ToolSetBuilder:
        b = ToolSetBuilder()
        b.add_all(tools)
        return b

    return make
