"""The core's layer contract (``[tool.importlinter]`` in pyproject.toml) holds, and it
catches an import that points up a layer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(
    not LINT_IMPORTS.exists(), reason="import-linter (dev group) is not installed"
)


def _lint(src: Path) -> subprocess.CompletedProcess[str]:
    """Run the contract against the package under ``src`` (not the installed one)."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=src,
        env={"PYTHONPATH": str(src), "PATH": str(LINT_IMPORTS.parent)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_core_keeps_its_layers(tmp_path: Path) -> None:
    """The package as it is keeps the contract."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "core" / "src" / "toolweave", src / "toolweave")
    done = _lint(src)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "KEPT" in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """In a copy, the catalogue importing the runtime fails the lint, naming the import."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "core" / "src" / "toolweave", src / "toolweave")
    module = src / "toolweave" / "catalog" / "_merge.py"
    module.write_text(module.read_text() + "\nimport toolweave.runtime._session  # noqa\n")
    done = _lint(src)
    assert done.returncode != 0
    assert "toolweave.catalog._merge -> toolweave.runtime._session" in done.stdout
