"""The shapes a plugin file may use: the seed's BaseLocalTool sample verbatim (its
import line changed), typed Tool classes and @tool functions with group and permission;
and files that fail at import reported with their file and line while the others load."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
import toolweave.local
from toolweave import ErrorKind, ToolSetBuilder
from toolweave.center import Center
from toolweave.local import BaseLocalTool, PluginFolders, register_tool, spec_of

from .conftest import SEED, listed, write

pytestmark = pytest.mark.anyio

TYPED = '''
from pydantic import BaseModel, Field
from toolweave import Kind, Tool, ToolOutput, tool
from toolweave.local import register_tool


class ShoutArgs(BaseModel):
    text: str = Field(description="What to shout", max_length=20)


class ShoutOutput(ToolOutput):
    text: str

    def to_model(self) -> str:
        return self.text


@register_tool(group=["local_core", "text"], permission=["dev"])
class Shout(Tool[ShoutArgs, ShoutOutput]):
    id = "shout"
    kind = Kind.OTHER
    description = "Shout a text. Not for whispering."

    async def run(self, ctx, args: ShoutArgs) -> ShoutOutput:
        return ShoutOutput(text=args.text.upper())


@register_tool(group="math", permission="admin")
@tool(blocking=False)
def add(a: int, b: int) -> int:
    """Add two integers. Not for anything else.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


@register_tool
def count_words(text: str) -> int:
    """Count the words of a text.

    Args:
        text: The text.
    """
    return len(text.split())


class NotATool:  # undecorated: ignored
    pass
