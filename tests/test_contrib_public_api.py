"""Packs in plugins-contrib/ are written as an outside vendor would: they use toolweave's
public API only, never a private module (a path component starting with ``_``) nor a
private name of a public one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRIB = ROOT / "plugins-contrib"
PACKS = sorted(p for p in CONTRIB.iterdir() if p.is_dir() and (p / "pyproject.toml").is_file())
_MODULE_TEXT = re.compile(r"^toolweave(\.\w+)+$")


def _private(dotted: str) -> bool:
    """Whether a ``toolweave`` module path has a component starting with ``_``."""
    parts = dotted.split(".")
    return parts[0] == "toolweave" and any(part.startswith("_") for part in parts[1:])


def _attribute_path(node: ast.Attribute) -> str | None:
    """``toolweave.a._b`` for an attribute chain rooted at the name ``toolweave``."""
    names = [node.attr]
    value = node.value
    while isinstance(value, ast.Attribute):
        names.append(value.attr)
        value = value.value
    if isinstance(value, ast.Name) and value.id == "toolweave":
        return ".".join(["toolweave", *reversed(names)])
    return None


def private_uses(source: str, filename: str = "<source>") -> list[str]:
    """Every use of private toolweave API in ``source``, as ``line: what``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            root = node.module.split(".")[0]
            if _private(node.module):
                found.append(f"{node.lineno}: from {node.module} import ...")
            elif root == "toolweave":
                found += [
                    f"{node.lineno}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_")
                ]
        elif isinstance(node, ast.Attribute):
            path = _attribute_path(node)
            if path is not None and _private(path):
                parts = path.split(".")
                first = next(i for i, part in enumerate(parts) if part.startswith("_"))
                found.append(f"{node.lineno}: {'.'.join(parts[: first + 1])}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if _MODULE_TEXT.match(text) and _private(text):
                found.append(f"{node.lineno}: {text!r}")
    return sorted(set(found), key=lambda use: (int(use.split(":", 1)[0]), use))


def test_every_contrib_pack_is_checked() -> None:
    """The check sees the vendor packs (web, memory, skills), each with Python sources."""
    names = {p.name for p in PACKS}
    assert {"toolweave-web", "toolweave-memory", "toolweave-skills"} <= names
    for pack in PACKS:
        assert list((pack / "src").rglob("*.py")), pack.name


@pytest.mark.parametrize("pack", PACKS, ids=lambda p: p.name)
def test_pack_uses_only_public_toolweave_api(pack: Path) -> None:
    """No import of ``toolweave._x``, ``toolweave.catalog._toolset`` and the like, no
    private name from a public module, no ``importlib`` path to one, in sources or tests."""
    problems = [
        f"{path.relative_to(ROOT)}:{use}"
        for path in sorted(pack.rglob("*.py"))
        for use in private_uses(path.read_text(encoding="utf-8"), str(path))
    ]
    assert problems == []


def test_the_check_is_not_blind() -> None:
    """Each way of reaching private API is reported; public imports are not."""
    source = """
import toolweave._threads
import toolweave.catalog._toolset as ts
from toolweave.runtime._session import Session
from toolweave.errors import _MISSING
from toolweave import _confined
import importlib
importlib.import_module("toolweave.formats._schema")
import toolweave
toolweave.state._sqlite.SQLiteStateStore
from toolweave import Tool, ToolError
from toolweave.testing import assert_pack_conforms
from toolweave_web._guard import Resolver
from . import _pack
"""
    assert private_uses(source) == [
        "2: import toolweave._threads",
        "3: import toolweave.catalog._toolset",
        "4: from toolweave.runtime._session import ...",
        "5: from toolweave.errors import _MISSING",
        "6: from toolweave import _confined",
        "8: 'toolweave.formats._schema'",
        "10: toolweave.state._sqlite",
    ]
