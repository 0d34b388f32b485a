"""Server configuration files: both forms, and clear errors naming server and field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from toolweave import ConfigError
from toolweave.mcp import ServerConfig, load_servers, parse_http_address, parse_servers


def test_full_form_reads_every_option() -> None:
    """The ``mcp_servers`` form takes transport, group, permission, reconnect and timing options."""
    servers = parse_servers(
        {
            "mcp_servers": {
                "time": {
                    "type": "stdio",
                    "command": "uvx",
                    "args": ["mcp-server-time"],
                    "env": {"TZ": "UTC"},
                    "group": "clock",
                    "permission": "read_only",
                    "auto_reconnect": False,
                    "heartbeat_interval": 0.5,
                    "timeout": 1500,
                },
                "docs": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
            }
        }
    )
    time = servers["time"]
    assert (time.type, time.command, time.args, time.env) == (
        "stdio",
        "uvx",
        ["mcp-server-time"],
        {"TZ": "UTC"},
    )
    assert (time.group, time.permission, time.auto_reconnect) == ("clock", "read_only", False)
    assert (time.heartbeat_interval, time.timeout, time.timeout_s) == (500, 1500, 1.5)
    docs = servers["docs"]
    assert (docs.type, docs.url, docs.headers) == ("http", "http://127.0.0.1:9/mcp", {"X-Key": "k"})
    assert docs.timeout == 3000
    assert docs.auto_reconnect is True


def test_common_form_reads_command_and_url_servers() -> None:
    """The ``mcpServers`` form (desktop clients) gives stdio and streamable-HTTP servers."""
    servers = parse_servers(
        {
            "mcpServers": {
                "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}},
                "web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}},
                "typed": {"type": "streamable-http", "url": "https://example.com/x"},
            }
        }
    )
    assert servers["git"].type == "stdio"
    assert servers["git"].env == {"A": "1"}
    assert servers["web"].type == "http"
    assert servers["web"].headers["Authorization"] == "Bearer t"
    assert servers["typed"].type == "http"


@pytest.mark.parametrize(
    ("entry", "path", "words"),
    [
        ({"command": "x", "colour": "red"}, "mcp_servers.s.colour", "unknown key"),
        ({"command": "x", "timeout": -5}, "mcp_servers.s.timeout", "greater than 0"),
        ({"command": "x", "timeout": "soon"}, "mcp_servers.s.timeout", "valid number"),
        ({"command": "x", "permission": "root"}, "mcp_servers.s.permission", "read_only"),
        ({"command": "x", "args": "a b"}, "mcp_servers.s.args", "valid list"),
        ({"type": "stdio"}, "mcp_servers.s.command", "needs `command`"),
        ({"type": "http"}, "mcp_servers.s.url", "needs `url`"),
        ({"url": "ftp://host/x"}, "mcp_servers.s.url", "http://"),
        ({"type": "sse", "url": "http://h/sse"}, "mcp_servers.s.type", "not supported"),
        ({"command": "x", "url": "http://h/mcp"}, "mcp_servers.s.url", "belong to http"),
        ({"command": "x", "headers": {"A": "b"}}, "mcp_servers.s.headers", "belong to http"),
        ({"type": "http", "url": "http://h/", "cwd": "/"}, "mcp_servers.s.cwd", "belong to stdio"),
        ({"type": "ws", "command": "x"}, "mcp_servers.s.type", "`stdio` or `http`"),
        ({"type": "memory"}, "mcp_servers.s.type", "only be created in code"),
    ],
)
def test_bad_values_name_server_and_field(entry: dict[str, object], path: str, words: str) -> None:
    """Each bad key or value is reported with the server id and the field's path."""
    with pytest.raises(ConfigError) as info:
        parse_servers({"mcp_servers": {"s": entry}})
    issues = info.value.issues
    assert len(issues) == 1
    assert issues[0].path == path
    assert issues[0].tool_id == "mcp:s"
    assert words in issues[0].message
    assert "memory" not in issues[0].message or "code" in issues[0].message
    assert "mcp:s" in str(info.value)


def test_common_form_rejects_full_form_keys() -> None:
    """``mcpServers`` entries take only connection keys; others are named, with a hint."""
    with pytest.raises(ConfigError) as info:
        parse_servers({"mcpServers": {"a": {"command": "x", "timeout": 5, "group": "g"}}})
    paths = sorted(i.path for i in info.value.issues)
    assert paths == ["mcpServers.a.group", "mcpServers.a.timeout"]
    assert all("mcp_servers" in i.message for i in info.value.issues)


def test_every_problem_is_reported_at_once() -> None:
    """Problems in several servers come back together, not one at a time."""
    with pytest.raises(ConfigError) as info:
        parse_servers(
            {
                "mcp_servers": {"a": {"command": "x", "retries": 99}, "b": {"type": "http"}},
                "mcpServers": {"c": {"command": "x", "nope": 1}},
            }
        )
    assert sorted(i.tool_id for i in info.value.issues) == ["mcp:a", "mcp:b", "mcp:c"]


def test_missing_root_and_bad_shapes_are_config_errors() -> None:
    """A file without a server table, or with non-mapping entries, fails with ConfigError."""
    with pytest.raises(ConfigError, match="neither `mcp_servers` nor `mcpServers`"):
        parse_servers({"servers": {}})
    with pytest.raises(ConfigError, match="must be a mapping"):
        parse_servers(["not", "a", "mapping"])
    with pytest.raises(ConfigError, match="settings must be a mapping"):
        parse_servers({"mcp_servers": {"a": "uvx thing"}})
    with pytest.raises(ConfigError, match="defined twice"):
        parse_servers(
            {"mcp_servers": {"a": {"command": "x"}}, "mcpServers": {"a": {"command": "y"}}}
        )


