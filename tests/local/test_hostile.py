"""Plugin folders against hostile files and operators' changes: what a file does never
takes the host down or hangs it, never widens who may call a tool, and never undoes an
operator's decision; every problem is an alert naming the file."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, ToolSetBuilder
from toolweave.center import Center, SQLiteCenterStore, Status
from toolweave.local import PluginFolders
from toolweave.runtime import Session

from .conftest import listed, until, write

pytestmark = pytest.mark.anyio

GREET = """
from toolweave.local import register_tool

@register_tool(group="g", permission=["admin"])
def greet(name: str) -> str:
    '''Greet someone. Not for anything else.'''
    return "hi " + name
"""

OPEN = GREET.replace(', permission=["admin"]', "")
"""``greet`` for every role."""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "plugins"
    path.mkdir()
    return path


@pytest.fixture
def center(tmp_path: Path) -> Iterator[Center]:
    with Center.open(tmp_path / "center.db") as opened:
        yield opened


def under(center: Center, folder: Path, role: str = "admin") -> tuple[Session, PluginFolders]:
    session = ToolSetBuilder().build().session()
    center.attach(session, role=role)
    plugins = PluginFolders([folder], center=center)
    plugins.attach(session)
    return session, plugins


async def call(session: Session, name: str, arguments: dict[str, Any]) -> Any:
    result = await session.call(name, arguments, "c1")
    return result.error.kind if result.error is not None else result.output


async def test_an_operators_disable_survives_the_file_going_and_coming_back(
    folder: Path, center: Center
) -> None:
    """A tool an operator disabled stays disabled, with the operator's reason, when its
    file drops it, is deleted and comes back (the loader only undoes its own disables)."""
    session, plugins = under(center, folder)
    path = write(folder / "a.py", GREET)
    plugins.load()
    center.disable("greet", actor="ops", reason="incident 7")
    path.write_text("# being edited\n")
    plugins.rescan()
    path.unlink()
    plugins.rescan()
    write(folder / "a.py", GREET.replace("hi ", "hello "))
    plugins.rescan()
    center.refresh()
    state = center.tool("greet")
    assert state.status is Status.DISABLED
    assert state.reason == "incident 7"
    assert await call(session, "greet", {"name": "x"}) == ErrorKind.UNAVAILABLE
    plugins.close()


async def test_roles_are_never_served_where_nothing_enforces_them(
    folder: Path, tmp_path: Path
) -> None:
    """A read-only center cannot record a new tool's roles: the tool is left out with an
    alert, not served to every role."""
    write(folder / "a.py", GREET)
    Center.open(tmp_path / "ro.db").close()
    readonly = Center(SQLiteCenterStore(tmp_path / "ro.db", readonly=True))
    try:
        session, plugins = under(readonly, folder, role="common_user")
        alerts = plugins.load()
        assert "greet" not in listed(session)
        assert await call(session, "greet", {"name": "x"}) == ErrorKind.NOT_FOUND
        assert any("read-only" in a.message for a in alerts), alerts
        plugins.close()
    finally:
        readonly.close()


async def test_a_tool_whose_schema_cannot_be_built_is_an_alert(folder: Path) -> None:
    """An annotation pydantic has no schema for is an alert at load; the listing of the
    session (and the file's other tools) keep working."""
    write(
        folder / "a.py",
        OPEN
        + """
import socket

@register_tool
def raw(s: socket.socket) -> int:
    '''Use a socket. Not for anything else.'''
    return 1
""",
    )
    session = ToolSetBuilder().build().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    alerts = plugins.load()
    assert [a.line for a in alerts] == [10], alerts
    assert "raw is not a valid tool" in alerts[0].message
    assert set(listed(session)) == {"greet"}
    plugins.close()


def test_files_that_are_not_regular_files_are_alerts_not_hangs(folder: Path) -> None:
    """A FIFO named *.py, a link to one, a dangling link and a link loop: each is an
    alert (nothing blocks), and an idle look afterwards finds nothing changed."""
    os.mkfifo(folder / "pipe.py")
    (folder / "to_pipe.py").symlink_to(folder / "pipe.py")
    (folder / "dangling.py").symlink_to(folder / "nowhere.py")
    (folder / "loop.py").symlink_to(folder / "loop.py")
    write(folder / "good.py", OPEN)
    plugins = PluginFolders([folder])
    done: list[Any] = []
    loader = threading.Thread(target=lambda: done.append(plugins.load()), daemon=True)
    loader.start()
    loader.join(30)
    assert done, "load() blocked on a FIFO"
    alerts = {a.file.name: a.message for a in done[0]}
    assert set(alerts) == {"pipe.py", "to_pipe.py", "dangling.py", "loop.py"}, alerts
    assert all(m.startswith("cannot be read: ") for m in alerts.values()), alerts
    assert set(plugins.tools) == {"greet"}
    assert not plugins.changed_on_disk()


def test_a_huge_plugin_file_is_an_alert_not_a_load(folder: Path) -> None:
    """A plugin file over 16 MiB (a log or data file named *.py) is not read into
    memory and compiled: it is an alert, and the other files load."""
    with (folder / "huge.py").open("wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)  # sparse: no disk used
    write(folder / "good.py", OPEN)
    plugins = PluginFolders([folder])
    alerts = {a.file.name: a.message for a in plugins.load()}
    assert set(alerts) == {"huge.py"}, alerts
    assert "over the limit of 16,777,216 bytes" in alerts["huge.py"]
    assert set(plugins.tools) == {"greet"}
    plugins.close()


def test_a_file_that_becomes_unreadable_keeps_its_last_good_version(folder: Path) -> None:
    """A loaded file replaced by a dangling link is stale: its tools stay, an alert says
    why, and the file loads again once it is readable."""
    path = write(folder / "a.py", OPEN)
    plugins = PluginFolders([folder])
    plugins.load()
    path.unlink()
    path.symlink_to(folder.parent / "gone.py")
    alerts = plugins.rescan()
    assert plugins.files[path].status == "stale"
    assert "greet" in plugins.tools
    assert [a.message.split(":")[0] for a in alerts] == ["cannot be read"]
    assert not plugins.changed_on_disk()
    write(folder.parent / "gone.py", OPEN.replace("hi ", "hello "))
    assert plugins.rescan() == []
    assert plugins.files[path].status == "loaded"


@pytest.mark.parametrize(
    "raised",
    ["GeneratorExit()", "Boom()"],
)
def test_any_exception_a_file_raises_at_import_is_an_alert(folder: Path, raised: str) -> None:
    """GeneratorExit or a BaseException subclass of the file's own at import is an alert
    with its line; the other files load, and the file is tried again when it changes."""
    write(
        folder / "a.py",
        f"class Boom(BaseException):\n    pass\n\nraise {raised}\n",
    )
    write(folder / "b.py", OPEN)
    plugins = PluginFolders([folder])
    alerts = plugins.load()
    assert [(a.file.name, a.line) for a in alerts] == [("a.py", 4)], alerts
    assert set(plugins.tools) == {"greet"}
    write(folder / "a.py", OPEN.replace("greet", "wave"))
    assert plugins.rescan() == []
    assert set(plugins.tools) == {"greet", "wave"}


UNPRINTABLE = """
class ConfigMissing(Exception):
    def __init__(self, key):
        self.key = key

    def __str__(self):
        return "missing " + self.key  # the key is an int: str() raises TypeError

raise ConfigMissing(42)
"""


async def test_an_exception_that_cannot_be_printed_is_an_alert_loading_and_watching(
    folder: Path,
) -> None:
    """A file raising an exception whose ``__str__`` fails made load() raise (and the
    watcher give up on the folder): the files after it never loaded. It is an alert
    naming the exception's type, and the other files load, at start and while
    watching."""
    write(folder / "a_bad.py", UNPRINTABLE)
    write(folder / "b_good.py", OPEN)
    session = ToolSetBuilder().build().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    alerts = plugins.load()
    assert [(a.file.name, a.line) for a in alerts] == [("a_bad.py", 8)], alerts
    assert (
        alerts[0].message == "error while importing: ConfigMissing (its message could not be read)"
    )
    assert set(listed(session)) == {"greet"}
    plugins.close()

    watched = ToolSetBuilder().build().session()
    follower = PluginFolders([folder], import_timeout=10)
    follower.attach(watched)
    async with follower.watching():
        await until(lambda: follower.watch_ready, "the watcher started")
        await until(lambda: "greet" in listed(watched), "the good file loaded")
        write(folder / "c_later.py", OPEN.replace("greet", "wave"))
        await until(lambda: "wave" in listed(watched), "a later file loaded")
    assert [a.file.name for a in follower.alerts] == ["a_bad.py"]
    follower.close()


async def test_a_file_whose_tool_breaks_keeps_its_last_good_version(folder: Path) -> None:
    """A changed file that imports but whose tool is no longer valid is stale: the last
    good version is still served and the center does not disable it."""
    path = write(folder / "a.py", OPEN)
    session = ToolSetBuilder().build().session()
    plugins = PluginFolders([folder])
    plugins.attach(session)
    plugins.load()
    write(path, OPEN.replace("def greet(name: str)", "def greet(name: 'socket.socket')"))
    alerts = plugins.rescan()
    assert plugins.files[path].status == "stale"
    assert len(alerts) == 1
    assert "greet is not a valid tool" in alerts[0].message
    assert await call(session, "greet", {"name": "x"}) == "hi x"
    plugins.close()


def test_a_name_freed_by_its_owner_goes_to_the_file_that_waited(folder: Path) -> None:
    """Two files define one name: the first keeps it; when that file is deleted the
    other takes it over, and its alert goes."""
    write(folder / "a.py", OPEN)
    write(folder / "b.py", OPEN.replace("hi ", "hello "))
    plugins = PluginFolders([folder])
    alerts = plugins.load()
    assert [a.file.name for a in alerts] == ["b.py"]
    (folder / "a.py").unlink()
    assert plugins.rescan() == []
    assert plugins.tools["greet"].file == folder / "b.py"


def test_marking_a_tool_twice_is_refused(folder: Path) -> None:
    """@register_tool stacked on @register_tool(permission=...) would drop the roles:
    the import fails with an alert on the decorator's line, no tool is served."""
    write(
        folder / "a.py",
        GREET.replace(
            '@register_tool(group="g", permission=["admin"])',
            '@register_tool\n@register_tool(group="g", permission=["admin"])',
        ),
    )
    plugins = PluginFolders([folder])
    alerts = plugins.load()
    assert plugins.tools == {}
    assert len(alerts) == 1
    assert "applied twice" in alerts[0].message


@pytest.mark.parametrize("name", ["bad name", "x" * 65, "ünï", "a/b", "greet\n"])
def test_names_no_provider_takes_are_alerts(folder: Path, name: str) -> None:
    """A BaseLocalTool named with spaces, slashes, non-ASCII letters, a newline or more
    than 64 characters is an alert, not a tool that breaks every request's listing."""
    write(
        folder / "a.py",
        f"""
from toolweave.local import BaseLocalTool, register_tool

@register_tool
class Odd(BaseLocalTool):
    tool_name = {name!r}
    tool_desc = "Odd. Not for anything."

    def build_schema(self):
        return {{"type": "function", "function": {{"name": self.tool_name,
                "description": self.tool_desc, "parameters": {{"type": "object"}}}}}}

    def run(self, params):
        return {{"ok": True}}
""",
    )
    plugins = PluginFolders([folder])
    alerts = plugins.load()
    assert plugins.tools == {}
    assert len(alerts) == 1
    assert "is not 1 to 64 letters" in alerts[0].message


def test_a_thread_the_file_starts_may_mark_its_tools(folder: Path) -> None:
    """A file that marks its tool from a worker thread it waits for loads (the import
    holds no lock the mark needs)."""
    write(
        folder / "a.py",
        OPEN.replace('@register_tool(group="g")\n', "")
        + """
from concurrent.futures import ThreadPoolExecutor

with ThreadPoolExecutor(1) as pool:
    greet = pool.submit(register_tool, greet).result(timeout=10)
""",
    )
    plugins = PluginFolders([folder])
    done: list[Any] = []
    loader = threading.Thread(target=lambda: done.append(plugins.load()), daemon=True)
    loader.start()
    loader.join(30)
    assert done == [[]]
    assert set(plugins.tools) == {"greet"}


def test_a_reference_to_nothing_in_a_schema_is_an_alert(folder: Path) -> None:
    """A BaseLocalTool whose parameters $ref a definition they lack (or a document
    elsewhere) is an alert at load, not a tool whose every call fails as the model's
    fault."""
    template = """
from toolweave.local import BaseLocalTool, register_tool

@register_tool
class Refs(BaseLocalTool):
    tool_name = "refs_{n}"
    tool_desc = "Refs. Not for anything."

    def build_schema(self):
        return {{"type": "function", "function": {{"name": self.tool_name,
                "description": self.tool_desc, "parameters": {{"type": "object",
                "$defs": {{"a": {{"type": "string"}}}},
                "properties": {{"x": {{"$ref": {ref!r}}}}}}}}}}}

    def run(self, params):
        return {{"ok": True}}
"""
    write(folder / "missing.py", template.format(n=1, ref="#/$defs/missing"))
    write(folder / "remote.py", template.format(n=2, ref="https://example.com/s.json"))
    write(folder / "good.py", template.format(n=3, ref="#/$defs/a"))
    plugins = PluginFolders([folder])
    alerts = {a.file.name: a.message for a in plugins.load()}
    assert set(alerts) == {"missing.py", "remote.py"}
    assert "'#/$defs/missing'" in alerts["missing.py"]
    assert set(plugins.tools) == {"refs_3"}


async def test_a_file_that_hangs_at_import_holds_up_neither_the_host_nor_other_files(
    folder: Path, tmp_path: Path
) -> None:
    """While watching, a file whose import waits (here until a flag file appears, at
    most 20 s) does not stop the host's calls or a later file from loading; once past
    import_timeout it is an alert, and the file loads when it changes."""
    flag = tmp_path / "release"
    session = ToolSetBuilder().build().session()
    plugins = PluginFolders([folder], import_timeout=1.0)
    plugins.attach(session)
    write(folder / "good.py", OPEN)
    plugins.load()
    hanging = f"""
import pathlib, time
end = time.monotonic() + 20
while not pathlib.Path({str(flag)!r}).exists() and time.monotonic() < end:
    time.sleep(0.02)
"""
    try:
        async with plugins.watching():
            await until(lambda: plugins.watch_ready, "the watcher started")
            write(folder / "slow.py", hanging)
            await until(
                lambda: any("did not finish" in a.message for a in plugins.alerts),
                "the import timed out",
            )
            assert await call(session, "greet", {"name": "x"}) == "hi x"
            write(folder / "later.py", OPEN.replace("greet", "wave"))
            await until(lambda: "wave" in listed(session), "a later file loaded")
            flag.touch()
            write(folder / "slow.py", OPEN.replace("greet", "fixed"))
            await until(lambda: "fixed" in listed(session), "the changed file loaded")
    finally:
        flag.touch()
        plugins.close()
