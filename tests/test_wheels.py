"""Built wheels, installed with pip into a fresh venv, behave as packs should.

One venv per test session holds the wheels of ``toolweave``, ``toolweave-fs``, a pack
made from the template and three fixture packs (``tests/fixtures/``): one that fails
at import, one that fails in ``register_tools``, one that marks a file when imported.
Every check runs in a subprocess of that venv, so only what the wheels installed is
visible there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FS_TOOLS = {"read_file", "write_file", "edit_file", "delete", "move", "list_dir"}


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, **kwargs)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def _build_wheel(project: Path, out: Path) -> Path:
    """Build ``project``'s wheel with hatchling into ``out`` and return its path."""
    before = set(out.glob("*.whl"))
    _run(
        [sys.executable, "-m", "hatchling", "build", "--target", "wheel", "-d", str(out)],
        cwd=project,
    )
    (wheel,) = set(out.glob("*.whl")) - before
    return wheel


@dataclass
class Venv:
    """A venv made by ``python -m venv`` with the wheels pip-installed into it."""

    path: Path
    wheels: dict[str, Path]
    workdir: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def env(self, **extra: str) -> dict[str, str]:
        """The outer environment less anything that could leak the workspace in."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TOOLWEAVE_") and k not in {"PYTHONPATH", "PYTHONHOME"}
        }
        env.pop("VIRTUAL_ENV", None)
        env.update(extra)
        return env

    def pip(self, *args: str) -> None:
        _run(
            [
                str(self.python),
                "-m",
                "pip",
                "--disable-pip-version-check",
                "--no-input",
                "-q",
                *args,
            ],
            env=self.env(),
        )

    def python_json(self, code: str, **env: str) -> Any:
        """Run ``code`` in the venv; it prints one JSON document as its last line."""
        done = _run(
            [str(self.python), "-c", textwrap.dedent(code)], cwd=self.workdir, env=self.env(**env)
        )
        return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def venv(
    tmp_path_factory: pytest.TempPathFactory, template_renderer: Callable[[Path, str], Path]
) -> Venv:
    """Build every wheel once, make a fresh venv and pip-install them all (real install)."""
    base = tmp_path_factory.mktemp("wheels")
    out = base / "dist"
    out.mkdir()
    sample = template_renderer(base, "sample")
    projects = {
        "toolweave": ROOT / "core",
        "toolweave-fs": ROOT / "plugins-builtin" / "toolweave-fs",
        "toolweave-sample": sample,
        **{p.name: p for p in sorted(FIXTURES.iterdir()) if (p / "pyproject.toml").is_file()},
    }
    location = base / "venv"
    # venv's ensurepip takes seconds: let it run while the wheels build.
    making = subprocess.Popen(
        [sys.executable, "-m", "venv", str(location)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wheels = {dist: _build_wheel(project, out) for dist, project in projects.items()}
    finally:
        output, _ = making.communicate(timeout=300)
    if making.returncode != 0:
        pytest.fail(f"python -m venv exited {making.returncode}\n{output}")
    workdir = base / "work"
    workdir.mkdir()
    env = Venv(location, wheels, workdir)
    env.pip("install", "--no-compile", *map(str, wheels.values()))
    return env


def test_wheels_carry_the_pack_metadata(venv: Venv) -> None:
    """The wheels ship ``py.typed`` and fs declares its entry point; core declares none."""
    with zipfile.ZipFile(venv.wheels["toolweave"]) as core:
        names = core.namelist()
        assert "toolweave/py.typed" in names
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "toolweave.packs" not in core.read(entry_points).decode()
    with zipfile.ZipFile(venv.wheels["toolweave-fs"]) as fs:
        names = fs.namelist()
        assert "toolweave_fs/py.typed" in names
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        text = fs.read(entry_points).decode()
        assert "[toolweave.packs]" in text
        assert "fs = toolweave_fs:pack" in text


DISCOVER_FS = """
    import json, pathlib, toolweave
    from toolweave import load_packs

    packs = load_packs(include=["fs"])
    toolset = packs.build()
    out = {
        "toolweave": toolweave.__file__,
        "names": toolset.names,
        "fs": packs.packs["fs"].to_dict() if "fs" in packs.packs else None,
        "text": None,
    }
    if "read_file" in toolset:
        pathlib.Path("hello.txt").write_text("hello from a wheel\\nsecond line\\n")
        with toolset.session(workspace=".").sync() as session:
            result = session.call("read_file", {"path": "hello.txt"})
        out["text"] = result.text
        out["error"] = None if result.error is None else result.error.to_dict()
    print(json.dumps(out))
"""


def test_fs_pack_is_discovered_and_runs_then_uninstalls(venv: Venv) -> None:
    """Entry-point discovery finds the fs tools, read_file works; uninstalled, they are gone."""
    try:
        found = venv.python_json(DISCOVER_FS)
        assert Path(found["toolweave"]).is_relative_to(venv.path)
        assert set(found["names"]) == FS_TOOLS
        assert found["fs"]["status"] == "loaded"
        assert found["fs"]["dist"] == "toolweave-fs"
        assert set(found["fs"]["tools"]) == {f"fs:{t}" for t in FS_TOOLS}
        assert found["error"] is None
        assert "hello from a wheel" in found["text"]
        assert "second line" in found["text"]

        venv.pip("uninstall", "-y", "toolweave-fs")
        gone = venv.python_json(DISCOVER_FS)
        assert gone["fs"] is None
        assert gone["names"] == []
        assert gone["text"] is None
    finally:
        venv.pip("install", "--no-deps", "--force-reinstall", str(venv.wheels["toolweave-fs"]))


LOAD_ALL = """
    import json
    from toolweave import load_packs

    packs = load_packs()
    toolset = packs.build()
    print(json.dumps({
        "names": sorted(toolset.names),
        "loaded": sorted(p.name for p in packs.loaded),
        "failed": {
            p.name: {
                "dist": p.dist,
                "error_pack": p.error.pack,
                "error_dist": p.error.dist,
                "stage": p.error.stage,
                "cause": type(p.error.cause).__name__,
                "message": str(p.error),
            }
            for p in packs.failed
        },
    }))
