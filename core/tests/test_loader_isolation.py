"""A pack cannot take the host down: sys.exit() and failing hooks are reported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel
from toolweave import (
    Context,
    PackLoadError,
    PackManager,
    Resources,
    Session,
    Tool,
    ToolSetBuilder,
    hookimpl,
)


class NoArgs(BaseModel):
    """No arguments."""


class Needy(Tool[NoArgs, str]):
    """Reads a resource its pack provides per session."""

    id = "needy"

    async def run(self, ctx: Context, args: NoArgs) -> str:
        """Say what the pack provided."""
        return ctx.require(Path).name


class FlakyResources:
    """Registers a tool; its provide_resources fails for the first session only."""

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Add the tool."""
        builder.add(Needy)

    @hookimpl
    def provide_resources(self, resources: Resources, session: Session) -> None:
        """Fail once, then provide."""
        self.calls += 1
        if self.calls == 1:
            raise SystemExit("no resources today")
        resources.insert(Path("provided"), Path)


class ExitingHook:
    """Calls sys.exit() while registering its tools."""

    @hookimpl
    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Register, then exit."""
        builder.add(Needy)
        raise SystemExit(3)


@pytest.fixture
def exiting_packs(fake_entry_points: Callable[[dict[str, str]], dict[str, str]]) -> dict[str, str]:
    """Pack modules on sys.path declared as entry points: one calls sys.exit() at import,
    one raises KeyboardInterrupt, one is fine."""
    sources = {
        "exits": "import sys\nsys.exit('bye')\n",
        "interrupts": "raise KeyboardInterrupt\n",
        "fine": """
            from toolweave import hookimpl

            @hookimpl
            def register_tools(builder):
                pass
            """,
    }
    return fake_entry_points(sources)


def test_sys_exit_at_import_fails_the_pack_not_the_host(exiting_packs: dict[str, str]) -> None:
    """A pack calling sys.exit() at import is failed with the exit; the others load."""
    packs = PackManager()
    packs.discover(exclude=["interrupts"], environ={})
    exits = packs.packs["exits"]
    assert exits.status == "failed"
    assert exits.error is not None
    assert exits.error.stage == "import"
    assert isinstance(exits.error.cause, SystemExit)
    assert packs.packs["fine"].status == "loaded"
    with pytest.raises(PackLoadError):
        PackManager(strict=True).discover(include=["exits"], environ={})


def test_keyboard_interrupt_still_stops_the_host(exiting_packs: dict[str, str]) -> None:
    """Ctrl-C during a pack's import is not swallowed."""
    with pytest.raises(KeyboardInterrupt):
        PackManager().discover(include=["interrupts"], environ={})


def test_sys_exit_in_a_hook_is_a_failed_pack() -> None:
    """sys.exit() inside register_tools fails the pack and rolls back its tools."""
    packs = PackManager()
    packs.add("exiting", ExitingHook())
    toolset = packs.build()
    assert toolset.names == []
    info = packs.packs["exiting"]
    assert info.status == "failed"
    assert info.error is not None
    assert info.error.stage == "register_tools"


@pytest.mark.anyio
async def test_failing_provide_resources_is_visible_and_the_pack_keeps_its_tools(
    tmp_path: Path,
) -> None:
    """provide_resources raising marks the pack failed with the error; its tools stay,
    fail as unavailable where the resource is missing, and work in later sessions."""
    pack = FlakyResources()
    packs = PackManager()
    packs.add("flaky", pack)
    toolset = packs.build()
    first = toolset.session(workspace=tmp_path)
    info = packs.packs["flaky"]
    assert info.status == "failed"
    assert info.error is not None
    assert info.error.stage == "provide_resources"
    assert "no resources today" in str(info.error)
    assert packs.failed == [info]
    assert info.to_dict()["error"] == str(info.error)
    missing = await first.call("needy", {})
    assert missing.error is not None
    assert missing.error.kind == "unavailable"
    second = toolset.session(workspace=tmp_path)
    assert (await second.call("needy", {})).text == "provided"
    assert packs.build().names == ["needy"]


def test_pack_manager_build_passes_its_arguments_to_the_builder() -> None:
    """PackManager.build(config, **options) is builder().build(config, **options)."""
    packs = PackManager()
    packs.add("flaky", FlakyResources())
    toolset = packs.build({"tools": [{"id": "needy", "name": "Needy"}]}, remote=["needy"])
    assert toolset.names == ["Needy"]
    assert [(s.source, s.reason) for s in toolset.report.skipped] == [("remote", "id_conflict")]


