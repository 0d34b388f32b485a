"""Packs: loading in-memory and entry-point packs, isolating broken ones, calling hooks."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from toolweave import (
    Context,
    DuplicateToolError,
    PackLoadError,
    PackManager,
    Reminder,
    Resources,
    Session,
    Tool,
    ToolSetBuilder,
    hookimpl,
)
from toolweave.authoring import CallInfo, ToolReminder

pytestmark = pytest.mark.anyio


class Nothing(BaseModel):
    """No arguments."""


class Greeting:
    """A resource a pack provides."""

    def __init__(self, text: str) -> None:
        self.text = text


class Hello(Tool[Nothing, str]):
    """Reads the pack's resource."""

    id = "hello"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Greet with the provided text."""
        return ctx.require(Greeting).text


class Other(Tool[Nothing, str]):
    """A second tool."""

    id = "other"

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Answer."""
        return "other"


class GoodPack:
    """Registers Hello and provides its Greeting, counting sessions."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Add the tool."""
        builder.add(Hello)

    @hookimpl
    def provide_resources(self, resources: Resources, session: Session) -> None:
        """Give each session its greeting."""
        self.sessions.append(session)
        resources.get_or_default(Greeting, lambda: Greeting(f"hello {session.session_id}"))


class HalfPack:
    """Registers one tool, then fails; also provides resources (never to be called)."""

    def __init__(self) -> None:
        self.provided = 0

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Register, then break."""
        builder.add(Other)
        raise RuntimeError("half way")

    @hookimpl
    def provide_resources(self) -> None:
        """Count calls."""
        self.provided += 1


class ClashPack:
    """Registers a tool id that GoodPack already registered."""

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Clash."""
        builder.add(Other)
        builder.add(Hello)


class BadSignature:
    """A hook implementation with an argument the spec does not have."""

    @hookimpl
    def register_tools(self, registry: Any) -> None:
        """Wrong argument name."""


class FailingResources:
    """Breaks when a session starts."""

    @hookimpl
    def provide_resources(self, resources: Resources) -> None:
        """Raise."""
        raise OSError("no terminal here")


class Nag(Reminder):
    """A cross-tool reminder that speaks after every call."""

    id = "nag"

    def collect(self, ctx: Context, call: CallInfo) -> str:
        """Always the same note."""
        return "a note from a broken pack"


class Noted(Reminder):
    """A tool-internal reminder declared by two tools of two packs."""

    id = "noted"

    def collect(self, ctx: Context, call: CallInfo) -> str:
        """Always the same note."""
        return "noted"


class GoodNoted(Tool[Nothing, str]):
    """A tool of a working pack that declares Noted."""

    id = "good_noted"
    reminders = (Noted,)

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Answer."""
        return "fine"


class BrokenNoted(Tool[Nothing, str]):
    """A tool of a broken pack that declares Noted and its own reminder."""

    id = "broken_noted"
    reminders = (Noted, Nag)

    async def run(self, ctx: Context, args: Nothing) -> str:
        """Answer."""
        return "never listed"


class NoteTakingPack:
    """Registers GoodNoted."""

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Add the tool."""
        builder.add(GoodNoted)


class ToolRemindersThenFail:
    """Registers a tool that declares reminders, then fails."""

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Register, then break."""
        builder.add(BrokenNoted)
        raise RuntimeError("tools broke")


class RemindersThenFail:
    """Registers a tool and a cross-tool reminder, then fails in register_reminders."""

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Register a tool."""
        builder.add(Other)

    @hookimpl
    def register_reminders(self, builder: ToolSetBuilder) -> None:
        """Register a reminder, then break."""
        builder.add_reminder(Nag())
        raise RuntimeError("reminders broke")


# -- in-memory packs --------------------------------------------------------------------


async def test_pack_tools_are_registered_with_their_origin(tmp_path: Path) -> None:
    """A loaded pack's tools carry the pack as origin and are listed on its info."""
    packs = PackManager()
    info = packs.add("good", GoodPack())
    assert info.status == "loaded"
    builder = packs.builder()
    assert builder.registry.latest("main:hello").origin == "pack good"  # type: ignore[union-attr]
    assert info.tools == ["main:hello"]
    session = builder.build().session(workspace=tmp_path, session_id="s1")
    assert (await session.call("hello", {})).text == "hello s1"


