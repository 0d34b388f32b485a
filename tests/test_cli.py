"""The ``toolweave`` command, through typer's CliRunner and as a real process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import TextIO

import pytest
from toolweave.cli import app
from toolweave.cli._new_pack import PLACEHOLDER, TEMPLATE_SUFFIX, template_files
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "plugins-builtin" / "_template"
EMBEDDED = ROOT / "core" / "src" / "toolweave" / "cli" / "pack_template"
INSTALLED = {ep.name for ep in entry_points(group="toolweave.packs")}
DEMO_TOOLS = {"todo_write", "grep", "bash", "wait_tasks", "task_output", "enter_plan", "exit_plan"}
"""Tools the demo's story needs besides the file tools."""

runner = CliRunner()


def available_tools() -> set[str]:
    """Names of the tools every installed pack provides together."""
    from toolweave import load_packs

    return set(load_packs().build().names)


needs_fs = pytest.mark.skipif("fs" not in INSTALLED, reason="toolweave-fs is not installed")
needs_shell = pytest.mark.skipif(
    "shell" not in INSTALLED, reason="toolweave-shell is not installed"
)
needs_plan = pytest.mark.skipif("plan" not in INSTALLED, reason="toolweave-plan is not installed")


def invoke(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def assert_one_line_error(stderr: str, *words: str) -> None:
    """An error is one 'error:' line (plus at most a hint), never a traceback."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert lines[0].startswith("error: ")
    assert all(line.startswith("hint: ") for line in lines[1:2])
    for word in words:
        assert word in stderr


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory, as `toolweave call` uses it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hello.txt").write_text("hello\nworld\n")
    return tmp_path


# -- help --------------------------------------------------------------------------


COMMANDS = ["packs", "tools", "describe", "call", "check", "serve", "demo", "new-pack"]


def _examples(help_text: str) -> list[str]:
    """The example commands of a docstring or epilog (after **Examples**), comments cut."""
    _, _, after = help_text.partition("**Examples**")
    return [line.split("  #")[0].strip() for line in after.splitlines() if "toolweave " in line]


def _starts_a_line(example: str, shown: str) -> bool:
    return any(line.strip().startswith(example) for line in shown.splitlines())


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_examples(command: str) -> None:
    """`--help` works on every command and shows each example on a line of its own."""
    import typer

    code, out, _ = invoke(command, "--help")
    assert code == 0
    assert "Examples" in out
    help_text = typer.main.get_command(app).commands[command].help  # type: ignore[attr-defined]
    examples = _examples(help_text or "")
    assert examples
    assert all(f"toolweave {command}" in example for example in examples)
    for example in examples:
        assert _starts_a_line(example, out), f"{example!r} is not on a line of its own"


def test_root_help_lists_every_command() -> None:
    """The root help names each command and shows examples; no arguments shows it too."""
    code, out, _ = invoke("--help")
    assert code == 0
    for command in COMMANDS:
        assert command in out
    from toolweave.cli._app import EPILOG

    for example in _examples(EPILOG):
        assert _starts_a_line(example, out), f"{example!r} is not on a line of its own"
    code, out, _ = invoke()
    assert "Usage" in out


def test_version() -> None:
    """`--version` prints the package version."""
    from toolweave import __version__

    code, out, _ = invoke("--version")
    assert (code, out.strip()) == (0, f"toolweave {__version__}")


# -- packs, tools, describe --------------------------------------------------------


@needs_fs
def test_packs_table_and_json() -> None:
    """`packs` lists each installed pack with its status, distribution and tools."""
    code, out, _ = invoke("packs")
    assert code == 0
    assert "fs" in out
    assert "loaded" in out
    assert "toolweave-fs" in out
    code, out, _ = invoke("packs", "--json", "--packs", "fs")
    data = {p["name"]: p for p in json.loads(out)}
    assert data["fs"]["status"] == "loaded"
    assert data["fs"]["dist"] == "toolweave-fs"
    assert "fs:read_file" in data["fs"]["tools"]
    assert {p["status"] for n, p in data.items() if n != "fs"} <= {"not selected"}


def _broken_pack(root: Path) -> Path:
    """A real installed-looking distribution whose pack raises at import."""
    site = root / "site"
    (site / "twbroken_mod.py").parent.mkdir(parents=True)
    (site / "twbroken_mod.py").write_text("raise RuntimeError('boom at import')\n")
    info = site / "toolweave_twbroken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toolweave-twbroken\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text("[toolweave.packs]\ntwbroken = twbroken_mod:pack\n")
    return site


def test_packs_shows_a_broken_pack_and_strict_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pack that raises at import is listed as failed with its error; --strict exits 1."""
    monkeypatch.syspath_prepend(str(_broken_pack(tmp_path)))
    code, out, _ = invoke("packs", "--json")
    assert code == 0
    broken = next(p for p in json.loads(out) if p["name"] == "twbroken")
    assert broken["status"] == "failed"
    assert "boom at import" in broken["error"]
    assert broken["dist"] == "toolweave-twbroken"
    code, out, _ = invoke("packs", "--strict")
    assert code == 1
    assert "boom at import" in out


@needs_fs
def test_tools_prints_definitions_as_json() -> None:
    """`tools` prints the neutral definitions by default and any provider format on request."""
    from toolweave import load_packs

    code, out, _ = invoke("tools", "--packs", "fs")
    assert code == 0
    assert json.loads(out) == load_packs(["fs"]).build().definitions("neutral")
    code, out, _ = invoke("tools", "-p", "fs", "--format", "openai-strict")
    strict = json.loads(out)
    assert all(d["function"]["strict"] is True for d in strict)
    code, out, _ = invoke("tools", "-p", "fs", "-f", "anthropic")
    assert {d["name"] for d in json.loads(out)} >= {"read_file", "edit_file"}
    code, out, _ = invoke("tools", "-p", "fs", "--json", "-f", "anthropic")
    assert code == 0
    assert {d["name"] for d in json.loads(out)} >= {"read_file", "edit_file"}
    code, _, err = invoke("tools", "-p", "fs", "--json", "--table")
    assert code == 2
    assert_one_line_error(err, "--table", "--json")


@needs_fs
def test_tools_table_and_config(tmp_path: Path) -> None:
    """`--table` lists names for people; `--config` builds the set from a configuration."""
    code, out, _ = invoke("tools", "-p", "fs", "--table")
    assert code == 0
    assert "read_file" in out
    assert "read-only" not in out.splitlines()[0]
    config = tmp_path / "tw.toml"
    config.write_text(
        '[[tools]]\nid = "read_file"\nname = "Read"\nrename = { path = "file_path" }\n'
    )
    code, out, _ = invoke("tools", "-p", "fs", "--config", str(config))
    (only,) = json.loads(out)
    assert only["name"] == "Read"
    assert "file_path" in only["input_schema"]["properties"]


def test_tools_unknown_format_and_pack_are_one_line_errors() -> None:
    """Bad input gives one error line with a hint and exit code 2, no traceback."""
    code, _, err = invoke("tools", "--format", "cohere")
    assert code == 2
    assert_one_line_error(err, "cohere", "openai-strict", "hint: see `toolweave tools --help`")
    code, _, err = invoke("tools", "--packs", "nosuchpack")
    assert code == 2
    assert_one_line_error(err, "nosuchpack", "installed packs")


@needs_fs
def test_tools_bad_config_lists_every_problem(tmp_path: Path) -> None:
    """A configuration with problems fails with each problem on its own line."""
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"tools": [{"id": "no_such_tool"}, {"id": "nope_either"}]}))
    code, _, err = invoke("tools", "-p", "fs", "--config", str(config))
    assert code == 1
    assert "no_such_tool" in err
    assert "nope_either" in err
    assert "Traceback" not in err


