"""Built wheels, installed with pip into a fresh venv, behave as packs should.

The wheels of ``toolweave`` and every pack are built once, by the command README.md
gives (``uv build --all-packages``). One venv per test session holds the wheels of
``toolweave``, ``toolweave-fs``, a pack made from the template and four fixture
distributions (``tests/fixtures/``): one that fails at import, one that fails in
``register_tools``, one that marks a file when imported, and one whose packs raise
``BaseException`` classes of their own or ``GeneratorExit`` (at import, in
``register_tools``, in ``provide_resources``) or register a tool whose arguments have no
JSON Schema. Another fresh venv follows the installation
lines of README.md and of every pack's README, as a user would type them. Every check
runs in a subprocess of a venv, so only what the wheels installed is visible there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
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
WHEELS = "~/toolweave-wheels"
"""The wheel folder of the READMEs' commands; the tests put a temporary folder there."""
PACKS = sorted(
    p
    for folder in ("plugins-builtin", "plugins-contrib")
    for p in (ROOT / folder).glob("toolweave-*")
)


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


def _blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```(?:{language})\n(.*?)^```", page.read_text("utf-8"), re.M | re.S)


def shell_blocks(page: Path) -> list[list[str]]:
    """The command lines of each ``sh`` or ``bash`` block of ``page``, comments dropped."""
    found = []
    for block in _blocks(page, "sh|bash"):
        lines = (line.split(" #")[0].strip() for line in block.splitlines())
        found.append([line for line in lines if line and not line.startswith("#")])
    return found


def shell_lines(page: Path) -> list[str]:
    """The command lines of every ``sh`` and ``bash`` block of ``page``."""
    return [line for block in shell_blocks(page) for line in block]


@pytest.fixture(scope="session")
def clone_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """README.md's build command, run once in this repository: a wheel per distribution."""
    (build,) = [line for line in shell_lines(ROOT / "README.md") if line.startswith("uv build")]
    uv = shutil.which("uv")
    if uv is None:
        if os.environ.get("CI"):
            pytest.fail("uv is missing: .ci/run installs it (pip install uv)")
        pytest.skip("uv is not installed (pip install uv)")
    out = tmp_path_factory.mktemp("clone-wheels")
    command = shlex.split(build.replace(WHEELS, str(out)))
    _run([uv, *command[1:]], cwd=ROOT)
    return out


def _clone_wheel(folder: Path, dist: str) -> Path:
    (wheel,) = folder.glob(f"{dist.replace('-', '_')}-*.whl")
    return wheel


