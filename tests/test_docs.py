"""The code in README.md and docs/ runs, so the documentation cannot rot.

Every ```python block of a page runs in order in one namespace, in a scratch folder
holding a small README.md. Examples that talk to a model provider use the real SDKs
against a scripted provider on 127.0.0.1 (``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``):
its first reply asks for ``read_file`` on README.md, its second answers with what the
tool returned, so a host loop that drops or garbles the tool result fails here.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import importlib.util
import io
import json
import os
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGE_PAGES = [
    ROOT / "core" / "README.md",
    *sorted(p / "README.md" for p in (ROOT / "plugins-builtin").glob("toolweave-*")),
    *sorted(p / "README.md" for p in (ROOT / "plugins-contrib").glob("toolweave-*")),
]
"""The READMEs of the distributions (their long descriptions); the template's is left
out, its placeholder is no pack (the layout tests render it and run its tests)."""
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SCRATCH_README = "# Scratch project\n\nhello from the docs test\n"


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of a markdown page, in order."""
    return [m.group(1) for m in FENCE.finditer(page.read_text(encoding="utf-8"))]


class _Provider(BaseHTTPRequestHandler):
    """A scripted model provider speaking the OpenAI and Anthropic wire formats."""

    requests: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        if self.path.endswith("/chat/completions"):
            reply = self._openai(body)
        elif self.path.endswith("/responses"):
            reply = self._responses(body)
        elif self.path.endswith("/messages"):
            reply = self._anthropic(body)
        elif self.path.endswith(":generateContent"):
            reply = self._gemini(body)
        else:
            self.send_error(404)
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _openai(body: dict[str, Any]) -> dict[str, Any]:
        results = [m for m in body["messages"] if m.get("role") == "tool"]
        message: dict[str, Any]
        if results:
            message = {"role": "assistant", "content": f"The file says: {results[-1]['content']}"}
            finish = "stop"
        else:
            call = {"name": "read_file", "arguments": json.dumps({"path": "README.md"})}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
            }
            finish = "tool_calls"
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        }

    @staticmethod
    def _responses(body: dict[str, Any]) -> dict[str, Any]:
        outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
        if outputs:
            text = {"type": "output_text", "text": f"The file says: {outputs[-1]['output']}"}
            item: dict[str, Any] = {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{**text, "annotations": []}],
            }
        else:
            item = {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_r1",
                "name": "read_file",
                "arguments": json.dumps({"path": "README.md"}),
            }
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": body["model"],
            "status": "completed",
            "output": [item],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": body.get("tools", []),
        }

    @staticmethod
    def _gemini(body: dict[str, Any]) -> dict[str, Any]:
        responses = [
            part["functionResponse"]
            for content in body["contents"]
            for part in content.get("parts", [])
            if "functionResponse" in part
        ]
        if responses:
            parts: list[dict[str, Any]] = [
                {"text": f"The file says: {responses[-1]['response']['output']}"}
            ]
        else:
            call = {"id": "g1", "name": "read_file", "args": {"path": "README.md"}}
            parts = [{"functionCall": call}]
        content = {"role": "model", "parts": parts}
        return {"candidates": [{"content": content, "finishReason": "STOP", "index": 0}]}

    @staticmethod
    def _anthropic(body: dict[str, Any]) -> dict[str, Any]:
        results = [
            block
            for m in body["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for block in m["content"]
            if block.get("type") == "tool_result"
        ]
        content: list[dict[str, Any]]
        if results:
            content = [{"type": "text", "text": f"The file says: {results[-1]['content']}"}]
            stop = "end_turn"
        else:
            tool_use = {"type": "tool_use", "id": "toolu_1", "name": "read_file"}
            content = [{**tool_use, "input": {"path": "README.md"}}]
            stop = "tool_use"
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """A scripted provider on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text(SCRATCH_README)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{provider}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "docs-test")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", provider)
    monkeypatch.setenv("GEMINI_API_KEY", "docs-test")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    _Provider.requests.clear()
    return tmp_path


def _page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _module_of(page: Path) -> str:
    """The import package of the distribution whose README ``page`` is."""
    folder = page.parent
    return "toolweave" if folder == ROOT / "core" else folder.name.replace("-", "_")


@pytest.mark.parametrize("page", PAGES + PACKAGE_PAGES, ids=_page_id)
def test_page_code_runs(page: Path, scratch: Path) -> None:
    """Every python block of the page runs without error, in order."""
    blocks = python_blocks(page)
    if not blocks:
        pytest.skip(f"{page.name} has no python blocks")
    if page in PACKAGE_PAGES and importlib.util.find_spec(_module_of(page)) is None:
        missing = f"{page.parent.name} is not installed"
        if os.environ.get("CI"):
            pytest.fail(f"{missing}: nox installs every member of the workspace")
        pytest.skip(missing)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        for number, code in enumerate(blocks, 1):
            exec(compile(code, f"{page.name} (block {number})", "exec"), namespace)


def test_readme_host_loops_send_tool_results_back(scratch: Path) -> None:
    """The README's OpenAI and Anthropic loops return the tool's text to the model."""
    output = io.StringIO()
    namespace: dict[str, Any] = {"__name__": "readme"}
    with contextlib.redirect_stdout(output):
        for number, code in enumerate(python_blocks(ROOT / "README.md"), 1):
            exec(compile(code, f"README.md (block {number})", "exec"), namespace)
    printed = output.getvalue()
    assert printed.count("The file says:") == 2
    assert "hello from the docs test" in printed
    paths = [r["path"] for r in _Provider.requests]
    assert paths.count("/v1/chat/completions") == 2
    assert paths.count("/v1/messages") == 2
    second_openai = [r for r in _Provider.requests if r["path"].endswith("completions")][1]
    assert second_openai["body"]["messages"][-1]["tool_call_id"] == "call_1"
    assert second_openai["body"]["tools"][0]["type"] == "function"


def test_provider_loops_send_tool_results_back(scratch: Path) -> None:
    """The Responses API and Gemini loops of docs/providers.md return the tool's text."""
    output = io.StringIO()
    namespace: dict[str, Any] = {"__name__": "providers"}
    with contextlib.redirect_stdout(output):
        for number, code in enumerate(python_blocks(ROOT / "docs" / "providers.md"), 1):
            exec(compile(code, f"providers.md (block {number})", "exec"), namespace)
    printed = output.getvalue()
    assert printed.count("The file says:") == 2
    assert "hello from the docs test" in printed
    paths = [r["path"] for r in _Provider.requests]
    assert paths.count("/v1/responses") == 2
    assert sum(p.endswith(":generateContent") for p in paths) == 2


def test_every_config_field_is_documented() -> None:
    """docs/configuring-a-session.md names every field of both configuration models."""
    from toolweave.catalog import ToolConfig, ToolSetConfig

    text = (ROOT / "docs" / "configuring-a-session.md").read_text(encoding="utf-8")
    for model in (ToolSetConfig, ToolConfig):
        for field in model.model_fields:
            assert f"`{field}`" in text, f"{model.__name__}.{field} is not documented"


def test_every_mcp_server_field_is_documented() -> None:
    """docs/mcp.md names every field of an MCP server's configuration, with its topics."""
    pytest.importorskip("mcp", reason="the mcp SDK (toolweave[mcp]) is not installed")
    from toolweave.mcp import ServerConfig

    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    for field in ServerConfig.model_fields:
        assert f"| `{field}` |" in text, f"ServerConfig.{field} is not in the field table"
    for topic in ("mcp_servers", "mcpServers", "Protocol eras", "Heartbeats", "Hot reload"):
        assert topic in text


def fenced(page: Path, *languages: str) -> list[str]:
    """The fenced blocks of ``page`` written in one of ``languages``, in order."""
    pattern = re.compile(rf"^```(?:{'|'.join(languages)})\n(.*?)^```", re.MULTILINE | re.DOTALL)
    return [m.group(1) for m in pattern.finditer(page.read_text(encoding="utf-8"))]


def _data_blocks() -> list[tuple[str, str, str]]:
    return [
        (f"{page.name}:{language}:{number}", language, block)
        for page in PAGES
        for language in ("json", "toml")
        for number, block in enumerate(fenced(page, language), 1)
    ]


DATA_BLOCKS = _data_blocks()


@pytest.mark.parametrize(
    ("language", "block"), [b[1:] for b in DATA_BLOCKS], ids=[b[0] for b in DATA_BLOCKS]
)
def test_json_and_toml_blocks_parse(language: str, block: str) -> None:
    """Every json and toml block of the docs parses; MCP server files validate too."""
    import tomllib

    data = json.loads(block) if language == "json" else tomllib.loads(block)
    if "mcp_servers" in data or "mcpServers" in data:
        pytest.importorskip("mcp", reason="the mcp SDK (toolweave[mcp]) is not installed")
        from toolweave.mcp import parse_servers

        assert parse_servers(data)


def _command_lines() -> list[tuple[str, list[str]]]:
    """Each ``toolweave ...`` command of the docs' sh blocks, as its arguments."""
    import shlex

    found: list[tuple[str, list[str]]] = []
    for page in PAGES:
        for block in fenced(page, "sh", "bash", "console", "shell"):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                for start, word in enumerate(words):
                    if word != "toolweave":
                        continue
                    rest = words[start + 1 :]
                    ends = [i for i, w in enumerate(rest) if w in {"&&", "||", "|", ";"}]
                    args = rest[: ends[0] if ends else None]
                    found.append((f"{page.name}: toolweave {' '.join(args)}", args))
    return found


COMMAND_LINES = _command_lines()


@pytest.mark.parametrize("args", [c[1] for c in COMMAND_LINES], ids=[c[0] for c in COMMAND_LINES])
def test_command_lines_parse(args: list[str]) -> None:
    """Every `toolweave ...` line in the docs names a real command with valid options
    (parsed by the CLI, never run)."""
    pytest.importorskip("typer", reason="the CLI extra (toolweave[cli]) is not installed")
    import typer
    from toolweave.cli import app

    root = typer.main.get_command(app)
    assert args, "a bare `toolweave` line"
    name, rest = args[0], args[1:]
    ctx = root.make_context("toolweave", [name])
    command = root.get_command(ctx, name)  # type: ignore[attr-defined]
    assert command is not None, f"no command {name!r}"
    command.make_context(name, rest, parent=ctx)


def test_docs_have_command_lines_and_data_blocks() -> None:
    """The two tests above have something to check (the block finders are not blind)."""
    assert len(COMMAND_LINES) >= 5
    assert any("mcp_servers" in block for _, language, block in DATA_BLOCKS if language == "toml")


def test_every_error_kind_is_documented() -> None:
    """docs/errors.md explains every error kind and every exception class."""
    import toolweave.errors as errors
    from toolweave import ErrorKind

    text = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    for kind in ErrorKind:
        assert f"`{kind.value}`" in text, f"error kind {kind.value} is not documented"
    for name in errors.__all__:
        if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), Exception):
            assert f"`{name}`" in text, f"{name} is not documented"


def test_every_format_is_documented() -> None:
    """docs/providers.md names every definition format."""
    from toolweave.formats import FORMATS

    text = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    for name in FORMATS:
        assert f"`{name}`" in text, f"format {name} is not documented"


DOCTEST_MODULES = [
    "toolweave.formats._calls",
    "toolweave.formats._strict",
    "toolweave.formats.gemini",
    "toolweave.testing._scripted",
]


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_docstring_examples(name: str) -> None:
    """The examples in the docstrings of the formats and testing modules hold."""
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