def test_a_pack_whose_import_hangs_fails_after_the_budget(
    fake_entry_points: Callable[[dict[str, str]], dict[str, str]], tmp_path: Path
) -> None:
    """A pack whose import never ends is reported broken after ``import_timeout`` and
    the others load and work; with ``strict`` the hang is a PackLoadError."""
    release = tmp_path / "release"
    fake_entry_points(
        {
            "hangs": f"""
                import pathlib, time
                while not pathlib.Path({str(release)!r}).exists():
                    time.sleep(0.05)
                """,
            "fine": """
                from toolweave import hookimpl

                @hookimpl
                def register_tools(builder):
                    pass
                """,
        }
    )
    try:
        packs = PackManager(import_timeout=0.5)
        packs.discover(environ={})
        hangs = packs.packs["hangs"]
        assert hangs.status == "failed"
        assert hangs.error is not None
        assert hangs.error.stage == "import"
        assert isinstance(hangs.error.cause, TimeoutError)
        assert "did not finish within 0.5 s" in str(hangs.error)
        assert packs.packs["fine"].status == "loaded"
        with pytest.raises(PackLoadError, match="did not finish"):
            PackManager(strict=True, import_timeout=0.5).discover(include=["hangs"], environ={})
    finally:
        release.write_text("")


BASE_PACKS = {
    "import": """
        class VendorAbort(BaseException):
            pass

        raise VendorAbort("vendor abort at import")
        """,
    "genexit": """
        raise GeneratorExit("generator exit at import")
        """,
    "hook": """
        from toolweave import hookimpl, tool

        class VendorAbort(BaseException):
            pass

        @tool(blocking=False)
        def half_there() -> str:
            '''Never listed: its pack fails after registering it.'''
            return "x"

        @hookimpl
        def register_tools(builder):
            builder.add(half_there)
            raise VendorAbort("vendor abort in register_tools")
        """,
    "resources": """
        from toolweave import hookimpl, tool

        class Unprintable(BaseException):
            def __str__(self):
                raise TypeError("no message")

        @tool(blocking=False)
        def still_here() -> str:
            '''Kept: only the pack's provide_resources fails.'''
            return "still here"

        @hookimpl
        def register_tools(builder):
            builder.add(still_here)

        @hookimpl
        def provide_resources(resources, session):
            raise Unprintable()
        """,
    "fine": """
        from toolweave import hookimpl, tool

        @tool(blocking=False)
        def fine_tool() -> str:
            '''Say fine.'''
            return "fine"

        @hookimpl
        def register_tools(builder):
            builder.add(fine_tool)
        """,
}


@pytest.fixture
def base_packs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """One distribution on sys.path (real .dist-info metadata and entry points, as an
    installed wheel has) declaring a pack per entry of BASE_PACKS; returns their prefix."""
    import textwrap
    import uuid

    tag = uuid.uuid4().hex[:8]
    lines = []
    for name, source in BASE_PACKS.items():
        module = f"twbase_{tag}_{name}"
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        lines.append(f"{tag}_{name} = {module}")
    info = tmp_path / f"twbase_{tag}-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: twbase-{tag}\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text("[toolweave.packs]\n" + "\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tag


@pytest.mark.anyio
async def test_base_exceptions_of_a_pack_fail_the_pack_not_the_host(
    base_packs: str, tmp_path: Path
) -> None:
    """An installed pack raising a BaseException class of its own (or GeneratorExit) at
    import, in register_tools or in provide_resources crashed the host; each is
    reported with its stage and skipped (an exception that cannot even be printed
    included), and the other packs load and work."""
    tag = base_packs
    packs = PackManager()
    packs.discover(include=[f"{tag}_{n}" for n in BASE_PACKS], environ={})
    toolset = packs.build()
    session = toolset.session(workspace=tmp_path)
    stages = {
        name.removeprefix(f"{tag}_"): (info.status, info.error.stage if info.error else None)
        for name, info in packs.packs.items()
        if name.startswith(tag)
    }
    assert stages == {
        "import": ("failed", "import"),
        "genexit": ("failed", "import"),
        "hook": ("failed", "register_tools"),
        "resources": ("failed", "provide_resources"),
        "fine": ("loaded", None),
    }
    errors = {n: str(i.error) for n, i in packs.packs.items() if i.error is not None}
    assert f"(from twbase-{tag} 2.0)" in errors[f"{tag}_import"]
    assert "VendorAbort: vendor abort at import" in errors[f"{tag}_import"]
    assert "GeneratorExit: generator exit at import" in errors[f"{tag}_genexit"]
    assert "Unprintable (its message could not be read)" in errors[f"{tag}_resources"]
    assert toolset.names == ["still_here", "fine_tool"]
    assert (await session.call("still_here", {})).text == "still here"
    assert (await session.call("fine_tool", {})).text == "fine"
    for stage in ("import", "hook"):
        with pytest.raises(PackLoadError) as info:
            PackManager(strict=True).discover(include=[f"{tag}_{stage}"], environ={})
        assert type(info.value.cause).__name__ == "VendorAbort"
