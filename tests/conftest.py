"""Shared fixtures of the cross-package tests."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
"""The repository root."""

TEMPLATE = ROOT / "plugins-builtin" / "_template"
"""The pack template that ``toolweave new-pack`` and pack authors copy."""

PLACEHOLDER = "NAME"
"""The word that stands for the pack's name in the template's paths and files."""

_PACK_NAME = re.compile(r"[a-z][a-z0-9_]*")
_SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".*_cache", "build", "dist")


def render_template(parent: Path, name: str) -> Path:
    """Make a pack from the template by replacing the placeholder in paths and texts.

    Args:
        parent: The folder that receives ``toolweave-<name>/``.
        name: The pack's name.

    Returns:
        The new pack's folder.
    """
    if not _PACK_NAME.fullmatch(name):
        raise ValueError(f"pack name {name!r} must match {_PACK_NAME.pattern}")
    dest = parent / f"toolweave-{name}"
    shutil.copytree(TEMPLATE, dest, ignore=_SKIPPED)
    for path in sorted(dest.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file():
            path.write_text(path.read_text(encoding="utf-8").replace(PLACEHOLDER, name))
        if PLACEHOLDER in path.name:
            path.rename(path.with_name(path.name.replace(PLACEHOLDER, name)))
    return dest


def install_into(project: Path, site: Path) -> Path:
    """Build ``project``'s wheel with hatchling and unpack it into ``site``, as pip would.

    A pure-Python wheel unpacked into a folder on ``PYTHONPATH`` is an installed
    distribution: its metadata and entry points are found, so a pack's conformance
    test (which loads the pack through its entry point) runs as after ``pip install``.

    Returns:
        ``site``.
    """
    pytest.importorskip("hatchling", reason="hatchling (the packs' build backend) is missing")
    out = site.parent / f"{project.name}-dist"
    done = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "--target", "wheel", "-d", str(out)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


@pytest.fixture(scope="session")
def pack_installer() -> Callable[[Path, Path], Path]:
    """:func:`install_into`, for tests that run a pack's own tests as if installed."""
    return install_into


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the backend toolweave's hosts use)."""
    return "asyncio"


@pytest.fixture(scope="session")
def template_renderer() -> Callable[[Path, str], Path]:
    """:func:`render_template`, for tests that need a pack made from the template."""
    return render_template