def test_files_in_json_and_toml(tmp_path: Path) -> None:
    """Server files are read as JSON or TOML; unreadable or malformed files are ConfigErrors."""
    json_file = tmp_path / "servers.json"
    json_file.write_text(json.dumps({"mcpServers": {"t": {"command": "uvx"}}}))
    toml_file = tmp_path / "servers.toml"
    toml_file.write_text('[mcp_servers.t]\ncommand = "uvx"\ntimeout = 250\n')
    assert load_servers(json_file)["t"].command == "uvx"
    assert load_servers(toml_file)["t"].timeout == 250
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid"):
        load_servers(broken)
    with pytest.raises(ConfigError, match="cannot read"):
        load_servers(tmp_path / "absent.json")


def test_in_process_servers_come_from_code_only() -> None:
    """A ``memory`` server needs a server object, which only code can give."""
    config = ServerConfig.in_process(object(), timeout=100)
    assert config.type == "memory"
    assert config.timeout == 100
    with pytest.raises(ValueError, match="in_process"):
        ServerConfig(type="memory")


def test_http_addresses() -> None:
    """``HOST:PORT`` forms of ``toolweave serve --http`` parse; others are usage errors."""
    from toolweave import UsageError

    assert parse_http_address("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert parse_http_address("[::1]:9") == ("::1", 9)
    assert parse_http_address(":0") == ("127.0.0.1", 0)
    assert parse_http_address("8080") == ("127.0.0.1", 8080)
    for bad in ("host:port", "h:70000", ""):
        with pytest.raises(UsageError, match="HOST:PORT"):
            parse_http_address(bad)


def test_import_without_the_extra_gives_an_install_hint() -> None:
    """Importing toolweave.mcp without the SDK fails with the pip command to fix it."""
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "try:\n    import toolweave.mcp\n"
        "except ModuleNotFoundError as exc:\n    print(exc.name, '|', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "mcp | toolweave.mcp needs the MCP SDK, an optional extra: pip install 'toolweave[mcp]'"
    )


def test_retry_settings_are_read_in_milliseconds_and_checked() -> None:
    """``retry_delay`` and ``retry_min_remaining`` come from the ``mcp_servers`` form in
    milliseconds; negative values are refused naming the server and the field."""
    servers = parse_servers(
        {
            "mcp_servers": {
                "t": {"command": "x", "retries": 1, "retry_delay": 20, "retry_min_remaining": 0}
            }
        }
    )
    assert (servers["t"].retries, servers["t"].retry_delay, servers["t"].retry_min_remaining) == (
        1,
        20,
        0,
    )
    assert ServerConfig(command="x").retry_delay == 50
    with pytest.raises(ConfigError) as info:
        parse_servers({"mcp_servers": {"t": {"command": "x", "retry_delay": -1}}})
    assert [i.path for i in info.value.issues] == ["mcp_servers.t.retry_delay"]


def test_config_errors_never_repeat_secrets() -> None:
    secret = "sk-live-SECRET-777"
    entries: dict[str, object] = {
        "env_on_http": {"url": "https://h/mcp", "env": {"TOKEN": secret}},
        "headers_on_stdio": {"command": "x", "headers": {"Authorization": f"Bearer {secret}"}},
        "env_not_text": {"command": "x", "env": {"TOKEN": 1, "OTHER": secret}},
        "headers_as_text": {"url": "https://h/mcp", "headers": f"Bearer {secret}"},
        "url_typo": {"type": "http", "url": f"htps://bot:{secret}@h/mcp"},
    }
    with pytest.raises(ConfigError) as info:
        parse_servers({"mcpServers": entries})
    assert len(info.value.issues) == len(entries)
    assert secret not in str(info.value)
    assert all(secret not in repr(issue.actual) for issue in info.value.issues)
    assert "htps://***@h/mcp" in str(info.value)


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("latin1.json", '{"mcpServers": {"caf\xe9": {"command": "x"}}}'.encode("latin-1"), "UTF-8"),
        ("deep.json", b'{"mcpServers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests"),
        ("deep.toml", b"a = " + b"[" * 100_000 + b"]" * 100_000, "nests"),
    ],
)
def test_unreadable_files_are_config_errors(
    tmp_path: Path, name: str, data: bytes, words: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=words):
        load_servers(path)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timeout", float("inf")),
        ("timeout", 3_600_001),
        ("connect_timeout", float("inf")),
        ("connect_timeout", 600_001),
        ("poll_interval", float("inf")),
        ("poll_interval", 86_400_001),
        ("retry_min_remaining", float("inf")),
    ],
)
def test_durations_are_finite_and_bounded(field: str, value: float) -> None:
    with pytest.raises(ConfigError) as info:
        parse_servers({"mcpServers": {}, "mcp_servers": {"a": {"command": "x", field: value}}})
    assert info.value.issues[0].path == f"mcp_servers.a.{field}"


def test_an_infinite_timeout_in_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text('{"mcp_servers": {"a": {"command": "x", "timeout": 1e309}}}')
    with pytest.raises(ConfigError, match="finite"):
        load_servers(path)
    limits = {"timeout": 3_600_000, "connect_timeout": 600_000, "poll_interval": 86_400_000}
    config = ServerConfig(command="x", **limits)
    assert (config.timeout, config.connect_timeout) == (3_600_000, 600_000)
    for heartbeat in (float("inf"), 3_600_001):  # in code, milliseconds
        with pytest.raises(ValidationError):
            ServerConfig(command="x", heartbeat_interval=heartbeat)
