"""Durations of an MCP server file that are integers too large for a float (JSON and
TOML read ``1`` followed by 400 zeros as such an integer): a ``ConfigError`` naming the
field, at start and on a hot reload, never an ``OverflowError``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

from toolweave import ToolSetBuilder
from toolweave.errors import ConfigError
from toolweave.mcp import MCPPool, load_servers, parse_servers

HUGE = "1" + "0" * 400
FIELDS = [
    "heartbeat_interval",
    "poll_interval",
    "timeout",
    "connect_timeout",
    "retry_delay",
    "retry_min_remaining",
]


def _write(path: Path, field: str, value: str = HUGE) -> Path:
    if path.suffix == ".toml":
        path.write_text(f'[mcp_servers.s]\ncommand = "true"\n{field} = {value}\n')
    else:
        entry = f'{{"command": "true", {json.dumps(field)}: {value}}}'
        path.write_text(f'{{"mcp_servers": {{"s": {entry}}}}}')
    return path


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_huge_integer_duration_is_a_config_error(tmp_path: Path, field: str, suffix: str) -> None:
    """``load_servers`` refuses it with the field's path, and says it is too large
    without writing out its 401 digits. Before, ``heartbeat_interval`` raised
    ``OverflowError`` (its message formats the value as a float)."""
    path = _write(tmp_path / f"servers{suffix}", field)
    with pytest.raises(ConfigError) as info:
        load_servers(path)
    [issue] = info.value.issues
    assert issue.path == f"mcp_servers.s.{field}"
    assert f"`{field}` is too large (a number of 401 digits; at most " in issue.message
    assert HUGE not in str(info.value)


def test_huge_integers_elsewhere_are_shown_by_their_size() -> None:
    """An integer field given a huge number (``retries``) is refused by its bound, and
    the message gives the number's size, not its digits (past 4300 digits Python
    cannot even write it out)."""
    with pytest.raises(ConfigError) as info:
        parse_servers({"mcp_servers": {"s": {"command": "true", "retries": 10**5000}}})
    [issue] = info.value.issues
    assert issue.path == "mcp_servers.s.retries"
    assert issue.actual == "an integer of 5001 digits"


def test_the_pool_refuses_such_a_file_at_start(tmp_path: Path) -> None:
    path = _write(tmp_path / "servers.json", "heartbeat_interval")
    session = ToolSetBuilder().build().session()

    async def start() -> None:
        async with MCPPool(session, config_path=path):
            pass

    with pytest.raises(ConfigError, match="heartbeat_interval"):
        anyio.run(start)


@pytest.mark.anyio
async def test_a_hot_reload_of_such_a_file_sets_reload_error(tmp_path: Path) -> None:
    """The pool keeps running on the old configuration and ``reload_error`` holds the
    ``ConfigError``. Before, the ``OverflowError`` escaped the reload and
    ``reload_error`` stayed ``None``."""
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcp_servers": {"s": {"command": "true", "enabled": False}}}))
    session = ToolSetBuilder().build().session()
    async with MCPPool(session, config_path=path, reload_interval=0.05) as pool:
        _write(path, "heartbeat_interval")
        with anyio.fail_after(10):
            while pool.reload_error is None:  # noqa: ASYNC110 - polling a plain condition
                await anyio.sleep(0.05)
        assert isinstance(pool.reload_error, ConfigError)
        [issue] = pool.reload_error.issues
        assert issue.path == "mcp_servers.s.heartbeat_interval"
        assert pool.status("s").state.value == "disabled"
