"""``web_fetch`` against a real HTTP server on 127.0.0.1 (loopback allowed by params)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from toolweave import CallResult, ErrorKind, PackManager, Session
from toolweave_web import pack
from toolweave_web._convert import cut_html

pytestmark = pytest.mark.anyio


def session_for(workspace: Path, timeout: float | None = None, **params: Any) -> Session:
    """A session with ``web_fetch`` (its calls' deadline ``timeout``, when given),
    loopback allowed unless ``params`` say otherwise."""
    packs = PackManager(strict=True)
    packs.add("web", pack)
    tool: dict[str, Any] = {"id": "web_fetch", "params": {"allow_loopback": True, **params}}
    if timeout is not None:
        tool["timeout"] = timeout
    return packs.builder().build({"tools": [tool]}).session(workspace=workspace, debug=True)


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


class HeldConversion:
    """markdownify's ``convert_soup`` held at its start until :meth:`release`, to see
    what the event loop does meanwhile; it records whether the release came while it
    was held and how the conversion then ended."""

    def __init__(self, original: Callable[..., str]) -> None:
        self.original = original
        self.entered = threading.Event()
        self.released = threading.Event()
        self.done = threading.Event()
        self.released_in_time: bool | None = None
        self.ended: str | None = None

    def convert_soup(self, converter: Any, *args: Any, **kwargs: Any) -> str:
        self.entered.set()
        # On the event loop nothing can release it: the wait gives up, False.
        self.released_in_time = self.released.wait(10)
        try:
            text = self.original(converter, *args, **kwargs)
        except BaseException as exc:
            self.ended = type(exc).__name__
            raise
        else:
            self.ended = "returned"
        finally:
            self.done.set()
        return text

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldConversion]:
    """Every Markdown conversion held until the test releases it (released at the end)."""
    from markdownify import MarkdownConverter

    hold = HeldConversion(MarkdownConverter.convert_soup)

    def convert_soup(converter: Any, *args: Any, **kwargs: Any) -> str:
        return hold.convert_soup(converter, *args, **kwargs)

    monkeypatch.setattr(MarkdownConverter, "convert_soup", convert_soup)
    try:
        yield hold
    finally:
        hold.release()


async def test_conversion_leaves_the_event_loop_free(
    workspace: Path, server: Any, held: HeldConversion
) -> None:
    """While a page is converted, other coroutines run: here the one that lets the
    held conversion go on, which it can only do while the conversion is under way."""
    results: list[CallResult] = []

    async def call() -> None:
        results.append(await fetch(workspace, {"url": server.url("/page.html")}))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call)
        assert await anyio.to_thread.run_sync(held.entered.wait, 30)
        held.release()  # runs only if the loop is not blocked by the conversion
    assert held.released_in_time is True
    assert results[0].error is None, results[0].text
    assert "# Parsing JSON" in results[0].output["content"]


async def test_the_deadline_fires_during_a_conversion_which_then_stops(
    workspace: Path, server: Any, held: HeldConversion
) -> None:
    """A conversion longer than the call's deadline ends the call as timeout at the
    deadline; the abandoned conversion stops at its next element instead of running on."""
    with anyio.fail_after(30):
        result = await session_for(workspace, timeout=0.5).call(
            "web_fetch", {"url": server.url("/page.html")}
        )
    assert result.error is not None, result.text
    assert result.error.kind is ErrorKind.TIMEOUT
    assert held.entered.is_set()
    held.release()
    assert await anyio.to_thread.run_sync(held.done.wait, 30)
    assert held.released_in_time is True
    assert held.ended == "Stopped"  # not "returned": it gave up at its first element


async def test_only_the_first_max_html_bytes_are_converted(workspace: Path, server: Any) -> None:
    """HTML longer than max_html_bytes is cut before a tag; the result says its end is
    missing. A page within the limit is converted whole."""
    cut = await fetch(workspace, {"url": server.url("/cut.html")}, max_html_bytes=2_000)
    assert cut.error is None, cut.text
    page = cut.output
    assert page["html_truncated"] is True
    assert page["body_truncated"] is False
    assert page["content"].startswith("START\n\nfiller text")
    assert page["content"].endswith("filler text")
    assert "END" not in page["content"]
    assert "<" not in page["content"]
    assert 1_000 < len(page["content"]) < 2_000
    assert "only its start was converted and its end is missing" in cut.text
    whole = await ok(workspace, {"url": server.url("/cut.html")})
    assert whole["html_truncated"] is False
    assert whole["content"].endswith("END")


def test_cut_html_keeps_tags_and_characters_whole() -> None:
    """The cut goes before the last tag within the limit; without a tag near the limit,
    back to the start of a UTF-8 character."""
    assert cut_html(b"<p>abc</p>", 100) == (b"<p>abc</p>", False)
    assert cut_html(b"<p>abc</p><p>def</p>", 15) == (b"<p>abc</p>", True)
    text = "é".encode() * 40_000  # two bytes each, no tag anywhere
    kept, was_cut = cut_html(text, 70_001)
    assert was_cut
    assert len(kept) == 70_000
    assert kept.decode() == "é" * 35_000


@pytest.mark.parametrize(
    "args",
    [{}, {"main_content": True}, {"selector": "div"}],
    ids=["whole", "main_content", "selector"],
)
async def test_deeply_nested_pages_come_back_as_plain_text(
    workspace: Path, server: Any, caplog: pytest.LogCaptureFixture, args: dict[str, Any]
) -> None:
    """5,000 nested elements (deeper than markdownify can recurse) are converted as
    plain text, and the result says so; no error, nothing logged with a traceback."""
    caplog.set_level(logging.DEBUG)
    result = await fetch(workspace, {"url": server.url("/deep.html?depth=5000"), **args})
    assert result.error is None, result.text
    assert result.output["plain_text"] is True
    assert result.output["content"] == "deep text a link"
    assert "converted as plain text" in result.text
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]


async def test_ordinarily_nested_pages_stay_markdown(workspace: Path, server: Any) -> None:
    """Nesting of a depth real pages have is converted to Markdown as usual."""
    page = await ok(workspace, {"url": server.url("/deep.html?depth=60")})
    assert page["plain_text"] is False
    assert page["content"] == f"deep text [a link]({server.base}/ref)"