def _make_venv(location: Path) -> subprocess.Popen[str]:
    """Start ``python -m venv`` (its ensurepip takes seconds: let it run meanwhile)."""
    return subprocess.Popen(
        [sys.executable, "-m", "venv", str(location)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _venv_made(making: subprocess.Popen[str]) -> None:
    output, _ = making.communicate(timeout=300)
    if making.returncode != 0:
        pytest.fail(f"python -m venv exited {making.returncode}\n{output}")


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

    def activated(self) -> dict[str, str]:
        """The environment of a shell in which the venv is active."""
        return self.env(
            VIRTUAL_ENV=str(self.path), PATH=f"{self.path / 'bin'}{os.pathsep}{os.environ['PATH']}"
        )

    def shell(self, line: str, cwd: Path | None = None) -> str:
        """Run a command line as typed in a shell where the venv is active; its output."""
        done = _run(["bash", "-c", line], cwd=cwd or self.workdir, env=self.activated())
        return done.stdout

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
    tmp_path_factory: pytest.TempPathFactory,
    template_renderer: Callable[[Path, str], Path],
    clone_wheels: Path,
) -> Venv:
    """Build the test packs' wheels, make a fresh venv and pip-install them with the core's
    and fs's wheels (real install)."""
    base = tmp_path_factory.mktemp("wheels")
    out = base / "dist"
    out.mkdir()
    sample = template_renderer(base, "sample")
    projects = {
        "toolweave-sample": sample,
        **{p.name: p for p in sorted(FIXTURES.iterdir()) if (p / "pyproject.toml").is_file()},
    }
    location = base / "venv"
    making = _make_venv(location)
    try:
        wheels = {dist: _clone_wheel(clone_wheels, dist) for dist in ("toolweave", "toolweave-fs")}
        wheels.update({dist: _build_wheel(project, out) for dist, project in projects.items()})
    finally:
        _venv_made(making)
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
        metadata = core.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        description = metadata.decode().partition("\n\n")[2]
        assert description == (ROOT / "core" / "README.md").read_text(encoding="utf-8")
        assert "## Install" in description
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
    assert result["loaded"] == ["badschema", "baseresources", "fs", "marker", "sample"]
    assert set(result["failed"]) == {"brokenimport", "brokenhook", "baseimport", "basehook"}

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
    assert set(result["names"]) == FS_TOOLS | {
        "marker_echo",
        "greet",
        "base_survivor",
        "opaque_arg",
        "schema_ok",
    }


BASE_EXCEPTIONS = """
    import json, logging
    from toolweave import load_packs

    logging.basicConfig(level=logging.CRITICAL)
    packs = load_packs(include=["fs", "baseimport", "basehook", "baseresources", "badschema"])
    toolset = packs.build()
    with toolset.session(workspace=".").sync() as session:
        listed = [d["function"]["name"] for d in session.definitions("openai")]
        arguments = {"base_survivor": {}, "schema_ok": {"text": "hi"}, "opaque_arg": {"x": 1}}
        calls = {}
        for name, given in arguments.items():
            result = session.call(name, given)
            calls[name] = [result.error.kind if result.error else None, result.text]
    print(json.dumps({
        "statuses": {
            n: [i.status, i.error.stage if i.error else None, str(i.error) if i.error else None]
            for n, i in packs.packs.items()
            if i.status != "not selected"
        },
        "listed": listed,
        "calls": calls,
        "report": [[s.name, s.reason, s.message] for s in toolset.report.skipped],
    }))
"""


def test_packs_raising_base_exceptions_are_reported_and_skipped(venv: Venv) -> None:
    """Installed packs raising a BaseException class of their own or GeneratorExit (at
    import, in register_tools, in provide_resources) crashed the host; each is reported
    with its stage and skipped. A pack tool whose arguments have no JSON Schema made
    every listing of the set raise; it is left out of the listing, reported with its
    pack, and its calls answer unavailable, while every other tool works."""
    result = venv.python_json(BASE_EXCEPTIONS)
    statuses = result["statuses"]
    assert {n: s[:2] for n, s in statuses.items()} == {
        "fs": ["loaded", None],
        "baseimport": ["failed", "import"],
        "basehook": ["failed", "register_tools"],
        "baseresources": ["failed", "provide_resources"],
        "badschema": ["loaded", None],
    }
    assert "VendorAbort: brokenbase fixture aborts on import" in statuses["baseimport"][2]
    assert "GeneratorExit: brokenbase fixture exits" in statuses["basehook"][2]
    assert "Unprintable (its message could not be read)" in statuses["baseresources"][2]
    assert set(result["listed"]) == FS_TOOLS | {"base_survivor", "schema_ok"}
    assert result["calls"]["base_survivor"] == [None, "survived"]
    assert result["calls"]["schema_ok"] == [None, "hi"]
    kind, text = result["calls"]["opaque_arg"]
    assert kind == "unavailable"
    assert "opaque_arg cannot be used" in text
    ((name, reason, message),) = result["report"]
    assert (name, reason) == ("opaque_arg", "schema")
    assert "pack badschema (toolweave-brokenbase 0.1.0)" in message
    assert "Opaque" in message


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


# -- the READMEs' installation, as a user types it ----------------------------------------

PROJECT_README = "# My project\n\nhello from a project that installed toolweave\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv holding nothing of toolweave, and a project folder with a README.md."""
    base = tmp_path_factory.mktemp("project")
    _venv_made(_make_venv(base / "venv"))
    workdir = base / "project"
    workdir.mkdir()
    (workdir / "README.md").write_text(PROJECT_README)
    return Venv(base / "venv", {}, workdir)


def _as_typed(line: str, wheels: Path) -> str:
    """A README's command line with the folder the test built the wheels in."""
    return line.replace(WHEELS, shlex.quote(str(wheels)))


def test_readme_installs_from_the_built_wheels(project: Venv, clone_wheels: Path) -> None:
    """README.md's install lines work in a fresh venv: ``toolweave tools`` lists the fs
    tools and the README's first example reads the project's README."""
    (block,) = [
        b for b in shell_blocks(ROOT / "README.md") if any("--find-links" in line for line in b)
    ]
    assert block[0].startswith("pip install --find-links")
    printed = [project.shell(_as_typed(line, clone_wheels)) for line in block]
    assert block[-1] == "toolweave tools --table"
    assert all(name in printed[-1] for name in FS_TOOLS)

    first = _blocks(ROOT / "README.md", "python")[0]
    done = _run([str(project.python), "-c", first], cwd=project.workdir, env=project.env())
    assert "hello from a project that installed toolweave" in done.stdout


@pytest.mark.parametrize("pack", PACKS, ids=lambda p: p.name)
def test_pack_readme_installs_and_its_code_runs(
    project: Venv, clone_wheels: Path, pack: Path, tmp_path: Path
) -> None:
    """Each pack README's install lines work in a fresh venv; the pack then loads through its
    entry point and the README's code runs there."""
    page = pack / "README.md"
    lines = [line for line in shell_lines(page) if line.startswith("pip install")]
    assert lines, f"{page} gives no pip install line"
    for line in lines:
        assert f"--find-links {WHEELS}" in line, f"{page}: {line!r} does not use the wheels"
        project.shell(_as_typed(line, clone_wheels))

    name = pack.name.removeprefix("toolweave-")
    loaded = project.python_json(
        f"""
        import json
        from toolweave import load_packs

        print(json.dumps(load_packs(include=[{name!r}], strict=True).packs[{name!r}].to_dict()))
        """
    )
    assert loaded["status"] == "loaded"
    assert loaded["dist"] == pack.name
    assert loaded["tools"]

    (tmp_path / "README.md").write_text(PROJECT_README)
    _run(
        [str(project.python), "-c", "\n".join(_blocks(page, "python"))],
        cwd=tmp_path,
        env=project.env(),
    )
