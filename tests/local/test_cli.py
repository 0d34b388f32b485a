"""The CLI's plugin folders and MCP server file: ``./tools/plugins`` by default,
``--plugins DIR`` (repeatable), ``TOOLWEAVE_PLUGINS``, ``--no-plugins``; alerts on
standard error and in ``packs``; ``call`` and ``describe`` on plugin tools; ``--mcp FILE``
and the workspace's ``.mcp_servers.json`` / ``mcp.json``, ``--no-mcp``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from toolweave.cli import app
from toolweave.cli._sources import DEFAULT_PLUGINS, ENV_PLUGINS
from toolweave.local import DEFAULT_FOLDER
from toolweave.local import ENV_PLUGINS as LOCAL_ENV
from typer.testing import CliRunner

from .conftest import SEED, write

runner = CliRunner()

# The SDK's stdio client binds ``errlog=sys.stderr`` when it is first imported: import it
# now, not under CliRunner's stand-in stderr (which has no file descriptor), or later
# tests that spawn servers with the default errlog fail.
with contextlib.suppress(ImportError):
    import mcp.client.stdio  # noqa: F401

SERVERS = Path(__file__).resolve().parent.parent / "mcp" / "servers"
DEMO = [sys.executable, "-m", "toolweave.mcp", "--packs", "none", "--pack", "demo_pack:pack"]

HELLO = """
from toolweave import tool
from toolweave.local import register_tool

@register_tool(group="hello"{permission})
@tool(blocking=False)
def {name}(who: str) -> str:
    '''Say hello.

    Args:
        who: To whom.
    '''
    return "hello " + who
"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def names(*args: str) -> set[str]:
    code, out, err = invoke(
        "tools", "--format", "neutral", "--exclude", "fs,shell,search,plan", *args
    )
    assert code == 0, err
    return {d["name"] for d in json.loads(out)}


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace whose ./tools/plugins holds the seed's sample; no env, no MCP file."""
    shutil.copytree(SEED, tmp_path / "tools" / "plugins")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV_PLUGINS, raising=False)
    monkeypatch.delenv("TOOLWEAVE_CENTER", raising=False)
    return tmp_path


def test_the_cli_and_the_library_agree_on_the_defaults() -> None:
    """One default folder and one variable, whichever module names them."""
    assert DEFAULT_PLUGINS == DEFAULT_FOLDER
    assert ENV_PLUGINS == LOCAL_ENV


def hello(name: str, permission: str = "") -> str:
    """A plugin file of one tool, ``name``, for every role or only for ``permission``."""
    return HELLO.format(name=name, permission=f", permission={permission!r}" if permission else "")


def test_tools_picks_up_the_workspace_folder_by_default(workspace: Path) -> None:
    """./tools/plugins is loaded with no flag; --no-plugins leaves it out."""
    write(workspace / "tools" / "plugins" / "hello.py", hello("hello"))
    assert "hello" in names()
    assert "hello" not in names("--no-plugins")


