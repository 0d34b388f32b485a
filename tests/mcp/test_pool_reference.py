"""The pool against the reference servers from PyPI, over stdio."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from toolweave import Session
from toolweave.mcp import MCPPool, ServerConfig, ServerState

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


async def test_time_server_in_both_eras(host_session: Callable[..., Session]) -> None:
    """mcp-server-time's tools appear prefixed, with its schemas, and answer with the time."""
    session = host_session()
    time_args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    servers = {
        "time": ServerConfig(command=sys.executable, args=time_args),
        "clock": ServerConfig(command=sys.executable, args=time_args, mode="legacy"),
    }
    async with MCPPool(session, servers) as pool:
        status = pool.servers
        assert status["time"].state is ServerState.ONLINE
        assert status["time"].protocol_version == "2026-07-28"
        assert status["clock"].protocol_version == "2025-11-25"
        assert status["time"].tools == ("mcp__time__convert_time", "mcp__time__get_current_time")
        assert status["clock"].tools == ("mcp__clock__convert_time", "mcp__clock__get_current_time")

        listed = {d["name"]: d for d in session.definitions("neutral")}
        schema = listed["mcp__time__get_current_time"]["input_schema"]
        assert schema["required"] == ["timezone"]
        assert schema["properties"]["timezone"]["type"] == "string"
        convert = listed["mcp__time__convert_time"]["input_schema"]
        assert sorted(convert["required"]) == ["source_timezone", "target_timezone", "time"]
        assert "IANA" in schema["properties"]["timezone"]["description"]
        assert session.external["mcp__time__get_current_time"].tool.source == "mcp:time"

        for name in ("mcp__time__get_current_time", "mcp__clock__get_current_time"):
            before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
            result = await session.call(name, {"timezone": "UTC"})
            assert result.ok, result.text
            assert result.output["timezone"] == "UTC"
            stamp = dt.datetime.fromisoformat(result.output["datetime"])
            assert before <= stamp <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)
            assert '"timezone": "UTC"' in result.text

        converted = await session.call(
            "mcp__time__convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        assert converted.ok, converted.text
        assert converted.output["target"]["datetime"].endswith("T21:00:00+09:00")

        bad = await session.call("mcp__time__get_current_time", {"timezone": "Not/AZone"})
        assert bad.error is not None
        assert bad.error.kind == "execution_error"
        assert "Invalid timezone" in bad.text
    assert session.external == {}


async def test_git_server_on_a_temporary_repository(
    tmp_path: Path, host_session: Callable[..., Session]
) -> None:
    """mcp-server-git's tools appear prefixed and report the real state of a repository."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "-m", "first commit")
    (repo / "a.txt").write_text("two\n")
    (repo / "untracked.txt").write_text("new\n")

    session = host_session()
    config = ServerConfig(
        command=sys.executable, args=["-m", "mcp_server_git", "--repository", str(repo)]
    )
    async with MCPPool(session, {"git": config}) as pool:
        tools = pool.servers["git"].tools
        assert {"mcp__git__git_status", "mcp__git__git_log", "mcp__git__git_diff_unstaged"} <= set(
            tools
        )
        assert all(name.startswith("mcp__git__git_") for name in tools)
        schema = session.external["mcp__git__git_status"].input_schema
        assert schema["required"] == ["repo_path"]

        status = await session.call("mcp__git__git_status", {"repo_path": str(repo)})
        assert status.ok, status.text
        assert "On branch main" in status.text
        assert "modified:   a.txt" in status.text
        assert "untracked.txt" in status.text

        log = await session.call("mcp__git__git_log", {"repo_path": str(repo)})
        assert log.ok, log.text
        assert "first commit" in log.text

        outside = await session.call("mcp__git__git_status", {"repo_path": "/"})
        assert outside.error is not None
        assert outside.error.kind == "execution_error"
        assert "outside the allowed repository" in outside.text
