"""The search pack as a host sees it: discovery, kinds, read-only flags."""

from __future__ import annotations

from toolweave import Kind, load_packs


def test_entry_point_registers_two_read_only_searches() -> None:
    """``load_packs(include=["search"])`` finds grep and glob, both read-only searches."""
    packs = load_packs(include=["search"], strict=True)
    info = packs.packs["search"]
    assert (info.status, info.dist, info.target) == (
        "loaded",
        "toolweave-search",
        "toolweave_search:pack",
    )
    toolset = packs.build()
    assert toolset.names == ["grep", "glob"]
    for entry in toolset:
        assert entry.definition.kind == Kind.SEARCH.value
        assert entry.definition.read_only is True
        assert entry.tool.fqid == f"search:{entry.name}"