async def test_provide_resources_runs_once_per_session(tmp_path: Path) -> None:
    """Each new session gets the hook called once, with its own resources."""
    pack = GoodPack()
    packs = PackManager()
    packs.add("good", pack)
    toolset = packs.build()
    first = toolset.session(workspace=tmp_path, session_id="one")
    second = toolset.session(workspace=tmp_path, session_id="two")
    assert pack.sessions == [first, second]
    assert first.resources.require(Greeting).text == "hello one"
    assert second.resources.require(Greeting).text == "hello two"
    assert (await second.call("hello", {})).text == "hello two"


def test_host_resources_win_over_pack_defaults(tmp_path: Path) -> None:
    """A resource the host provided is visible to the pack, which keeps it."""
    host = Resources()
    host.insert(Greeting("from the host"))
    packs = PackManager()
    packs.add("good", GoodPack())
    session = packs.build().session(workspace=tmp_path, resources=host)
    assert session.resources.require(Greeting).text == "from the host"


def test_failing_register_tools_is_reported_and_rolled_back(tmp_path: Path) -> None:
    """A pack raising in register_tools is failed, its partial tools removed, others kept."""
    half = HalfPack()
    packs = PackManager()
    packs.add("good", GoodPack())
    packs.add("half", half)
    toolset = packs.build()
    assert toolset.names == ["hello"]
    info = packs.packs["half"]
    assert info.status == "failed"
    assert info.tools == []
    assert info.error is not None
    assert info.error.pack == "half"
    assert info.error.stage == "register_tools"
    assert isinstance(info.error.cause, RuntimeError)
    assert "half way" in str(info.error)
    assert [p.name for p in packs.failed] == ["half"]
    assert [p.name for p in packs.loaded] == ["good"]
    toolset.session(workspace=tmp_path)
    assert half.provided == 0
    assert info.to_dict()["status"] == "failed"
    assert "half way" in info.to_dict()["error"]


async def test_failing_pack_leaves_no_reminders_behind(tmp_path: Path) -> None:
    """A pack failing in a hook loses its reminders too; a reminder it shares with a
    working pack's tool stays, tied to that tool only."""
    packs = PackManager()
    packs.add("good", GoodPack())
    packs.add("notes", NoteTakingPack())
    packs.add("broken_tools", ToolRemindersThenFail())
    packs.add("broken_reminders", RemindersThenFail())
    builder = packs.builder()
    assert [p.name for p in packs.failed] == ["broken_tools", "broken_reminders"]
    assert "reminders broke" in str(packs.packs["broken_reminders"].error)
    assert [r.id for r in builder.reminders] == ["noted"]
    shared = builder.reminders[0]
    assert isinstance(shared, ToolReminder)
    assert shared.tools == ["main:good_noted"]
    assert shared.requires == "tool:main:good_noted"
    toolset = builder.build()
    assert toolset.names == ["hello", "good_noted"]
    session = toolset.session(workspace=tmp_path, session_id="s")
    assert (await session.call("hello", {})).text.endswith("noted\n</system-reminder>")
    assert "broken pack" not in (await session.call("good_noted", {})).text
    assert packs.packs["broken_reminders"].tools == []


def test_builder_remove_origin_covers_tools_and_reminders() -> None:
    """remove_origin drops the origin's tools and cross-tool reminders, nothing else."""
    builder = ToolSetBuilder()
    builder.add(Hello)
    builder.add_reminder(Noted())
    builder.origin = "pack x"
    builder.add(Other)
    builder.add_reminder(Nag())
    builder.origin = "host"
    assert builder.remove_origin("pack x") == ["main:other"]
    assert list(builder.registry) == ["main:hello"]
    assert [r.id for r in builder.reminders] == ["noted"]
    assert builder.remove_origin("pack x") == []


def test_strict_mode_raises_pack_load_error() -> None:
    """In strict mode the first broken pack raises PackLoadError with its cause."""
    packs = PackManager(strict=True)
    packs.add("half", HalfPack())
    with pytest.raises(PackLoadError) as info:
        packs.build()
    assert info.value.pack == "half"
    assert isinstance(info.value.__cause__, RuntimeError)


