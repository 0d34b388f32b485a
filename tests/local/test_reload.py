"""Hot reload in a running Python session under the center: a new file joins, a changed
file's new schema is in the next listing, a reload that fails keeps the last good
version and reports the error, a deleted file's tools are disabled (not forgotten) —
every change in the change feed and the audit."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolweave import ErrorKind
from toolweave.center import Center, Status
from toolweave.local import PluginFolders

from .conftest import host_toolset, listed, until, write

pytestmark = pytest.mark.anyio

V1 = """
from toolweave.local import BaseLocalTool, register_tool

@register_tool(group="notes", permission=["dev"])
class Note(BaseLocalTool):
    tool_name = "note"
    tool_desc = "Keep a note. Not for secrets."

    def build_schema(self):
        return {"type": "function", "function": {
            "name": "note", "description": self.tool_desc,
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                           "required": ["text"]}}}

    def run(self, params):
        return {"ok": True, "kept": params["text"]}
"""

V2 = V1.replace(
    '"properties": {"text": {"type": "string"}}',
    '"properties": {"text": {"type": "string"}, "tag": {"type": "string"}}',
).replace('"kept": params["text"]', '"kept": params["text"], "tag": params.get("tag")')

LATER = """
from toolweave import tool
from toolweave.local import register_tool

@register_tool(group="later")
@tool(blocking=False)
def later(n: int) -> int:
    '''Double a number.

    Args:
        n: The number.
    '''
    return 2 * n
"""


async def test_hot_reload_reaches_a_running_session(tmp_path: Path) -> None:
    """Add, change, break, fix and delete plugin files while a session runs."""
    folder = tmp_path / "plugins"
    note = write(folder / "note.py", V1)
    center = Center.open(tmp_path / "center.db")
    events: list = []
    center.subscribe(events.append)
    session = host_toolset().session()
    center.attach(session, role="dev")
    plugins = PluginFolders([folder], center=center)
    plugins.attach(session)
    assert plugins.load() == []
    source = f"dir:{folder.resolve()}"
    try:
        async with plugins.watching():
            await until(lambda: plugins.watch_ready, "the watcher started")
            assert {"greet", "note"} <= set(listed(session))

            # a new file, in a subfolder
            later = write(folder / "more" / "later.py", LATER)
            await until(lambda: "later" in listed(session), "the new file's tool is listed")
            assert (await session.call("later", {"n": 21}, "c1")).text == "42"
            assert center.tool("later").record.source == source
            assert center.tool("later").groups == ("later",)

            # a changed file: the new schema in the next listing, the new code running
            version = session.listing_version
            write(note, V2)
            await until(
                lambda: "tag" in listed(session)["note"]["input_schema"]["properties"],
                "the changed schema is listed",
            )
            assert session.listing_version > version
            result = await session.call("note", {"text": "a", "tag": "t"}, "c2")
            assert result.output == {"ok": True, "kept": "a", "tag": "t"}
            assert "tag" in center.tool("note").record.input_schema["properties"]

            # a reload that fails keeps the last good version and says why
            write(note, V2 + "\ndef oops(:\n")
            alert = await until(lambda: plugins.alerts, "the broken reload is reported")
            assert alert[0].file == note.resolve()
            assert alert[0].line == V2.strip().count("\n") + 3
            assert plugins.files[note.resolve()].status == "stale"
            assert "tag" in listed(session)["note"]["input_schema"]["properties"]
            result = await session.call("note", {"text": "still", "tag": "x"}, "c3")
            assert result.output == {"ok": True, "kept": "still", "tag": "x"}
            await until(
                lambda: any(
                    e.target == f"source:{source}" and e.detail.get("value") for e in events
                ),
                "the alert is in the change feed",
            )

            # fixed again: the alert is cleared (in the feed too)
            write(note, V1)
            await until(lambda: not plugins.alerts, "the alert is cleared")
            await until(
                lambda: "tag" not in listed(session)["note"]["input_schema"]["properties"],
                "the fixed file is loaded",
            )
            flags = [e for e in events if e.target == f"source:{source}"]
            assert flags[-1].detail["value"] is None

            # a deleted file: its tools leave the session and are disabled, not forgotten
            later.unlink()
            await until(lambda: "later" not in listed(session), "the deleted tool is gone")
            state = center.tool("later")
            assert state.status is Status.DISABLED
            assert str(later.resolve()) in state.reason
            gone = await session.call("later", {"n": 1}, "c4")
            assert gone.error is not None
            assert gone.error.kind in (ErrorKind.NOT_FOUND, ErrorKind.UNAVAILABLE)

            # the file comes back: enabled again
            write(later, LATER)
            await until(lambda: "later" in listed(session), "the restored tool is listed")
            assert center.tool("later").status is Status.ENABLED
    finally:
        plugins.close()
        changes = center.audit(type="change", limit=1000)
        center.close()
    actions = [(e.tool, e.outcome) for e in changes]
    assert ("later", "register") in actions
    assert ("note", "update") in actions
    assert ("later", "disable") in actions
    assert ("later", "enable") in actions
    assert (f"source:{source}", "plugin_alert") in actions
    kinds = {(e.kind, e.target) for e in events}
    assert ("added", "later") in kinds
    assert ("changed", "note") in kinds
    assert ("flag", "later") in kinds


OPEN = V1.replace(', permission=["dev"]', "")
"""``note`` for every role."""


async def test_hot_reload_without_a_center(tmp_path: Path) -> None:
    """Without a center, files are followed all the same (the tools simply leave the
    session when their file is deleted); a tool with roles never joins, since nothing
    would check them."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    write(folder / "guarded.py", V1.replace('"note"', '"guarded"'))
    session = host_toolset().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    plugins.load()
    async with plugins.watching():
        await until(lambda: plugins.watch_ready, "the watcher started")
        path = write(folder / "note.py", OPEN)
        await until(lambda: "note" in listed(session), "the new tool is listed")
        write(path, V2.replace(', permission=["dev"]', ""))
        await until(
            lambda: "tag" in listed(session)["note"]["input_schema"]["properties"],
            "the changed schema is listed",
        )
        path.unlink()
        await until(lambda: "note" not in listed(session), "the deleted tool is gone")
    assert "guarded" not in listed(session)
    assert any("only a registry center enforces" in str(a) for a in plugins.alerts)
    assert (await session.call("guarded", {"text": "x"})).error is not None
    plugins.close()


async def test_a_folder_created_later_is_followed(tmp_path: Path) -> None:
    """The default folder need not exist at start: once created, its files load."""
    session = host_toolset().session()
    plugins = PluginFolders(workspace=tmp_path)
    assert plugins.folders == ((tmp_path / "tools" / "plugins").resolve(),)
    plugins.attach(session)
    assert plugins.load() == []
    async with plugins.watching():
        await until(lambda: plugins.watch_ready, "the watcher started")
        write(tmp_path / "tools" / "plugins" / "note.py", OPEN)
        await until(lambda: "note" in listed(session), "the new folder's tool is listed")
    plugins.close()
