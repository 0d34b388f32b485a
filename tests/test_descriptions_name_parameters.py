"""Descriptions name their tool's own parameters through ``{param:<name>}``: the
heuristic that finds literal names, its warning in ``toolweave check`` and its problem in
the conformance kit, and every installed pack's descriptions under renamed parameters."""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from toolweave import ToolSetBuilder, tool
from toolweave.catalog import ToolweaveWarning, literal_parameters, literal_parameters_hint
from toolweave.cli import app
from toolweave.plugins import PackManager
from toolweave.testing import check_toolset
from typer.testing import CliRunner

PACKS = sorted({ep.name for ep in entry_points(group="toolweave.packs")})


# -- the heuristic -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("`offset` skips lines, `limit` caps them.", ["offset", "limit"]),
        ("Call it with `offset=10` or `offset = 3`.", ["offset"]),
        ("Give the ``path`` of the file.", ["path"]),
        ("`limit`, then `offset`, then `limit` again.", ["limit", "offset"]),
        ("`{param:offset}` skips lines, `{param:limit}` caps them.", []),
        ("Give the path, an offset and a limit in plain words.", []),
        ("Output as `path:line: text`; `offsets` and `cat -n` are not names.", []),
        ("Literal `{{param:offset}}` is an escaped placeholder.", []),
    ],
)
def test_literal_parameters_are_backticked_own_names(text: str, found: list[str]) -> None:
    assert literal_parameters(text, ["path", "offset", "limit"]) == found


def test_the_hint_names_the_placeholders() -> None:
    hint = literal_parameters_hint(["offset", "limit"])
    assert "`offset`, `limit`" in hint
    assert "`{param:offset}`, `{param:limit}`" in hint


# -- the conformance kit ---------------------------------------------------------------


async def literal(path: str, offset: int = 0) -> str:
    """Read a file from `offset` on. Do not use it for folders.

    Args:
        path: The file.
        offset: The first line to read.
    """
    return path


async def placeholder(path: str, offset: int = 0) -> str:
    """Read a file from `{param:offset}` on. Do not use it for folders.

    Args:
        path: The file, or `offset`: a field description is not the tool's.
        offset: The first line to read.
    """
    return path


def test_the_kit_warns_about_literal_parameters() -> None:
    """A description naming its own parameters literally is a ``ToolweaveWarning`` of
    the kit, not a failed check (packs written before ``{param:}`` still pass)."""
    builder = ToolSetBuilder()
    builder.add(tool(literal))
    builder.add(tool(placeholder))
    with pytest.warns(ToolweaveWarning) as caught:
        problems = check_toolset(builder.build(), skip=["calls"])
    assert problems == []
    assert [str(w.message) for w in caught] == [f"literal: {literal_parameters_hint(['offset'])}"]


# -- toolweave check -------------------------------------------------------------------

needs_fs = pytest.mark.skipif("fs" not in PACKS, reason="toolweave-fs is not installed")


@needs_fs
def test_check_warns_about_literal_parameters_without_failing(tmp_path: Path) -> None:
    """The built-in read_file names its parameters through placeholders: no warning; a
    configured description naming them literally is warned about, and still builds."""
    runner = CliRunner()
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"tools": [{"id": "read_file"}]}))
    result = runner.invoke(app, ["check", str(plain), "-p", "fs", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == []

    text = "Read a file; `offset` skips lines. Do not use it for folders."
    config = {"tools": [{"id": "read_file", "description": text, "rename": {"offset": "skip"}}]}
    override = tmp_path / "override.json"
    override.write_text(json.dumps(config))
    result = runner.invoke(app, ["check", str(override), "-p", "fs", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["warnings"] == [f"read_file: {literal_parameters_hint(['offset'])}"]

    config["tools"][0]["description"] = text.replace("`offset`", "`{param:offset}`")
    override.write_text(json.dumps(config))
    result = runner.invoke(app, ["check", str(override), "-p", "fs"])
    assert result.exit_code == 0, result.output
    assert "literally" not in result.stderr


# -- every installed pack --------------------------------------------------------------


@pytest.mark.parametrize("pack", PACKS)
def test_pack_descriptions_name_renamed_parameters(pack: str) -> None:
    """With every parameter of every tool of ``pack`` renamed to ``p_<name>``, no
    description names an original parameter in backticks, and each ``{param:<name>}``
    became ``p_<name>``."""
    manager = PackManager()
    manager.discover(include=[pack], autoload=False, environ={})
    assert not manager.failed, manager.failed
    default = manager.builder().build()
    renamed = manager.builder().build(
        {
            "tools": [
                {
                    "id": e.tool.fqid,
                    "name": e.name,
                    "rename": {n: f"p_{n}" for n in e.tool.argument_names()},
                }
                for e in default
            ]
        }
    )
    assert renamed.names == default.names
    stale: dict[str, list[str]] = {}
    for e in renamed:
        names = sorted(e.tool.argument_names())
        left = literal_parameters(e.description, names)
        left += [
            n
            for n in names
            if n not in left and re.search(rf"`{re.escape(n)}(?:`|=)", e.description)
        ]
        if left:
            stale[e.name] = left
        for n in re.findall(r"\{param:(\w+)\}", e.tool.description):
            assert f"p_{n}" in e.description, (e.name, n)
    assert stale == {}, (
        f"descriptions naming their own parameters literally; write `{{param:<name>}}`: {stale}"
    )