def test_invalid_hook_signature_fails_at_load() -> None:
    """A hook with arguments the spec lacks is refused when the pack is added."""
    packs = PackManager()
    info = packs.add("bad", BadSignature())
    assert info.status == "failed"
    assert info.error is not None
    assert info.error.stage == "import"
    assert "registry" in str(info.error)
    with pytest.raises(PackLoadError):
        PackManager(strict=True).add("bad", BadSignature())


def test_duplicate_across_packs_names_both_origins() -> None:
    """The second pack registering a taken id fails with both origins named."""
    packs = PackManager()
    packs.add("good", GoodPack())
    packs.add("clash", ClashPack())
    toolset = packs.build()
    assert toolset.names == ["hello"]
    error = packs.packs["clash"].error
    assert error is not None
    assert isinstance(error.cause, DuplicateToolError)
    assert "pack good" in str(error.cause)
    assert "pack clash" in str(error.cause)


def test_failing_provide_resources(tmp_path: Path) -> None:
    """A provide_resources failure is logged (session still starts) or raised when strict."""
    lenient = PackManager()
    lenient.add("failing", FailingResources())
    session = lenient.build().session(workspace=tmp_path)
    assert session.session_id
    strict = PackManager(strict=True)
    strict.add("failing", FailingResources())
    toolset = strict.build()
    with pytest.raises(PackLoadError) as info:
        toolset.session(workspace=tmp_path)
    assert info.value.stage == "provide_resources"


@pytest.fixture
def dist_packs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A distribution on sys.path (real .dist-info metadata) declaring a pack that fails in
    register_tools or provide_resources, as its environment says; returns the pack name."""
    tag = uuid.uuid4().hex[:8]
    module = f"twfail_{tag}"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(
            """
            import os
            from toolweave import hookimpl

            @hookimpl
            def register_tools(builder):
                if os.environ.get("TWFAIL_STAGE") == "register_tools":
                    raise RuntimeError("no tools today")

            @hookimpl
            def provide_resources(resources):
                raise OSError("no terminal here")
            """
        )
    )
    info = tmp_path / f"twfail_{tag}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: twfail-{tag}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[toolweave.packs]\nfail_{tag} = {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tag


def test_every_hook_failure_names_the_distribution_with_its_version(
    dist_packs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PackLoadError names the distribution and its version for provide_resources as for
    register_tools."""
    name = f"fail_{dist_packs}"
    strict = PackManager(strict=True)
    strict.discover(include=[name], environ={})
    toolset = strict.build()
    with pytest.raises(PackLoadError) as info:
        toolset.session(workspace=tmp_path)
    assert info.value.stage == "provide_resources"
    assert info.value.dist == f"twfail-{dist_packs} 1.2.3"
    assert f"(from twfail-{dist_packs} 1.2.3)" in str(info.value)
    monkeypatch.setenv("TWFAIL_STAGE", "register_tools")
    lenient = PackManager()
    lenient.discover(include=[name], environ={})
    lenient.build()
    error = lenient.packs[name].error
    assert error is not None
    assert error.stage == "register_tools"
    assert error.dist == f"twfail-{dist_packs} 1.2.3"


