"""Pack selection and loading: unknown names are reported with a suggestion, strict mode
fails at load for a pack broken in register_tools, and registration is linear work."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from toolweave import PackLoadError, PackManager, Tool, ToolSetBuilder, UsageError, hookimpl
from toolweave.catalog import Catalog

GOOD = """
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
    """

BROKEN_IN_REGISTER = """
    from toolweave import hookimpl

    @hookimpl
    def register_tools(builder):
        raise RuntimeError("cannot register")
    """

Installer = Callable[[dict[str, str]], dict[str, str]]


def test_unknown_include_raises_in_strict_mode(fake_entry_points: Installer) -> None:
    """include=["fss"] with strict=True is a UsageError suggesting "fs"."""
    fake_entry_points({"fs": GOOD})
    packs = PackManager(strict=True)
    with pytest.raises(UsageError, match=r"no pack named 'fss'.*did you mean fs\?"):
        packs.discover(include=["fss"], environ={})


def test_unknown_environment_selection_is_reported(
    fake_entry_points: Installer, caplog: pytest.LogCaptureFixture
) -> None:
    """TOOLWEAVE_PACKS=fss without strict loads nothing but says so: a warning in the
    manager's report and in the log, with the suggestion."""
    fake_entry_points({"fs": GOOD})
    packs = PackManager()
    with caplog.at_level(logging.WARNING, logger="toolweave.packs"):
        packs.discover(environ={"TOOLWEAVE_PACKS": "fss"})
    assert packs.loaded == []
    [warning] = packs.warnings
    assert "'fss'" in warning
    assert "$TOOLWEAVE_PACKS" in warning
    assert "did you mean fs?" in warning
    assert warning in caplog.text


def test_unknown_excluded_name_is_a_warning_even_when_strict(fake_entry_points: Installer) -> None:
    """A block-list naming no installed pack cannot load anything wrong: it is reported."""
    fake_entry_points({"fs": GOOD})
    packs = PackManager(strict=True)
    packs.discover(exclude=["shel"], environ={})
    assert [p.name for p in packs.loaded] == ["fs"]
    assert len(packs.warnings) == 1
    assert "'shel'" in packs.warnings[0]


def test_strict_load_fails_for_a_pack_broken_in_register_tools(
    fake_entry_points: Installer,
) -> None:
    """strict=True raises at discovery, not later when the host builds."""
    fake_entry_points({"fs": GOOD, "bad": BROKEN_IN_REGISTER})
    packs = PackManager(strict=True)
    with pytest.raises(PackLoadError) as info:
        packs.discover(environ={})
    assert info.value.pack == "bad"
    assert info.value.stage == "register_tools"


class _Args(BaseModel):
    pass


def _pack(index: int, tools: int) -> object:
    """A pack object registering ``tools`` tools in namespace ``p<index>``."""
    classes: list[type[Tool[_Args, str]]] = []
    for t in range(tools):

        class One(Tool[_Args, str]):
            id = f"t{t}"
            namespace = f"p{index}"

            async def run(self, ctx: Any, args: _Args) -> str:
                return ""

        classes.append(One)

    class Pack:
        calls = 0

        @hookimpl
        def register_tools(self, builder: ToolSetBuilder) -> None:
            Pack.calls += 1
            builder.add_all(classes)

    return Pack()


def test_registration_work_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """50 packs x 20 tools: each pack's hook runs once and recording what each pack
    registered scans the registry not at all (it used to scan it after every pack)."""
    visited: list[int] = []
    original_iter = Catalog.__iter__
    original_versions = Catalog.versions

    def counting_iter(self: Catalog) -> Iterator[str]:
        for fqid in original_iter(self):
            visited.append(1)
            yield fqid

    def counting_versions(self: Catalog, fqid: str) -> Any:
        visited.append(1)
        return original_versions(self, fqid)

    monkeypatch.setattr(Catalog, "__iter__", counting_iter)
    monkeypatch.setattr(Catalog, "versions", counting_versions)
    packs = PackManager()
    objects = [_pack(i, 20) for i in range(50)]
    for i, pack in enumerate(objects):
        packs.add(f"p{i}", pack)
    builder = packs.builder()
    assert len(builder.registry) == 1000
    assert [len(info.tools) for info in packs.loaded] == [20] * 50
    assert sum(type(p).calls for p in objects) == 50  # type: ignore[attr-defined]
    assert len(visited) <= 1000, f"{len(visited)} registry visits for 1000 tools"
