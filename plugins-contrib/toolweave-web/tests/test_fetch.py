"""``web_fetch`` against a real HTTP server on 127.0.0.1 (loopback allowed by params)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolweave import CallResult, ErrorKind, PackManager, Session
from toolweave_web import pack

pytestmark = pytest.mark.anyio


def session_for(workspace: Path, **params: Any) -> Session:
    """A session with ``web_fetch``, loopback allowed unless ``params`` say otherwise."""
    packs = PackManager(strict=True)
    packs.add("web", pack)
    config = {"tools": [{"id": "web_fetch", "params": {"allow_loopback": True, **params}}]}
    return packs.builder().build(config).session(workspace=workspace, debug=True)


async def fetch(workspace: Path, args: dict[str, Any], **params: Any) -> CallResult:
    return await session_for(workspace, **params).call("web_fetch", args)


async def ok(workspace: Path, args: dict[str, Any], **params: Any) -> dict[str, Any]:
    result = await fetch(workspace, args, **params)
    assert result.error is None, result.text
    assert isinstance(result.output, dict)
    return result.output


async def test_html_becomes_markdown(workspace: Path, server: Any) -> None:
    """Headings, lists, tables and links come through as Markdown; scripts, styles and
    inline data images do not; relative links become absolute; the title is kept."""
    result = await fetch(workspace, {"url": server.url("/page.html")})
    assert result.error is None, result.text
    page = result.output
    assert page["title"] == "Parser guide"
    assert page["status"] == 200
    assert page["content_type"] == "text/html"
    content = page["content"]
    assert "# Parsing JSON" in content
    assert "## Options" in content
    assert "- strict mode" in content
    assert "| indent | None |" in content
    assert f"[the reference]({server.base}/ref/json.html)" in content
    assert f"![logo]({server.base}/logo.png)" in content
    assert "data:image" not in content
    assert "script text" not in content
    assert "color: red" not in content
    assert "Docs menu" in content  # the whole body without a cut
    assert result.text.startswith(f"URL: {server.url('/page.html')}\nTitle: Parser guide\n")


async def test_selector_and_main_content_cut_the_page(workspace: Path, server: Any) -> None:
    """A CSS selector keeps only its matches; main_content drops navigation, sidebars,
    cookie banners and footers."""
    table = await ok(workspace, {"url": server.url("/page.html"), "selector": "#docs table"})
    assert table["content"].startswith("| name | default |")
    assert "Parsing JSON" not in table["content"]
    heads = await ok(workspace, {"url": server.url("/page.html"), "selector": "h1, h2"})
    assert heads["content"] == "# Parsing JSON\n\n## Options"
    main = await ok(workspace, {"url": server.url("/page.html"), "main_content": True})
    assert "# Parsing JSON" in main["content"]
    for boilerplate in ("Docs menu", "Home", "sidebar", "cookies", "Copyright"):
        assert boilerplate not in main["content"]


async def test_bad_and_unmatched_selectors(workspace: Path, server: Any) -> None:
    """A selector that does not parse is invalid_params; one that matches nothing is
    not_found; either on a page that is not HTML is invalid_params."""
    bad = await fetch(workspace, {"url": server.url("/page.html"), "selector": "div[ "})
    assert bad.error is not None
    assert bad.error.kind is ErrorKind.INVALID_PARAMS
    none = await fetch(workspace, {"url": server.url("/page.html"), "selector": ".missing"})
    assert none.error is not None
    assert none.error.kind is ErrorKind.NOT_FOUND
    text = await fetch(workspace, {"url": server.url("/plain.txt"), "main_content": True})
    assert text.error is not None
    assert text.error.kind is ErrorKind.INVALID_PARAMS


async def test_text_types_come_back_as_they_are(workspace: Path, server: Any) -> None:
    """Plain text and JSON are returned verbatim; a declared charset is honoured."""
    plain = await ok(workspace, {"url": server.url("/plain.txt")})
    assert plain["content"] == "plain text: café\n"
    data = await ok(workspace, {"url": server.url("/data.json")})
    assert data["content"] == '{"name": "toolweave", "ok": true}'
    latin = await ok(workspace, {"url": server.url("/latin1.html")})
    assert latin["content"] == "Café crème"


async def test_binary_types_are_refused(workspace: Path, server: Any) -> None:
    """An image, and an untyped body with NUL bytes, fail with a message naming why."""
    image = await fetch(workspace, {"url": server.url("/image.png")})
    assert image.error is not None
    assert image.error.kind is ErrorKind.EXECUTION_ERROR
    assert "image/png" in image.text
    assert "binary" in image.text
    untyped = await fetch(workspace, {"url": server.url("/untyped")})
    assert untyped.error is not None
    assert "looks binary" in untyped.text


async def test_size_and_window_limits(workspace: Path, server: Any) -> None:
    """The body is cut at max_bytes; the text at max_length, and start_index reads on."""
    cut = await fetch(workspace, {"url": server.url("/big.txt")}, max_bytes=1_000)
    assert cut.error is None, cut.text
    assert cut.output["body_truncated"] is True
    assert cut.output["total_chars"] == 1_000
    assert "larger than the size limit" in cut.text
    first = await fetch(workspace, {"url": server.url("/big.txt"), "max_length": 150})
    assert first.output["content"] == ("0123456789" * 15)
    assert "start_index=150" in first.text
    assert first.output["total_chars"] == 200_000
    second = await ok(
        workspace, {"url": server.url("/big.txt"), "start_index": 195, "max_length": 100}
    )
    assert second["content"] == "56789" + "0123456789" * 9 + "01234"
    ceiling = await ok(
        workspace, {"url": server.url("/big.txt"), "max_length": 5_000}, max_chars=300
    )
    assert len(ceiling["content"]) == 300


async def test_slow_pages_time_out(workspace: Path, server: Any) -> None:
    """A page slower than the timeout param fails as timeout."""
    result = await fetch(workspace, {"url": server.url("/slow")}, timeout=0.3)
    assert result.error is not None
    assert result.error.kind is ErrorKind.TIMEOUT


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (404, ErrorKind.NOT_FOUND),
        (403, ErrorKind.PERMISSION_DENIED),
        (401, ErrorKind.UNAUTHORIZED),
        (429, ErrorKind.RATE_LIMITED),
        (503, ErrorKind.UNAVAILABLE),
        (418, ErrorKind.EXECUTION_ERROR),
    ],
)
async def test_http_errors_have_kinds(
    workspace: Path, server: Any, status: int, kind: ErrorKind
) -> None:
    """An error status fails with the matching kind and quotes the body's start."""
    result = await fetch(workspace, {"url": server.url(f"/status/{status}")})
    assert result.error is not None
    assert result.error.kind is kind
    assert f"HTTP {status}" in result.text
    assert f"status page {status}" in result.text


async def test_redirects_are_followed_and_capped(workspace: Path, server: Any) -> None:
    """A redirect is followed and reported; a chain longer than max_redirects fails."""
    moved = await ok(workspace, {"url": server.url("/redirect?to=/plain.txt")})
    assert moved["url"] == server.url("/plain.txt")
    assert moved["redirects"] == [server.url("/redirect?to=/plain.txt")]
    loop = await fetch(workspace, {"url": server.url("/loop/0")}, max_redirects=3)
    assert loop.error is not None
    assert loop.error.kind is ErrorKind.EXECUTION_ERROR
    assert "redirected more than 3 times" in loop.text


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "not a url", "http:///nohost"]
)
async def test_only_http_urls(workspace: Path, url: str) -> None:
    """Other schemes and malformed URLs are invalid_params, and nothing is fetched."""
    result = await fetch(workspace, {"url": url})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text


async def test_connection_refused_is_unavailable(workspace: Path, server: Any) -> None:
    """A port nobody listens on fails as unavailable."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = await fetch(workspace, {"url": f"http://127.0.0.1:{port}/"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE
