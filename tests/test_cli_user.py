"""The ``toolweave`` command as a person meets it: on a terminal, across calls, with
typos, configuration files found on their own, exit codes a script can trust."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = {ep.name for ep in entry_points(group="toolweave.packs")}

needs_fs = pytest.mark.skipif("fs" not in INSTALLED, reason="toolweave-fs is not installed")
needs_shell = pytest.mark.skipif(
    "shell" not in INSTALLED, reason="toolweave-shell is not installed"
)
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="terminals and signals of POSIX")


def console_script() -> str:
    """The installed ``toolweave`` command beside this Python."""
    found = shutil.which("toolweave", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the toolweave console script is not installed next to this Python")
    return found


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a command run by a test: no TOOLWEAVE_* or colour switches of
    the machine running the tests, plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLWEAVE_") and k not in {"FORCE_COLOR", "NO_COLOR", "COLUMNS"}
    }
    env.update(extra)
    return env


def run(
    args: Sequence[str], cwd: Path, *, input: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``toolweave ARGS`` as a real process (pipes, no terminal)."""
    return subprocess.run(
        [console_script(), *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=clean_env(**env),
        timeout=120,
    )


def on_terminal(
    args: Sequence[str], cwd: Path, *, columns: int = 80, rows: int = 24, **env: str
) -> tuple[int, str]:
    """Run ``toolweave ARGS`` with a terminal as its standard input, output and error,
    and return its exit code and the screen a person would see at the end (read by a
    VT emulator, so text drawn and then erased is not on it)."""
    pyte = pytest.importorskip("pyte", reason="pyte (the dev group's terminal emulator)")
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(
        [console_script(), *args],
        cwd=cwd,
        stdin=side,
        stdout=side,
        stderr=side,
        env=clean_env(TERM="xterm-256color", **env),
        start_new_session=True,
    )
    os.close(side)
    screen = pyte.Screen(columns, rows)
    stream = pyte.ByteStream(screen)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: every holder of the terminal's other side closed it
                break
            if not data:
                break
            stream.feed(data)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    return code, "\n".join(line.rstrip() for line in screen.display).strip()


# -- 1. progress on a terminal ----------------------------------------------------------


@posix_only
@needs_shell
@pytest.mark.slow
def test_streamed_output_shows_once_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal a streaming call's progress is erased when its result is printed,
    so each line of output is on the screen once."""
    command = "for i in 1 2 3; do echo line-$i; sleep 0.2; done"
    code, screen = on_terminal(
        ["call", "bash", json.dumps({"command": command}), "-p", "shell"], tmp_path
    )
    assert code == 0, screen
    assert screen.splitlines() == ["line-1", "line-2", "line-3"]


@needs_shell
@pytest.mark.slow
def test_progress_goes_to_stderr_when_output_goes_elsewhere(tmp_path: Path) -> None:
    """Standard output to a file, standard error to another place: progress is printed as
    it comes on standard error, the result on standard output, each once."""
    proc = run(["call", "bash", '{"command": "echo one; echo two"}', "-p", "shell"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["one", "two"]
    assert proc.stderr.splitlines() == ["one", "two"]


@needs_shell
@pytest.mark.slow
def test_progress_is_not_repeated_into_one_file(tmp_path: Path) -> None:
    """With ``> log 2>&1`` the file holds the result once, not the progress before it."""
    log = tmp_path / "log.txt"
    with log.open("w") as sink:
        proc = subprocess.run(
            [console_script(), "call", "bash", '{"command": "echo one; echo two"}', "-p", "shell"],
            cwd=tmp_path,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=clean_env(),
            timeout=120,
        )
    assert proc.returncode == 0
    assert log.read_text().splitlines() == ["one", "two"]


# -- 2. Ctrl-C stops `serve` on stdio -----------------------------------------------------


def _read_until(fd: int, word: bytes, seconds: float = 60) -> bytes:
    """What ``fd`` gives until ``word`` shows up (fails after ``seconds``)."""
    seen = b""
    deadline = time.monotonic() + seconds
    while word not in seen:
        assert time.monotonic() < deadline, f"no {word!r} within {seconds} s: {seen!r}"
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"closed before {word!r}: {seen!r}"
            seen += chunk
    return seen


def _read_to_end(fd: int) -> bytes:
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            return seen
        if not chunk:
            return seen
        seen += chunk


@posix_only
@needs_fs
@pytest.mark.slow
def test_ctrl_c_stops_serve_on_a_terminal(tmp_path: Path) -> None:
    """`toolweave serve` with a terminal as its input says how to stop it, and Ctrl-C
    (SIGINT) stops it with exit 0 and no traceback (the SDK's reader thread is blocked
    on that terminal)."""
    main, side = pty.openpty()
    proc = subprocess.Popen(
        [console_script(), "serve", "-p", "fs"],
        cwd=tmp_path,
        stdin=side,
        stdout=side,
        stderr=side,
        env=clean_env(TERM="xterm-256color"),
        start_new_session=True,
    )
    os.close(side)
    try:
        shown = _read_until(main, b"Ctrl-D stops it")
        assert b"standard input is a terminal" in shown
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        shown += _read_to_end(main)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    assert b"Traceback" not in shown
    assert b"stopping (Ctrl-C)" in shown


@posix_only
@needs_fs
@pytest.mark.slow
def test_ctrl_c_stops_serve_on_pipes(tmp_path: Path) -> None:
    """Started by a client (pipes), `toolweave serve` also stops on SIGINT with exit 0."""
    proc = subprocess.Popen(
        [console_script(), "serve", "-p", "fs"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    try:
        assert proc.stderr is not None
        assert b"serving" in _read_until(proc.stderr.fileno(), b"on stdio")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert b"Traceback" not in err
    assert b"terminal" not in err  # no hint for a client's pipes


# -- 3. sessions across commands ------------------------------------------------------------


@needs_shell
@pytest.mark.slow
def test_a_background_task_is_read_by_the_next_call(tmp_path: Path) -> None:
    """A task started by one `toolweave call` process is found by the next one in the
    same session (the default one, or one named by --session-id or $TOOLWEAVE_SESSION),
    and not by another session, which says why."""
    start = {"command": "echo from-the-task; sleep 1", "is_background": True}
    read = json.dumps({"task_id": "task-1", "block": True, "timeout": 20000})
    for flags, env in (([], {}), (["--session-id", "build-42"], {})):
        workspace = tmp_path / (flags[-1] if flags else "default")
        workspace.mkdir()
        first = run(["call", "bash", json.dumps(start), "-p", "shell", *flags], workspace, **env)
        assert first.returncode == 0, first.stderr
        assert "task-1" in first.stdout
        assert "task_output" in first.stderr  # how to read it, with the session id
        assert all(flag in first.stderr for flag in flags)
        try:
            again = run(["call", "task_output", read, "-p", "shell", *flags], workspace)
            assert again.returncode == 0, again.stderr
            assert "from-the-task" in again.stdout
            other = run(
                ["call", "task_output", read, "-p", "shell"],
                workspace,
                TOOLWEAVE_SESSION="someone-else",
            )
            assert other.returncode == 1
            assert "no background task" in other.stderr
            assert "--session-id" in other.stderr
        finally:
            run(["call", "kill_task", '{"task_id": "task-1"}', "-p", "shell", *flags], workspace)


@needs_shell
@pytest.mark.slow
def test_the_session_comes_from_the_environment(tmp_path: Path) -> None:
    """$TOOLWEAVE_SESSION names the session when --session-id is not given."""
    start = json.dumps({"command": "echo env-task", "is_background": True})
    read = json.dumps({"task_id": "task-1", "block": True, "timeout": 20000})
    first = run(["call", "bash", start, "-p", "shell"], tmp_path, TOOLWEAVE_SESSION="ci-7")
    assert first.returncode == 0, first.stderr
    again = run(["call", "task_output", read, "-p", "shell", "--session-id", "ci-7"], tmp_path)
    assert "env-task" in again.stdout, again.stderr


@needs_fs
@needs_shell
@pytest.mark.slow
def test_calls_that_change_no_state_leave_no_state_file(tmp_path: Path) -> None:
    """Reading, listing and a foreground command write nothing under .toolweave/; a
    background task, which is state, does."""
    (tmp_path / "notes.txt").write_text("hi\n")
    for args in (
        ["call", "read_file", '{"path": "notes.txt"}'],
        ["call", "list_dir"],
        ["call", "bash", '{"command": "echo hi"}'],
    ):
        assert run(args, tmp_path).returncode == 0
    assert not (tmp_path / ".toolweave").exists()
    assert (
        run(["call", "bash", '{"command": "true", "is_background": true}'], tmp_path).returncode
        == 0
    )
    assert (tmp_path / ".toolweave" / "state.db").is_file()


def test_a_bad_session_id_is_a_usage_error(tmp_path: Path) -> None:
    """A session id with spaces or slashes is refused before anything runs (exit 2)."""
    proc = run(["call", "list_dir", "--session-id", "a b/c"], tmp_path)
    assert proc.returncode == 2
    assert "invalid session id" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- 4. configuration discovery -------------------------------------------------------------


def invoke(*args: str, input: str | None = None) -> tuple[int, str, str]:
    """``toolweave ARGS`` in this process (typer's runner): exit code, stdout, stderr."""
    from toolweave.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_find_config_stops_at_the_repository_root_and_home(tmp_path: Path) -> None:
    """The search climbs from the start folder, searches the repository root and stops
    there; it never searches the home folder unless it starts in it."""
    from toolweave.cli._discovery import find_config

    home = tmp_path / "home"
    repo = home / "code" / "repo"
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    (home / "toolweave.toml").write_text("")
    assert find_config(deep, home) is None  # the home folder's file is not used
    assert find_config(home, home) == (home / "toolweave.toml").resolve()
    (repo / ".git").mkdir()
    (home / "code" / "toolweave.toml").write_text("")
    assert find_config(deep, home) is None  # above the repository root
    (repo / "toolweave.json").write_text("{}")
    assert find_config(deep, home) == (repo / "toolweave.json").resolve()
    (repo / "src" / "toolweave.toml").write_text("")
    assert find_config(deep, home) == (repo / "src" / "toolweave.toml").resolve()


@needs_fs
def test_commands_use_the_configuration_they_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tools`, `check` and `call` use a toolweave.toml found above the current folder,
    $TOOLWEAVE_CONFIG before it, --config before both, and none with --no-config."""
    monkeypatch.delenv("TOOLWEAVE_CONFIG", raising=False)
    (tmp_path / ".git").mkdir()
    (tmp_path / "toolweave.toml").write_text('tools = ["read_file"]\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)

    def listed(*args: str) -> list[str]:
        code, out, err = invoke("tools", "-p", "fs", *args)
        assert code == 0, err
        return [d["name"] for d in json.loads(out)]

    assert listed() == ["read_file"]
    assert len(listed("--no-config")) > 1
    other = tmp_path / "other.toml"
    other.write_text('tools = ["list_dir"]\n')
    monkeypatch.setenv("TOOLWEAVE_CONFIG", str(other))
    assert listed() == ["list_dir"]
    assert listed("--config", str(tmp_path / "toolweave.toml")) == ["read_file"]
    code, out, _ = invoke("check", "-p", "fs")
    assert code == 0
    assert "other.toml builds" in out
    code, _, err = invoke("call", "read_file", '{"path": "x"}', "-p", "fs")
    assert code == 2  # not in the configured set: an unknown tool
    assert "list_dir" in err
    monkeypatch.setenv("TOOLWEAVE_CONFIG", str(tmp_path / "missing.toml"))
    code, _, err = invoke("tools", "-p", "fs")
    assert code == 2
    assert "TOOLWEAVE_CONFIG" in err
    assert "--no-config" in err


def test_check_without_a_file_says_none_was_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`toolweave check` with nothing to find is a usage error that says where it looked."""
    monkeypatch.delenv("TOOLWEAVE_CONFIG", raising=False)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke("check")
    assert code == 2
    assert "no configuration to check" in err


@needs_fs
@pytest.mark.slow
def test_verbose_output_names_the_configuration(tmp_path: Path) -> None:
    """`toolweave -v` says which configuration file it used and how it found it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "toolweave.toml").write_text('tools = ["read_file"]\n')
    (tmp_path / "sub").mkdir()
    proc = run(["-v", "tools", "-p", "fs"], tmp_path / "sub")
    assert proc.returncode == 0, proc.stderr
    assert f"configuration: {tmp_path / 'toolweave.toml'} (found from" in proc.stderr


# -- 5. typos on the command line ---------------------------------------------------------


@needs_fs
def test_unknown_tools_get_a_suggestion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`call` and `describe` suggest the closest tool names (as `check` does) and exit 2."""
    monkeypatch.chdir(tmp_path)
    for command in (["call", "red_file", "{}"], ["describe", "red_file"]):
        code, out, err = invoke(*command, "-p", "fs", "--no-config")
        assert code == 2, err
        assert "no tool named 'red_file'; did you mean read_file" in err
        assert "Traceback" not in err
        assert out == ""
    code, _, err = invoke("call", "zzzzzz", "-p", "fs", "--no-config")
    assert code == 2
    assert "none is close" in err


def test_check_and_call_share_one_suggestion() -> None:
    """The suggestion of the command line is the configuration's, word for word."""
    from toolweave.catalog._config import did_you_mean

    assert did_you_mean("red_file", ["read_file", "list_dir"]) == "; did you mean read_file?"
    assert did_you_mean("zzz", ["read_file"]) == ""


@needs_fs
@pytest.mark.parametrize(
    ("arguments", "position", "advice"),
    [
        ('{path: "README.md"}', "column 2", "single quotes"),  # a key without quotes
        ("{path: README.md}", "column 2", "the shell ate the double quotes"),  # "{"path": …}"
        ('{"path": "README.md",}', "column 22", "single quotes"),
    ],
)
def test_malformed_json_says_where_and_how_to_quote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: str, position: str, advice: str
) -> None:
    """JSON that does not parse is a usage error (exit 2) that shows the place with a
    caret and says how to quote JSON for a shell, instead of the model's message."""
    monkeypatch.chdir(tmp_path)
    code, out, err = invoke("call", "read_file", arguments, "-p", "fs")
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("error: the arguments are not valid JSON")
    assert position in lines[0]
    assert lines[1].strip() == arguments
    caret = int(position.split()[-1]) - 1
    assert lines[2] == "  " + " " * caret + "^"
    assert advice in lines[3]
    assert "invalid_params" not in err


@needs_fs
def test_arguments_must_be_an_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON list or string is refused with a hint, as is broken JSON on standard input."""
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke("call", "read_file", '["README.md"]', "-p", "fs")
    assert code == 2
    assert "must be a JSON object, not list" in err
    code, _, err = invoke("call", "read_file", "-", "-p", "fs", input='{"path": \n')
    assert code == 2
    assert "line 2, column 1" in err
    assert "standard input" in err


# -- 7. tables, help, exit codes, units -----------------------------------------------------


def test_first_sentence_is_whole() -> None:
    """The table's summary is the first sentence, not cut at "e.g." or a file name."""
    from toolweave.cli._listing import first_sentence

    text = "Search files, e.g. logs, i.e. text. Then more.\n\nAnother paragraph."
    assert first_sentence(text) == "Search files, e.g. logs, i.e. text"
    assert first_sentence("Read README.md and\nsay so! Next.") == "Read README.md and say so!"
    assert first_sentence("No period at all") == "No period at all"


@needs_fs
@needs_shell
@pytest.mark.slow
def test_tools_table_wraps_whole_sentences_at_80_columns(tmp_path: Path) -> None:
    """At 80 columns every tool's first sentence is there in full, wrapped, never cut
    with an ellipsis, and no line is wider than the terminal."""
    from toolweave import load_packs
    from toolweave.cli._listing import first_sentence

    proc = run(["tools", "--table", "-p", "fs,shell"], tmp_path, COLUMNS="80")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in proc.stdout
    flat = " ".join(" ".join(proc.stdout.split()).split(" yes "))
    toolset = load_packs(include=["fs", "shell"]).build()
    for entry in toolset:
        words = first_sentence(entry.description).split()
        assert " ".join(words[-4:]) in " ".join(flat.split()), entry.name


def _commands() -> list[tuple[str, object]]:
    import typer
    from toolweave.cli import app

    found: list[tuple[str, object]] = []

    def walk(command: object, path: str) -> None:
        found.append((path, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    return found


def test_help_shows_no_placeholder_for_flags_and_keeps_examples_on_one_line() -> None:
    """No `<bool>` beside a flag in any help, and every example (with its comment) fits
    an 80-column terminal, so none is wrapped mid-line."""
    for path, command in _commands():
        code, out, _ = invoke(*path.split(), "--help")
        assert code == 0, path
        assert "<bool>" not in out, path
        text = f"{getattr(command, 'help', '') or ''}\n{getattr(command, 'epilog', '') or ''}"
        _, _, examples = text.partition("**Examples**")
        for line in examples.splitlines():
            if line.startswith("    "):  # an example line (prose after them is wrapped)
                assert len(line.strip()) <= 76, f"{path}: {line.strip()!r}"


def test_call_help_speaks_of_no_table() -> None:
    """`call --json` prints the result as JSON; there is no table to replace."""
    code, out, _ = invoke("call", "--help")
    assert code == 0
    assert not re.search(r"\btable\b", out)
    assert "Exit codes" in out


DURATION_WORDS = ("timeout", "window", "cooldown", "interval", "deadline", "wait", "-ms")


def test_every_duration_option_states_its_unit() -> None:
    """An option that takes a duration says in its help whether it is seconds or
    milliseconds."""
    checked = 0
    for path, command in _commands():
        for param in getattr(command, "params", []):
            names = " ".join(getattr(param, "opts", []))
            if not any(word in names for word in DURATION_WORDS):
                continue
            if getattr(param, "is_flag", False):
                continue
            help_text = (getattr(param, "help", "") or "").lower()
            assert "second" in help_text or "millisecond" in help_text, f"{path} {names}"
            checked += 1
    assert checked >= 3


@needs_shell
@pytest.mark.slow
def test_a_command_that_exits_non_zero_exits_3(tmp_path: Path) -> None:
    """`call bash` whose command exits non-zero exits 3 (its output printed), distinct
    from a failed call (1); a command that exits 0 exits 0."""
    failed = run(["call", "bash", '{"command": "echo out; exit 7"}', "-p", "shell"], tmp_path)
    assert failed.returncode == 3, failed.stderr
    assert "out" in failed.stdout
    assert "exit code 7" in failed.stdout
    ok = run(["call", "bash", '{"command": "true"}', "-p", "shell"], tmp_path)
    assert ok.returncode == 0
    as_json = run(["call", "bash", '{"command": "exit 4"}', "-p", "shell", "--json"], tmp_path)
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout)["output"]["exit_code"] == 4


# -- 8. the reference -----------------------------------------------------------------------


def test_the_reference_names_every_command_and_option() -> None:
    """docs/cli.md names every command, every option and every environment variable the
    commands read, so the reference cannot fall behind the code."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for path, command in _commands():
        if path:
            assert f"`{path.split()[-1]}" in text or f"{path}" in text, path
        for param in getattr(command, "params", []):
            for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
                if opt.startswith("--"):
                    assert f"`{opt}" in text, f"{path or 'toolweave'} {opt} is not in docs/cli.md"
            envvar = getattr(param, "envvar", None)
            if envvar:
                assert f"`{envvar}`" in text, envvar
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 130 |"):
        assert code in text