@needs_fs
def test_describe_shows_arguments_and_json() -> None:
    """`describe` shows origin, kind and arguments; --json carries the schema."""
    code, out, _ = invoke("describe", "read_file", "-p", "fs")
    assert code == 0
    assert "fs:read_file" in out
    assert "toolweave-fs" in out
    assert "offset" in out
    code, out, _ = invoke("describe", "read_file", "-p", "fs", "--json")
    info = json.loads(out)
    assert info["kind"] == "read"
    assert info["read_only"] is True
    assert [a["name"] for a in info["arguments"]][:2] == ["path", "offset"]
    assert info["arguments"][0]["required"] is True
    code, _, err = invoke("describe", "nope", "-p", "fs")
    assert code == 2
    assert_one_line_error(err, "nope", "read_file")


@needs_shell
def test_describe_prints_the_whole_description_on_a_narrow_terminal() -> None:
    """On a 60-column terminal every line of the description (list items too) is shown whole."""
    from toolweave import load_packs

    entry = load_packs(["shell"]).build().get("bash")
    assert entry is not None
    proc = subprocess.run(
        [sys.executable, "-c", "from toolweave.cli import main; main()", "describe", "bash"],
        env={**os.environ, "COLUMNS": "60", "TERM": "dumb"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    shown = " ".join(proc.stdout.split())
    for line in entry.description.splitlines():
        words = " ".join(line.removeprefix("- ").replace("`", "").split())
        assert words in shown


# -- call --------------------------------------------------------------------------


@needs_fs
def test_call_prints_the_model_text(workspace: Path) -> None:
    """`call` runs on the current directory and prints what the model reads."""
    code, out, _ = invoke("call", "read_file", '{"path": "hello.txt"}', "-p", "fs")
    assert code == 0
    assert "hello" in out
    assert "world" in out
    code, _, _ = invoke("call", "write_file", '{"path": "new.txt", "content": "x"}', "-p", "fs")
    assert code == 0
    assert (workspace / "new.txt").read_text() == "x"


def test_call_refuses_a_missing_workspace(tmp_path: Path) -> None:
    """--workspace must name an existing folder; a missing one is a usage error naming it."""
    missing = tmp_path / "nowhere"
    code, _, err = invoke("call", "read_file", "{}", "--workspace", str(missing))
    assert code == 2
    words = " ".join(err.replace("│", " ").split())  # the usage box wraps long paths
    assert "nowhere" in words
    assert "does not exist" in words
    assert "Traceback" not in err


@needs_fs
def test_call_reads_arguments_from_stdin(workspace: Path) -> None:
    """'-' takes the arguments from standard input."""
    code, out, _ = invoke("call", "read_file", "-", "-p", "fs", input='{"path": "hello.txt"}')
    assert code == 0
    assert "world" in out


@needs_fs
def test_call_failure_exits_1_with_the_kind(workspace: Path) -> None:
    """A failed call prints its error kind on stderr and exits with 1."""
    code, out, err = invoke("call", "read_file", '{"path": "missing.txt"}', "-p", "fs")
    assert code == 1
    assert out == ""
    assert_one_line_error(err, "not_found", "missing.txt")
    code, _, err = invoke("call", "read_file", '{"path": "../x"}', "-p", "fs")
    assert code == 1
    assert "permission_denied" in err
    code, _, err = invoke("call", "read_file", '{"path":', "-p", "fs")
    assert code == 2  # a mistake on the command line, caught before the call
    assert "not valid JSON" in err
    code, _, err = invoke("call", "no_tool", "-p", "fs")
    assert code == 2
    assert "no tool named 'no_tool'" in err


@needs_fs
def test_call_json_carries_the_whole_result(workspace: Path) -> None:
    """`--json` prints the CallResult; the exit code still says whether it failed."""
    code, out, _ = invoke("call", "read_file", '{"path": "hello.txt"}', "-p", "fs", "--json")
    result = json.loads(out)
    assert code == 0
    assert result["error"] is None
    assert result["output"]["total_lines"] == 2
    code, out, _ = invoke("call", "read_file", '{"path": "nope"}', "-p", "fs", "--json")
    assert code == 1
    assert json.loads(out)["error"]["kind"] == "not_found"


@needs_shell
def test_call_shows_progress_of_a_streaming_tool(workspace: Path) -> None:
    """A streaming tool's progress goes to stderr as it comes; the result to stdout."""
    code, out, err = invoke("call", "bash", '{"command": "echo one; echo two"}', "-p", "shell")
    assert code == 0
    assert "one" in err
    assert "two" in err
    assert out.strip().splitlines() == ["one", "two"]
    code, _, err = invoke("call", "bash", '{"command": "echo one"}', "-p", "shell", "--quiet")
    assert err == ""


@needs_shell
def test_call_timeout_stops_the_call(workspace: Path) -> None:
    """`--timeout` stops a call that runs longer, whatever the tool's own deadline."""
    started = time.monotonic()
    code, _, err = invoke("call", "bash", '{"command": "sleep 20"}', "-p", "shell", "-t", "0.3")
    assert code == 1
    assert_one_line_error(err, "timeout", "--timeout")
    assert time.monotonic() - started < 10


ASK_PORT = json.dumps({"question": "Which port?", "choices": ["8000", "8080"]})


@needs_plan
def test_call_asks_the_user_on_the_terminal(workspace: Path) -> None:
    """With --ask, ask_user puts the question on stderr and reads the answer from stdin."""
    code, out, err = invoke("call", "ask_user", ASK_PORT, "-p", "plan", "--ask", input="2\n")
    assert code == 0, err
    assert out.strip() == "The user answered: 8080"
    assert "Which port?" in err
    assert "1) 8000" in err
    assert "2) 8080" in err
    code, out, _ = invoke("call", "ask_user", ASK_PORT, "-p", "plan", "--ask", input="9090\n")
    assert out.strip() == "The user answered: 9090"
    code, out, _ = invoke(
        "call", "ask_user", ASK_PORT, "-p", "plan", "--ask", "--json", input="8080\n"
    )
    assert json.loads(out)["output"]["choice"] == 1


@needs_plan
def test_call_ask_declines_on_empty_answer_and_repeats_invalid_picks(workspace: Path) -> None:
    """An empty line or end of input declines; a closed question re-asks until a valid pick."""
    for given in ("\n", ""):
        code, out, _ = invoke("call", "ask_user", ASK_PORT, "-p", "plan", "--ask", input=given)
        assert code == 0
        assert "did not answer" in out
    closed = json.dumps({"question": "Which?", "choices": ["a", "b"], "allow_other": False})
    code, out, err = invoke("call", "ask_user", closed, "-p", "plan", "--ask", input="c\n3\nb\n")
    assert code == 0
    assert out.strip() == "The user answered: b"
    assert err.count("pick a number from 1 to 2") == 2


@needs_plan
def test_call_without_a_terminal_does_not_ask(workspace: Path) -> None:
    """Standard input that is not a terminal (or --no-ask) leaves ask_user unavailable."""
    for extra in ((), ("--no-ask",)):
        code, out, err = invoke("call", "ask_user", ASK_PORT, "-p", "plan", *extra, input="1\n")
        assert code == 1
        assert out == ""
        assert "unavailable" in err
        assert "Which port?" not in err


# -- check -------------------------------------------------------------------------


@needs_fs
def test_check_reports_problems_one_per_line(tmp_path: Path) -> None:
    """`check` exits 0 on a good configuration, 1 with one line per problem otherwise."""
    good = tmp_path / "good.toml"
    good.write_text('[[tools]]\nid = "read_file"\n')
    code, out, _ = invoke("check", str(good), "-p", "fs")
    assert code == 0
    assert out.startswith("ok")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tools": [{"id": "read_file", "name": "bad name!"}]}))
    code, out, err = invoke("check", str(bad), "-p", "fs")
    assert code == 1
    assert len(out.strip().splitlines()) == 1
    assert "name" in out
    assert "1 problem" in err
    code, out, _ = invoke("check", str(bad), "-p", "fs", "--json")
    report = json.loads(out)
    assert report["ok"] is False
    assert report["problems"][0]["tag"] == "invalid_config"
    code, out, _ = invoke("check", str(tmp_path / "missing.toml"), "-p", "fs")
    assert code == 1
    assert "cannot read" in out


# -- serve -------------------------------------------------------------------------


def test_serve_bad_address_is_a_usage_error() -> None:
    """A malformed --http address fails at once with one line."""
    pytest.importorskip("mcp", reason="the mcp SDK is not installed")
    code, _, err = invoke("serve", "--http", "localhost:notaport")
    assert code == 2
    assert_one_line_error(err, "HOST:PORT")


# -- new-pack ----------------------------------------------------------------------


def _template_tree(root: Path) -> dict[str, str]:
    skipped = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file() and not skipped & set(p.parts) and p.suffix != ".pyc"
    }


def test_embedded_template_matches_the_repository_template() -> None:
    """The template inside the core wheel is exactly plugins-builtin/_template.

    Run with TOOLWEAVE_UPDATE_TEMPLATE=1 to copy the repository's template in.
    """
    source = _template_tree(TEMPLATE)
    if os.environ.get("TOOLWEAVE_UPDATE_TEMPLATE") == "1":
        shutil.rmtree(EMBEDDED, ignore_errors=True)
        for rel, text in source.items():
            target = EMBEDDED / (rel + TEMPLATE_SUFFIX)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    assert template_files() == source, "run: TOOLWEAVE_UPDATE_TEMPLATE=1 pytest tests/test_cli.py"


def test_new_pack_renders_like_the_repository_helper(
    tmp_path: Path, template_renderer: Callable[[Path, str], Path]
) -> None:
    """`new-pack` writes the same files as the repository's template renderer, name filled in."""
    code, out, _ = invoke("new-pack", "weather", "--dir", str(tmp_path / "cli"))
    assert code == 0
    assert "toolweave-weather" in out
    made = _template_tree(tmp_path / "cli" / "toolweave-weather")
    expected = _template_tree(template_renderer(tmp_path / "ref", "weather"))
    assert made == expected
    assert "src/toolweave_weather/__init__.py" in made
    assert not any(PLACEHOLDER in rel or PLACEHOLDER in text for rel, text in made.items())
    assert 'weather = "toolweave_weather:pack"' in made["pyproject.toml"]


def test_new_pack_refuses_bad_names_and_existing_folders(tmp_path: Path) -> None:
    """A bad name or an existing folder is a one-line usage error."""
    code, _, err = invoke("new-pack", "Bad-Name", "--dir", str(tmp_path))
    assert code == 2
    assert_one_line_error(err, "Bad-Name")
    (tmp_path / "toolweave-taken").mkdir()
    code, _, err = invoke("new-pack", "taken", "--dir", str(tmp_path))
    assert code == 2
    assert_one_line_error(err, "already exists")


@pytest.mark.slow
def test_new_pack_tests_pass_out_of_the_box(
    tmp_path: Path, pack_installer: Callable[[Path, Path], Path]
) -> None:
    """The scaffolded pack, installed, passes its own tests and toolweave's conformance kit."""
    invoke("new-pack", "weather", "--dir", str(tmp_path))
    dest = tmp_path / "toolweave-weather"
    env = {**os.environ, "PYTHONPATH": str(pack_installer(dest, tmp_path / "site"))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-W", "error", "tests"],
        cwd=dest,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_conformance.py::test_pack_conforms PASSED" in proc.stdout


# -- demo --------------------------------------------------------------------------


def test_demo_runs_the_story_and_exits_0() -> None:
    """The demo plays every step as scripted and prints a summary."""
    code, out, _ = invoke("demo")
    assert code == 0, out
    assert "ok: every step behaved as scripted" in out
    assert "calls in" in out
    assert "errors by kind:" in out


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic", "gemini"])
def test_demo_json_in_every_provider_format(provider: str) -> None:
    """Every provider's message format gives the same, correct transcript."""
    code, out, _ = invoke("demo", "--json", "--provider", provider)
    report = json.loads(out)
    assert code == 0, report["problems"]
    assert report["ok"] is True
    assert report["problems"] == []
    kinds = report["errors_by_kind"]
    assert kinds.get("not_found", 0) >= 1
    if available_tools() >= DEMO_TOOLS:
        assert report["skipped"] == []
        assert kinds["permission_denied"] == 2
        streamed = [t for t in report["turns"] if t["tool"] == "bash" and t["progress"]]
        assert streamed, "the streaming command reported no progress"


@needs_fs
def test_demo_exits_1_when_a_step_misbehaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step that does not behave as scripted fails the demo (CI catches regressions)."""
    from toolweave.cli import _demo_script
    from toolweave.testing import step

    original = _demo_script.script

    def broken() -> list[object]:
        return [*original(), step("read_file", {"path": "calc.py"}, contains="no such text")]

    monkeypatch.setattr(_demo_script, "script", broken)
    code, out, _ = invoke("demo")
    assert code == 1
    assert "problem: step" in out
    assert "expected the model text to contain 'no such text'" in out


def test_demo_rejects_an_unknown_provider() -> None:
    """An unknown provider is a usage error before anything runs."""
    code, _, err = invoke("demo", "--provider", "cohere")
    assert code == 2
    assert_one_line_error(err, "cohere")


# -- as a real process ---------------------------------------------------------------


def _console_script() -> str:
    found = shutil.which("toolweave", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the toolweave console script is not installed next to this Python")
    return found


def test_import_toolweave_does_not_import_the_cli_stack() -> None:
    """`import toolweave` stays free of typer and rich (cold start matters)."""
    code = "import sys, toolweave; print(sorted(m for m in ('typer', 'rich', 'click') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
    code = "import sys, toolweave.cli; toolweave.cli.build_app(); print('toolweave_plan' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


@pytest.mark.slow
def test_console_script_runs_the_demo() -> None:
    """The installed `toolweave` script runs the demo in a real process and exits 0."""
    started = time.monotonic()
    proc = subprocess.run(
        [_console_script(), "demo"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok: every step behaved as scripted" in proc.stdout
    assert time.monotonic() - started < 30


@pytest.fixture
def sleeping_call(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [_console_script(), "call", "bash", '{"command": "echo started; sleep 30"}', "-p", "shell"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
@needs_shell
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery is POSIX-only here")
def test_ctrl_c_cancels_a_call_cleanly(sleeping_call: subprocess.Popen[str]) -> None:
    """Ctrl-C ends a running call as `cancelled` with exit 130, quickly and without a traceback."""
    assert sleeping_call.stdout is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # wait until the command runs
        assert sleeping_call.poll() is None
        if sleeping_call.stderr is not None and "started" in (
            sleeping_call.stderr.readline() or ""
        ):
            break
    sleeping_call.send_signal(signal.SIGINT)
    _, err = sleeping_call.communicate(timeout=15)
    assert sleeping_call.returncode == 130, err
    assert "cancelled" in err
    assert "Traceback" not in err


@pytest.mark.slow
@needs_fs
def test_serve_stdio_answers_an_mcp_client(tmp_path: Path) -> None:
    """`toolweave serve` over stdio lists the pack's tools to a real MCP client."""
    pytest.importorskip("mcp", reason="the mcp SDK is not installed")
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    (tmp_path / "a.txt").write_text("served\n")
    params = StdioServerParameters(
        command=_console_script(), args=["serve", "--packs", "fs"], cwd=str(tmp_path)
    )

    async def talk(errlog: TextIO) -> tuple[list[str], str]:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            listed = await client.list_tools()
            result = await client.call_tool("read_file", {"path": "a.txt"})
            text = "".join(getattr(c, "text", "") for c in result.content)
            return [t.name for t in listed.tools], text

    with open(os.devnull, "w") as errlog:
        names, text = anyio.run(talk, errlog)
    assert "read_file" in names
    assert "served" in text


def test_the_app_is_the_typer_app_whatever_was_imported_first() -> None:
    """Importing the CLI's modules in any order leaves ``toolweave.cli.app`` the Typer app
    (a module global once shared its name with the ``_app`` submodule)."""
    code = (
        "import toolweave.cli._app\n"
        "import typer\n"
        "from toolweave.cli import app\n"
        "assert isinstance(app, typer.Typer), type(app)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