'''


def test_the_public_surface_is_pinned() -> None:
    """toolweave.local exports exactly its documented names, sorted."""
    assert toolweave.local.__all__ == [
        "DEFAULT_FOLDER",
        "ENV_PLUGINS",
        "BaseLocalTool",
        "LocalSpec",
        "PluginAlert",
        "PluginFile",
        "PluginFolders",
        "PluginTool",
        "register_tool",
        "spec_of",
    ]


async def test_the_seed_sample_runs_with_its_schema_enforced(tmp_path: Path) -> None:
    """The seed's TextSummaryTool loads unchanged but for its import line: listed with its
    schema, registered as dir:<folder> with its group and roles, a too-long text refused
    as invalid_params before run, {"ok": False} an execution_error with its message."""
    folder = tmp_path / "plugins"
    shutil.copytree(SEED, folder)
    runs = folder / "runs.txt"
    source = (folder / "text_summary.py").read_text()
    assert "from toolweave.local import BaseLocalTool, register_tool" in source
    # Count the calls that reach run() (appended to the file, outside the sample's code).
    counter = (
        "\n_run = TextSummaryTool.run\n"
        "def _counted(self, params):\n"
        f"    with open({str(runs)!r}, 'a') as out:\n"
        "        out.write('x')\n"
        "    return _run(self, params)\n"
        "TextSummaryTool.run = _counted\n"
    )
    (folder / "text_summary.py").write_text(source + counter)
    with Center.open(tmp_path / "center.db") as center:
        session = ToolSetBuilder().build().session()
        center.attach(session, role="common_user")
        plugins = PluginFolders([folder], center=center)
        plugins.attach(session)
        assert plugins.load() == []
        definition = listed(session)["text_summary"]
        assert definition["input_schema"]["properties"]["text"]["maxLength"] == 5000
        assert definition["description"].startswith("Summarize")
        state = center.tool("text_summary")
        assert state.record.source == f"dir:{folder.resolve()}"
        assert state.groups == ("local_core",)
        assert state.roles == ("admin", "common_user")

        ok = await session.call("text_summary", {"text": "hello world", "max_length": 5}, "c1")
        assert ok.error is None
        assert ok.output == {"ok": True, "summary": "hello"}
        too_long = await session.call("text_summary", {"text": "x" * 5001, "max_length": 5}, "c2")
        assert too_long.error is not None
        assert too_long.error.kind is ErrorKind.INVALID_PARAMS
        assert "text" in too_long.error.message
        assert runs.read_text() == "x"  # the refused call never reached run()
        failed = await session.call("text_summary", {"text": "a", "max_length": 0}, "c3")
        assert failed.error is not None
        assert failed.error.kind is ErrorKind.EXECUTION_ERROR
        assert failed.error.message == "max_length must be positive"
        plugins.close()


async def test_typed_tools_carry_groups_and_roles(tmp_path: Path) -> None:
    """Tool classes, @tool functions and plain functions under @register_tool join the
    center with their groups and role whitelists; the center's hook enforces the roles."""
    folder = tmp_path / "plugins"
    write(folder / "typed.py", TYPED)
    with Center.open(tmp_path / "center.db") as center:
        session = ToolSetBuilder().build().session()
        center.attach(session, role="dev")
        plugins = PluginFolders([folder], center=center)
        plugins.attach(session)
        assert plugins.load() == []
        assert set(plugins.tools) == {"shout", "add", "count_words"}
        assert center.tool("shout").groups == ("local_core", "text")
        assert center.tool("shout").roles == ("dev",)
        assert center.tool("add").roles == ("admin",)
        assert center.tool("count_words").roles is None
        assert {t.record.source for t in center.tools()} == {f"dir:{folder.resolve()}"}
        names = set(listed(session))
        assert names == {"shout", "count_words"}  # add is for admins only
        shout = await session.call("shout", {"text": "hey"}, "c1")
        assert shout.text == "HEY"
        too_long = await session.call("shout", {"text": "x" * 21}, "c2")
        assert too_long.error is not None
        assert too_long.error.kind is ErrorKind.INVALID_PARAMS
        refused = await session.call("add", {"a": 1, "b": 2}, "c3")
        assert refused.error is not None
        assert refused.error.kind is ErrorKind.PERMISSION_DENIED
        words = await session.call("count_words", {"text": "a b c"}, "c4")
        assert words.text == "3"
        plugins.close()


async def test_without_a_center_only_tools_for_every_role_are_served(tmp_path: Path) -> None:
    """Without a center nothing would enforce permission: the tools that have roles stay
    out of the session (an alert each says why; calls are not_found), those for every
    role join."""
    folder = tmp_path / "plugins"
    write(folder / "typed.py", TYPED)
    session = ToolSetBuilder().build().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    plugins.load()
    assert set(listed(session)) == {"count_words"}
    assert (await session.call("count_words", {"text": "a b"}, "c1")).text == "2"
    refused = await session.call("add", {"a": 1, "b": 2}, "c2")
    assert refused.error is not None
    assert refused.error.kind == ErrorKind.NOT_FOUND
    assert {a.message.split(" ", 1)[0] for a in plugins.alerts} == {"shout", "add"}
    plugins.close()
    assert listed(session) == {}


def test_broken_files_are_skipped_with_file_and_line(tmp_path: Path) -> None:
    """A syntax error, a failed import and an exception at import time are alerts naming
    the file and line (logged, in the alerts, in the center's feed); the other files
    load, subfolders included."""
    folder = tmp_path / "plugins"
    write(folder / "good.py", TYPED)
    write(folder / "syntax.py", "x = 1\n\ndef broken(:\n    pass\n")
    write(folder / "deep" / "imports.py", "import os\nimport no_such_module_here\n")
    write(folder / "raises.py", "a = 1\nb = 2\nraise RuntimeError('boom at import')\n")
    write(folder / ".hidden.py", "raise SystemExit('hidden files are not imported')\n")
    with Center.open(tmp_path / "center.db") as center:
        events: list = []
        center.subscribe(events.append)
        plugins = PluginFolders([folder], center=center)
        alerts = {a.file.name: a for a in plugins.load()}
        assert set(alerts) == {"syntax.py", "imports.py", "raises.py"}
        assert alerts["syntax.py"].line == 3
        assert "syntax error" in alerts["syntax.py"].message
        assert alerts["imports.py"].line == 2
        assert "No module named 'no_such_module_here'" in alerts["imports.py"].message
        assert alerts["raises.py"].line == 3
        assert "boom at import" in alerts["raises.py"].message
        assert str(alerts["syntax.py"]).startswith(f"{folder.resolve() / 'syntax.py'}:3: ")
        assert set(plugins.tools) == {"shout", "add", "count_words"}
        assert plugins.files[folder.resolve() / "syntax.py"].status == "failed"
        source = f"dir:{folder.resolve()}"
        feed = [e for e in events if e.target == f"source:{source}"]
        assert feed, events
        value = feed[-1].detail["value"]
        assert value[str(folder.resolve() / "deep" / "imports.py")]["line"] == 2
        assert value[str(folder.resolve() / "syntax.py")]["line"] == 3
        audit = center.audit(type="change", tool=f"source:{source}")
        assert audit[0].outcome == "plugin_alert"
        assert "syntax.py:3" in (audit[0].reason or "")
        plugins.close()


def test_a_bad_definition_is_an_alert_for_its_file(tmp_path: Path) -> None:
    """A BaseLocalTool whose parameters are no JSON Schema, or whose names disagree, is
    left out with an alert; its neighbours in the same file load."""
    folder = tmp_path / "plugins"
    write(
        folder / "bad.py",
        """
        from toolweave.local import BaseLocalTool, register_tool

        @register_tool
        class Bad(BaseLocalTool):
            tool_name = "bad"
            def build_schema(self):
                return {"type": "function", "function": {"name": "bad",
                        "parameters": {"type": "object", "properties": {"x": {"type": 5}}}}}
            def run(self, params):
                return {}

        @register_tool
        class Misnamed(BaseLocalTool):
            tool_name = "one"
            def build_schema(self):
                return {"type": "function", "function": {"name": "other"}}
            def run(self, params):
                return {}

        @register_tool
        class Fine(BaseLocalTool):
            tool_name = "fine"
            tool_desc = "Always fine."
            def run(self, params):
                return {"ok": True}
        """,
    )
    plugins = PluginFolders([folder])
    alerts = plugins.load()
    assert [a.line for a in alerts] == [3, 12]  # their decorators' lines
    assert "not a valid JSON Schema" in alerts[0].message
    assert "'other'" in alerts[1].message
    assert set(plugins.tools) == {"fine"}
    plugins.close()


def test_register_tool_checks_what_it_is_given() -> None:
    """The decorator marks tools only, and refuses an empty role list or blank names."""
    with pytest.raises(TypeError, match="decorates"):
        register_tool(group="g")(42)
    with pytest.raises(TypeError, match="permission"):
        register_tool(permission=[])
    with pytest.raises(TypeError, match="group"):
        register_tool(group=["ok", " "])

    @register_tool(group="g", permission=["b", "a", "b"])
    class Mine(BaseLocalTool):
        tool_name = "mine"

        def run(self, params: dict) -> dict:
            return {}

    class Sub(Mine):
        tool_name = "sub"

    spec = spec_of(Mine)
    assert spec is not None
    assert spec.groups == ("g",)
    assert spec.roles == ("a", "b")
    assert spec_of(Sub) is None  # not registered by inheritance


async def test_run_happens_off_the_event_loop(tmp_path: Path) -> None:
    """run() is synchronous and runs in a worker thread: a slow one does not block the
    event loop."""
    folder = tmp_path / "plugins"
    write(
        folder / "slow.py",
        """
        import threading, time
        from toolweave.local import BaseLocalTool, register_tool

        @register_tool
        class Slow(BaseLocalTool):
            tool_name = "slow"
            def run(self, params):
                time.sleep(0.3)
                return {"ok": True, "thread": threading.current_thread().name}
        """,
    )
    session = ToolSetBuilder().build().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    plugins.load()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        result = await session.call("slow", {}, "c1")
        tg.cancel_scope.cancel()
    assert result.error is None
    assert result.output["thread"] != "MainThread"
    assert ticks >= 1  # a run() on the event loop would have starved the ticker
    plugins.close()


async def test_plugin_descriptions_render_their_placeholders(tmp_path: Path) -> None:
    """A plugin file's tool names other tools and its own parameters through
    placeholders, rendered against the session's set as for a pack's tools; one that
    cannot be rendered is an alert for its file and the tool stays out."""
    folder = tmp_path / "plugins"
    write(
        folder / "names.py",
        """
from toolweave import tool
from toolweave.local import register_tool


@register_tool
@tool(blocking=False)
def shout(text: str) -> str:
    \"\"\"Upper-case `{param:text}`; {tool:read|a reader} reads files. Not for files.\"\"\"
    return text.upper()
""",
    )
    write(
        folder / "broken.py",
        """
from toolweave import tool
from toolweave.local import register_tool


@register_tool
@tool(blocking=False)
def whisper(text: str) -> str:
    \"\"\"Lower-case {param:words}. Not for files.\"\"\"
    return text.lower()
""",
    )
    session = ToolSetBuilder().build().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    alerts = {a.file.name: a for a in plugins.load()}
    assert set(listed(session)) == {"shout"}
    assert listed(session)["shout"]["description"].startswith(
        "Upper-case `text`; a reader reads files."
    )
    assert "{param:words}" in alerts["broken.py"].message
    plugins.close()