"""


def test_broken_packs_are_reported_and_skipped(venv: Venv) -> None:
    """A pack failing at import and one failing in register_tools are reported; others load."""
    result = venv.python_json(LOAD_ALL)
    assert result["loaded"] == ["fs", "marker", "sample"]
    assert set(result["failed"]) == {"brokenimport", "brokenhook"}

    imp = result["failed"]["brokenimport"]
    assert imp["dist"] == "toolweave-brokenimport"
    assert imp["error_pack"] == "brokenimport"
    assert imp["error_dist"].startswith("toolweave-brokenimport")
    assert imp["stage"] == "import"
    assert imp["cause"] == "RuntimeError"
    assert "brokenimport fixture fails on import" in imp["message"]

    hook = result["failed"]["brokenhook"]
    assert hook["dist"] == "toolweave-brokenhook"
    assert hook["stage"] == "register_tools"
    assert "brokenhook fixture fails in register_tools" in hook["message"]

    # The tool the failing hook registered before raising is gone with its pack.
    assert "half_registered" not in result["names"]
    assert set(result["names"]) == FS_TOOLS | {"marker_echo", "greet"}


STRICT = """
    import json
    from toolweave import PackLoadError, load_packs

    out = {}
    for name in ("brokenimport", "brokenhook", "marker"):
        try:
            load_packs(include=[name], strict=True).build()
        except PackLoadError as exc:
            out[name] = {"pack": exc.pack, "stage": exc.stage, "cause": type(exc.cause).__name__}
        else:
            out[name] = None
    print(json.dumps(out))
"""


def test_strict_loading_raises_pack_load_error(venv: Venv) -> None:
    """With ``strict=True`` each broken pack raises PackLoadError; a good one does not."""
    result = venv.python_json(STRICT)
    assert result["brokenimport"] == {
        "pack": "brokenimport",
        "stage": "import",
        "cause": "RuntimeError",
    }
    assert result["brokenhook"] == {
        "pack": "brokenhook",
        "stage": "register_tools",
        "cause": "RuntimeError",
    }
    assert result["marker"] is None


SELECT = """
    import json, sys
    from toolweave import load_packs

    packs = load_packs(**LOAD_ARGS)
    toolset = packs.build()
    print(json.dumps({
        "names": sorted(toolset.names),
        "statuses": {name: info.status for name, info in packs.packs.items()},
        "modules": sorted({m.split(".")[0] for m in sys.modules if m.startswith("toolweave_")}),
    }))
"""


def _select(
    venv: Venv, marker: Path, env: dict[str, str] | None = None, **load_args: Any
) -> dict[str, Any]:
    code = SELECT.replace("LOAD_ARGS", repr(load_args))
    result: dict[str, Any] = venv.python_json(
        code, TOOLWEAVE_FIXTURE_MARKER=str(marker), **(env or {})
    )
    return result


def test_selective_loading_never_imports_unselected_packs(venv: Venv, tmp_path: Path) -> None:
    """``include``/``exclude`` leave every other pack unimported, broken ones included."""
    marker = tmp_path / "marker.txt"

    only_fs = _select(venv, marker, include=["fs"])
    assert not marker.exists()
    assert only_fs["modules"] == ["toolweave_fs"]
    assert set(only_fs["names"]) == FS_TOOLS
    assert only_fs["statuses"]["marker"] == "not selected"
    assert only_fs["statuses"]["brokenimport"] == "not selected"

    excluded = _select(venv, marker, exclude=["marker", "brokenimport", "brokenhook"])
    assert not marker.exists()
    assert "toolweave_marker" not in excluded["modules"]
    assert excluded["statuses"]["marker"] == "not selected"

    # The observation works: selecting the marker pack does import it.
    chosen = _select(venv, marker, include=["marker"])
    assert marker.read_text() == "imported\n"
    assert chosen["modules"] == ["toolweave_marker"]
    assert chosen["names"] == ["marker_echo"]


def test_selection_from_the_environment(venv: Venv, tmp_path: Path) -> None:
    """``TOOLWEAVE_PACKS`` limits what loads when the host names nothing."""
    marker = tmp_path / "marker.txt"
    result = _select(venv, marker, env={"TOOLWEAVE_PACKS": "fs"})
    assert not marker.exists()
    assert result["modules"] == ["toolweave_fs"]
    assert set(result["names"]) == FS_TOOLS


def test_template_pack_works_from_its_wheel(venv: Venv) -> None:
    """A pack rendered from the template installs, is discovered, and its tool runs."""
    result = venv.python_json(
        """
        import json
        from toolweave import load_packs

        packs = load_packs(include=["sample"], strict=True)
        with packs.build().session().sync() as session:
            result = session.call("greet", {"name": "wheel"})
        info = packs.packs["sample"]
        print(json.dumps({"text": result.text, "dist": info.dist, "tools": info.tools}))
        """
    )
    assert result == {
        "text": "Hello, wheel.",
        "dist": "toolweave-sample",
        "tools": ["sample:greet"],
    }
