"""W7's environment: a dedicated venv with toolweave and 50 tiny generated packs.

The packs are real distributions (``toolweave-benchpack-NN``, hatchling, one entry point
each under ``toolweave.packs``); they are generated once under ``benchmarks/.work``,
built and installed with ``uv pip install`` (which builds their wheels), and reused by
later runs. toolweave itself is installed from ``core/`` as a regular (non-editable)
wheel and reinstalled whenever its sources change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from twbench.workloads._common import WORK

__all__ = ["PACK_COUNT", "ROOT", "SELECTED", "ensure", "pack_name"]

ROOT = Path(__file__).resolve().parents[2]
"""The repository root."""
COLD = WORK / "coldstart"
VENV = COLD / "venv"
PACKS = COLD / "packs"
STAMP = COLD / "stamp.txt"

PACK_COUNT = 50
"""How many packs the cold-start venv holds."""
SELECTED = ("bp07", "bp23", "bp41")
"""The packs a cold start selects; every other one must stay unimported."""
_GENERATOR_VERSION = "1"


def pack_name(i: int) -> str:
    """The entry-point name of pack ``i`` (``bp07``)."""
    return f"bp{i:02d}"


def _pack_files(i: int) -> dict[str, str]:
    name = pack_name(i)
    module = f"toolweave_benchpack_{i:02d}"
    pyproject = f"""\
        [build-system]
        requires = ["hatchling>=1.25"]
        build-backend = "hatchling.build"

        [project]
        name = "toolweave-benchpack-{i:02d}"
        version = "0.1.0"
        description = "A tiny generated pack for toolweave's cold-start benchmark."
        requires-python = ">=3.11"
        dependencies = ["toolweave"]

        [project.entry-points."toolweave.packs"]
        {name} = "{module}:pack"

        [tool.hatch.build.targets.wheel]
        packages = ["src/{module}"]
        """
    init = f'''\
        """Generated pack {name}: two small tools."""

        from __future__ import annotations

        from typing import Any

        from toolweave import hookimpl, tool


        @tool(id="{name}_echo", namespace="{name}", blocking=False)
        def echo(text: str) -> str:
            """Repeat the text.

            Args:
                text: What to repeat.
            """
            return text


        @tool(id="{name}_join", namespace="{name}")
        async def join(a: str, b: int, c: list[str] | None = None) -> str:
            """Join a word and a number.

            Args:
                a: A word.
                b: A number.
                c: Optional tags.
            """
            return f"{{a}}:{{b}}"


        class _Pack:
            @hookimpl
            def register_tools(self, builder: Any) -> None:
                builder.add(echo)
                builder.add(join)


        pack = _Pack()
        '''
    return {
        "pyproject.toml": textwrap.dedent(pyproject),
        "README.md": f"# toolweave-benchpack-{i:02d}\n\nGenerated for the cold-start benchmark.\n",
        f"src/{module}/__init__.py": textwrap.dedent(init),
        f"src/{module}/py.typed": "",
    }


def _core_hash() -> str:
    digest = hashlib.sha256()
    core = ROOT / "core"
    for path in sorted([core / "pyproject.toml", *(core / "src").rglob("*.py")]):
        digest.update(str(path.relative_to(core)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _run(cmd: list[str]) -> None:
    print("  $ " + " ".join(cmd[:6]) + (" …" if len(cmd) > 6 else ""), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def _python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _install(args: list[str]) -> None:
    uv = shutil.which("uv")
    if uv is not None:
        _run([uv, "pip", "install", "--quiet", "--python", str(_python()), *args])
    else:
        _run([str(_python()), "-m", "pip", "install", "--quiet", *args])


def ensure() -> Path:
    """The cold-start venv's python, creating or refreshing the venv when needed.

    The first run generates and installs the packs (tens of seconds); later runs only
    reinstall toolweave when ``core/`` changed.
    """
    want_packs = f"packs={_GENERATOR_VERSION}x{PACK_COUNT}"
    want_core = f"core={_core_hash()}"
    have = STAMP.read_text().split() if STAMP.exists() and _python().exists() else []
    if want_packs in have and want_core in have:
        return _python()
    t0 = time.perf_counter()
    print("preparing the cold-start venv under benchmarks/.work/coldstart …", flush=True)
    if want_packs not in have:
        shutil.rmtree(COLD, ignore_errors=True)
        PACKS.mkdir(parents=True)
        for i in range(PACK_COUNT):
            for rel, text in _pack_files(i).items():
                path = PACKS / f"toolweave-benchpack-{i:02d}" / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        uv = shutil.which("uv")
        if uv is not None:
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(VENV)])
        else:
            _run([sys.executable, "-m", "venv", str(VENV)])
        packs = sorted(str(p) for p in PACKS.iterdir())
        _install([str(ROOT / "core"), *packs])
    else:
        # Dependencies too: a new one of core's would be missing otherwise.
        _install(["--reinstall-package", "toolweave", str(ROOT / "core")])
    STAMP.write_text(f"{want_packs} {want_core}\n")
    print(f"cold-start venv ready in {time.perf_counter() - t0:.1f} s", flush=True)
    return _python()
