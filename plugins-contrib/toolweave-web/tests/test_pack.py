"""The web pack as a host sees it: discovery, kinds, read-only flags."""

from __future__ import annotations

from toolweave import Kind, load_packs


def test_entry_point_registers_fetch_and_search() -> None:
    """``load_packs(include=["web"])`` finds web_fetch and web_search, both read-only."""
    packs = load_packs(include=["web"], strict=True)
    info = packs.packs["web"]
    assert (info.status, info.dist, info.target) == (
        "loaded",
        "toolweave-web",
        "toolweave_web:pack",
    )
    toolset = packs.build()
    assert toolset.names == ["web_fetch", "web_search"]
    kinds = {entry.name: entry.definition.kind for entry in toolset}
    assert kinds == {"web_fetch": Kind.WEB_FETCH.value, "web_search": Kind.WEB_SEARCH.value}
    assert all(entry.definition.read_only for entry in toolset)


def test_importing_the_pack_leaves_the_http_stack_unloaded() -> None:
    """Loading the pack (as every host listing tools does) does not import httpx2,
    BeautifulSoup or markdownify: they are imported on the first fetch."""
    import subprocess
    import sys

    code = (
        "import sys, toolweave_web; "
        "print(sorted(m for m in ('httpx2', 'bs4', 'markdownify') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