def test_plugins_flags_and_env(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--plugins DIR (repeatable) replaces the default; TOOLWEAVE_PLUGINS names folders
    separated by os.pathsep; the flag wins over the variable."""
    write(workspace / "a" / "one.py", hello("hello_one"))
    write(workspace / "b" / "two.py", hello("hello_two"))
    admin = ("--center", str(workspace / "center.db"), "--role", "admin")
    assert names("--plugins", "a") >= {"hello_one"}
    assert "text_summary" not in names("--plugins", "a")
    assert names("--plugins", "a", "--plugins", "b") >= {"hello_one", "hello_two"}
    monkeypatch.setenv(ENV_PLUGINS, os.pathsep.join(["a", str(workspace / "b")]))
    found = names()
    assert {"hello_one", "hello_two"} <= found
    assert "text_summary" not in found
    assert names("--plugins", "tools/plugins", *admin) >= {"text_summary"}
    assert "hello_one" not in names("--no-plugins")


def test_bad_plugin_flags_are_one_line_errors(workspace: Path) -> None:
    """A missing folder, or --plugins with --no-plugins, exits 2 with one error line."""
    code, _, err = invoke("tools", "--plugins", "nowhere")
    assert code == 2
    assert err.startswith("error: ")
    code, _, err = invoke("tools", "--plugins", "tools/plugins", "--no-plugins")
    assert code == 2
    assert "exclude each other" in err


def test_a_broken_file_is_reported_and_the_others_load(workspace: Path) -> None:
    """tools warns on stderr with the file and line and lists the other files' tools;
    packs lists the file as failed with its line (JSON and table)."""
    broken = write(workspace / "tools" / "plugins" / "broken.py", "x = 1\ny = (\n")
    admin = ("--center", str(workspace / "center.db"), "--role", "admin")
    code, out, err = invoke("tools", "--exclude", "fs,shell,search,plan", *admin)
    assert code == 0, err
    assert "text_summary" in {d["name"] for d in json.loads(out)}
    assert f"{broken.resolve()}:2" in err.replace("\n", "")
    code, out, err = invoke("packs", "--json")
    assert code == 0, err
    files = {p["name"]: p for p in json.loads(out) if p.get("source", "").startswith("dir:")}
    assert files["plugins/broken.py"]["status"] == "failed"
    assert files["plugins/broken.py"]["alerts"][0]["line"] == 2
    assert files["plugins/text_summary.py"]["tools"] == ["text_summary"]
    code, out, _ = invoke("packs")
    assert "plugins/broken.py" in out
    assert "failed" in out
    code, _, _ = invoke("packs", "--strict")
    assert code == 1


def test_call_and_describe_a_plugin_tool(workspace: Path) -> None:
    """call runs the seed's tool under a center for one of its roles (a too-long text is
    refused before run); describe shows where a plugin tool comes from and its
    arguments."""
    admin = ("--center", str(workspace / "center.db"), "--role", "admin")
    code, out, err = invoke(
        "call", "text_summary", '{"text": "hello world", "max_length": 5}', "--json", *admin
    )
    assert code == 0, err
    assert json.loads(out)["output"] == {"ok": True, "summary": "hello"}
    code, _, err = invoke(
        "call",
        "text_summary",
        json.dumps({"text": "x" * 5001, "max_length": 5}),
        "--no-ask",
        *admin,
    )
    assert code == 1
    assert "invalid_params" in err
    write(workspace / "tools" / "plugins" / "hello.py", hello("hello"))
    code, out, err = invoke("describe", "hello", "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["origin"] == f"dir:{(workspace / 'tools' / 'plugins').resolve()}"
    assert {a["name"] for a in info["arguments"]} == {"who"}
    code, _, err = invoke("describe", "hello", "--no-plugins")
    assert code == 2  # an unknown tool is a usage error (docs/cli.md)
    assert "no tool named 'hello'" in err


def test_roles_need_a_center(workspace: Path) -> None:
    """Under --center a plugin tool's permission hides it from other roles; without a
    center nothing would check it, so it is listed for no one and a warning says why."""
    write(workspace / "tools" / "plugins" / "hello.py", hello("hello", "admin"))
    db = str(workspace / "center.db")
    assert "hello" not in names("--center", db, "--role", "dev")
    assert "hello" in names("--center", db, "--role", "admin")
    assert "hello" not in names()
    code, _, err = invoke("tools", "--exclude", "fs,shell,search,plan")
    assert code == 0
    assert "only a registry center enforces" in " ".join(err.split())
    code, _, err = invoke("call", "hello", '{"who": "x"}')
    assert code != 0


def _demo_entry() -> dict[str, Any]:
    return {"command": DEMO[0], "args": DEMO[1:], "env": {"PYTHONPATH": str(SERVERS)}}


@pytest.mark.slow
def test_mcp_server_files(workspace: Path) -> None:
    """--mcp FILE adds its servers' tools; without it the workspace's
    .mcp_servers.json is used, else mcp.json; --no-mcp turns discovery off."""
    (workspace / "servers.json").write_text(json.dumps({"mcpServers": {"demo": _demo_entry()}}))
    assert "mcp__demo__echo" in names("--mcp", "servers.json")
    assert "mcp__demo__echo" not in names()
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": {"other": _demo_entry()}}))
    assert "mcp__other__echo" in names()
    seed = {
        "mcp_servers": {
            "seeded": {
                "type": "stdio",
                "command": DEMO,
                "env": {"PYTHONPATH": str(SERVERS)},
                "group": "mcp_file",
                "auto_reconnect": True,
                "heartbeat_interval": 10,
            }
        }
    }
    (workspace / ".mcp_servers.json").write_text(json.dumps(seed))
    found = names()
    assert "mcp__seeded__echo" in found
    assert "mcp__other__echo" not in found
    assert not any(n.startswith("mcp__") for n in names("--no-mcp"))
    code, out, err = invoke("call", "mcp__seeded__echo", '{"text": "via file"}', "--no-ask")
    assert code == 0, err
    assert out.strip() == "via file"
    code, _, err = invoke("tools", "--mcp", "missing.json")
    assert code == 2
    assert "no MCP server file" in err