def _declare(site: Path, dist: str, pack: str, metadata: bytes) -> Path:
    """A distribution on ``site`` (real .dist-info files) declaring ``pack``; returns its
    METADATA file."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(f"[toolweave.packs]\n{pack} = {dist}_mod:pack\n")
    (info / "METADATA").write_bytes(metadata)
    return info / "METADATA"


def test_a_damaged_metadata_file_of_another_distribution_does_not_stop_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A pack's distribution whose METADATA is not UTF-8 once made every discovery raise
    UnicodeDecodeError (and every ``toolweave`` command with it). Unselected, it costs
    nothing; listed, it names no distribution and says why in the log."""
    tag = uuid.uuid4().hex[:8]
    _declare(tmp_path, f"twbad_{tag}", f"bad_{tag}", b"Name: tw\xff\xfe\nVersion: 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    packs = PackManager(strict=True)
    packs.discover(include=[], environ={})
    bad = packs.packs[f"bad_{tag}"]
    assert bad.status == "not selected"
    assert (bad.dist, bad.version, bad.dist_label) == (None, None, None)
    assert bad.to_dict()["dist"] is None
    assert f"pack 'bad_{tag}': its distribution's metadata is unreadable" in caplog.text


def test_unselected_packs_metadata_is_read_when_asked_for_not_at_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery reads an unselected pack's distribution metadata only when its ``dist``
    or ``version`` is asked for (a host with many packs installed pays for the ones it
    loads), and then once."""
    tag = uuid.uuid4().hex[:8]
    metadata = _declare(
        tmp_path, f"twlazy_{tag}", f"lazy_{tag}", b"Name: twlazy-before\nVersion: 1.0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    packs = PackManager()
    packs.discover(include=[], environ={})
    metadata.write_bytes(b"Name: twlazy-after\nVersion: 2.0\n")
    info = packs.packs[f"lazy_{tag}"]
    assert (info.dist, info.version) == ("twlazy-after", "2.0")
    metadata.write_bytes(b"Name: twlazy-again\nVersion: 3.0\n")
    assert info.dist_label == "twlazy-after 2.0"


# -- entry points -----------------------------------------------------------------------


@pytest.fixture
def fake_packs(fake_entry_points: Callable[[dict[str, str]], dict[str, str]]) -> dict[str, str]:
    """Three pack modules on sys.path, declared as entry points: good, broken, marker."""
    sources = {
        "good": """
            from pydantic import BaseModel
            from toolweave import Tool, hookimpl

            class A(BaseModel):
                pass

            class Ping(Tool[A, str]):
                id = "ping"
                async def run(self, ctx, args):
                    return "pong"

            @hookimpl
            def register_tools(builder):
                builder.add(Ping)
            """,
        "broken": """
            raise ImportError("this pack needs libfoo")
            """,
        "marker": """
            import sys
            sys.modules[__name__].IMPORTED = True
            """,
    }
    return fake_entry_points(sources)


def test_selected_pack_loads_and_others_are_never_imported(fake_packs: dict[str, str]) -> None:
    """include loads only the named pack; unselected packs are listed but not imported."""
    packs = PackManager()
    packs.discover(include=["good"], environ={})
    assert packs.packs["good"].status == "loaded"
    assert packs.packs["marker"].status == "not selected"
    assert packs.packs["broken"].status == "not selected"
    assert fake_packs["marker"] not in sys.modules
    assert fake_packs["broken"] not in sys.modules
    assert packs.build().names == ["ping"]


def test_import_failure_is_reported_and_skipped(fake_packs: dict[str, str]) -> None:
    """A pack that raises at import is failed with its name and error; others load."""
    packs = PackManager()
    packs.discover(exclude=["marker"], environ={})
    broken = packs.packs["broken"]
    assert broken.status == "failed"
    assert broken.error is not None
    assert broken.error.stage == "import"
    assert "pack 'broken'" in str(broken.error)
    assert "libfoo" in str(broken.error)
    assert packs.packs["good"].status == "loaded"
    assert packs.packs["marker"].status == "not selected"


def test_import_failure_raises_in_strict_mode(fake_packs: dict[str, str]) -> None:
    """Strict discovery raises on the broken pack."""
    with pytest.raises(PackLoadError, match="libfoo"):
        PackManager(strict=True).discover(include=["broken"], environ={})


@pytest.mark.parametrize(
    ("environ", "loaded"),
    [
        ({"TOOLWEAVE_PACKS": "good, marker"}, ["good", "marker"]),
        ({"TOOLWEAVE_DISABLE_PACKS": "broken,marker"}, ["good"]),
        ({"TOOLWEAVE_AUTOLOAD": "0"}, []),
        ({"TOOLWEAVE_AUTOLOAD": "0", "TOOLWEAVE_PACKS": "good"}, ["good"]),
    ],
    ids=["allow-list", "block-list", "autoload-off", "autoload-off-but-named"],
)
def test_environment_switches(
    fake_packs: dict[str, str], environ: dict[str, str], loaded: list[str]
) -> None:
    """The allow-list, block-list and autoload switches choose what is imported."""
    packs = PackManager()
    packs.discover(environ=environ)
    assert sorted(p.name for p in packs.loaded) == loaded
    assert sorted(packs.packs) == ["broken", "good", "marker"]
