"""From a fetched body to what the model reads: HTML as Markdown, text as it is.

BeautifulSoup parses (with the standard library's ``html.parser``), soupsieve behind
``soup.select`` applies the CSS selector, and markdownify converts the chosen elements
straight from that tree: one parse, whichever way the page is cut.

All of it is synchronous, pure-Python work (seconds per megabyte of HTML), so
``web_fetch`` runs it in a worker thread and first cuts the HTML to a bounded size
(:func:`cut_html`). markdownify recurses once per level of nesting: a page nested too
deeply for it is converted as plain text instead (:func:`plain_text`, no recursion).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from toolweave import ErrorKind, ToolError, preview

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

__all__ = [
    "Converted",
    "Stopped",
    "cut_html",
    "html_to_markdown",
    "plain_text",
    "refused_type",
    "text_kind",
]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-ndjson",
        "application/sql",
        "application/graphql",
    }
)
_NEVER_CONTENT = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "head",
    "link",
    "meta",
)
_BOILERPLATE_TAGS = ("nav", "header", "footer", "aside", "form", "dialog", "button")
_BOILERPLATE_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search", "dialog")
_BOILERPLATE_NAMES = re.compile(
    r"(^|[-_\s])(nav|navbar|menu|sidebar|footer|header|breadcrumbs?|cookie|consent|banner|"
    r"advert|ads?|promo|share|social|subscribe|newsletter|popup|modal|related|comments?)"
    r"($|[-_\s])",
    re.IGNORECASE,
)
_BLANK_RUNS = re.compile(r"\n{3,}")
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p",
        "pre", "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
    }
)  # fmt: skip
"""Elements that start and end a line in :func:`plain_text`."""

MAX_MARKDOWN_DEPTH = 200
"""The deepest nesting (elements inside elements) converted to Markdown. markdownify
spends about three stack frames per level (Python's default limit of 1,000 frames is
reached near 330 levels); deeper pages are converted as plain text. Real pages nest a
few dozen levels."""

_SEEK_TAG = 64 * 1024
"""How far back from the size limit :func:`cut_html` looks for the start of a tag."""


def text_kind(media: str) -> str | None:
    """``"html"``, ``"text"``, or ``None`` for a type that is not text."""
    if media in HTML_TYPES:
        return "html"
    if media.startswith("text/") or media in _TEXT_TYPES:
        return "text"
    if media.endswith(("+json", "+xml", "+yaml")):
        return "text"
    return None


def refused_type(media: str, head: bytes) -> str | None:
    """Why a body of type ``media`` is not read, or ``None`` when it is text.

    Without a declared type (``media == ""``) the first bytes decide: a NUL byte means
    binary.
    """
    if not media:
        return "the page has no content type and looks binary" if b"\0" in head else None
    if text_kind(media) is not None:
        return None
    return (
        f"the page is {media}, a binary or unsupported type; web_fetch reads HTML, plain "
        "text, JSON and XML only. Do not fetch images, PDFs, archives or media with it."
    )


@dataclass(frozen=True, slots=True)
class Converted:
    """A page as the model reads it.

    Attributes:
        title: The page's ``<title>``, if any.
        markdown: The content as Markdown (plain text when ``plain_text``).
        plain_text: Whether the page was nested too deeply for Markdown and was
            converted as plain text (no links, headings, lists or tables).
    """

    title: str | None
    markdown: str
    plain_text: bool = False


def cut_html(html: bytes, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of ``html``, and whether it was cut.

    The cut is made before the last ``<`` within the limit (a tag is never cut in two;
    ``<`` is never part of a multi-byte UTF-8 character), else at the limit moved back
    to the start of a UTF-8 character, so a decoder does not take the page's encoding
    for another one because of a broken last character.
    """
    if len(html) <= limit:
        return html, False
    end = html.rfind(b"<", max(0, limit - _SEEK_TAG), limit + 1)
    if end <= 0:
        end = limit
        while end > 0 and html[end] & 0xC0 == 0x80:  # a UTF-8 continuation byte
            end -= 1
    return html[:end], True


class Stopped(Exception):
    """The conversion was abandoned: its ``stop`` event was set (its call was cancelled
    or passed its deadline, and nobody waits for the result)."""


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Stopped


def _is_boilerplate(tag: Tag) -> bool:
    if tag.name in _BOILERPLATE_TAGS:
        return True
    role = tag.get("role")
    if isinstance(role, str) and role.lower() in _BOILERPLATE_ROLES:
        return True
    if str(tag.get("aria-hidden", "")).lower() == "true":
        return True
    names = " ".join([str(tag.get("id") or ""), *tag.get_attribute_list("class")])
    return tag.name not in ("main", "article", "body", "html") and bool(
        _BOILERPLATE_NAMES.search(names)
    )


def _outermost(found: Iterable[object]) -> list[Tag]:
    """The elements of ``found`` (in page order) that are not inside an earlier one:
    each element is visited once, so nested matches cost no more than the page."""
    from bs4 import Tag

    kept: list[Tag] = []
    inside: set[int] = set()
    for tag in found:
        if isinstance(tag, Tag) and id(tag) not in inside:
            kept.append(tag)
            inside.update(id(node) for node in tag.descendants)
    return kept


def _main_content(soup: BeautifulSoup) -> Tag:
    """The element holding the page's main content: ``<main>``, ``role=main`` or the
    largest ``<article>``, else the body without navigation, headers, footers, sidebars,
    forms and elements named like them."""
    from bs4 import Tag

    for tag in soup.find_all(_is_boilerplate):
        if isinstance(tag, Tag) and not tag.decomposed:
            tag.decompose()
    # The largest is always an outermost one: a nested candidate has less text.
    candidates = _outermost(soup.select("main, [role=main], article"))
    if candidates:
        return max(candidates, key=lambda t: len(t.get_text(" ", strip=True)))
    body = soup.body
    return body if body is not None else soup


def _absolute_links(root: Tag, base_url: str) -> None:
    """Links and images made absolute against the page's URL; inline data images dropped."""
    for link in root.select("a[href]"):
        href = link.get("href")
        if isinstance(href, str):
            link["href"] = urljoin(base_url, href.strip())
    for image in root.select("img"):
        src = image.get("src")
        if not isinstance(src, str) or src.startswith("data:"):
            image.decompose()
        else:
            image["src"] = urljoin(base_url, src.strip())


def _deeper_than(root: Tag, limit: int) -> bool:
    """Whether elements nest more than ``limit`` levels below ``root`` (walked with a
    list, not recursion)."""
    from bs4 import Tag

    pending: list[tuple[Tag, int]] = [(root, 0)]
    while pending:
        tag, depth = pending.pop()
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in tag.children if isinstance(child, Tag))
    return False


def _markdown_depth() -> int:
    """The deepest nesting markdownify is given under the current recursion limit."""
    return max(10, min(MAX_MARKDOWN_DEPTH, (sys.getrecursionlimit() - 250) // 3))


def plain_text(root: Tag, stop: threading.Event | None = None) -> str:
    """The text of ``root`` and its descendants, a line per block element, whitespace
    collapsed; walked with a list, not recursion, so any depth is fine."""
    # PreformattedString: comments, doctypes, CDATA, processing instructions
    from bs4.element import NavigableString, PageElement, PreformattedString, Tag

    out: list[str] = []
    pending: list[PageElement | None] = [root]  # None: the end of a block
    while pending:
        _check(stop)
        node = pending.pop()
        if node is None:
            out.append("\n")
        elif isinstance(node, Tag):
            if node.name in _BLOCKS:
                out.append("\n")
                pending.append(None)
            elif node.name in ("td", "th"):
                out.append(" ")
            pending.extend(reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            out.append(str(node))
    lines = (" ".join(line.split()) for line in "".join(out).split("\n"))
    return "\n".join(line for line in lines if line)


def html_to_markdown(
    html: bytes | str,
    *,
    base_url: str,
    selector: str | None = None,
    main_content: bool = False,
    stop: threading.Event | None = None,
) -> Converted:
    """The page as Markdown, cut to ``selector``'s matches or to its main content.

    Synchronous and CPU-bound: call it in a worker thread, on HTML of bounded size
    (:func:`cut_html`). BeautifulSoup's parse cannot be interrupted, so that size is
    what bounds it; the steps after it check ``stop`` and give up once it is set (the
    call was cancelled or timed out). A page nested more deeply than markdownify can
    recurse comes back as plain text (``Converted.plain_text``).

    Raises:
        ToolError: ``invalid_params`` for a selector that does not parse, ``not_found``
            when it matches nothing.
    """
    from bs4 import BeautifulSoup, Tag
    from soupsieve import SelectorSyntaxError

    from toolweave_web._markdown import StoppableConverter

    soup = BeautifulSoup(html, "html.parser")
    _check(stop)
    title_tag = soup.title
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    for tag in soup(_NEVER_CONTENT):
        if isinstance(tag, Tag) and not tag.decomposed:
            tag.decompose()
    _check(stop)
    parts: list[Tag]
    if selector:
        try:
            parts = _outermost(soup.select(selector))  # a match inside one is in it
        except SelectorSyntaxError as exc:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"the CSS selector {preview(selector)!r} does not parse: {exc}",
            ) from None
        if not parts:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"the CSS selector {preview(selector)!r} matches nothing on the page; "
                "fetch without a selector (or with main_content) to see its structure",
            )
    elif main_content:
        parts = [_main_content(soup)]
    else:
        parts = [soup.body if soup.body is not None else soup]
    _check(stop)
    for part in parts:
        _absolute_links(part, base_url)
    depth = _markdown_depth()
    texts: list[str] = []
    plain = any(_deeper_than(part, depth) for part in parts)
    if not plain:
        converter = StoppableConverter(stop)
        try:
            texts = [converter.convert_soup(part).strip() for part in parts]
        except RecursionError:  # deeper than measured (a converter that recurses more)
            plain = True
    if plain:
        texts = [plain_text(part, stop) for part in parts]
    markdown = _BLANK_RUNS.sub("\n\n", "\n\n".join(t for t in texts if t)).strip()
    return Converted(title=title or None, markdown=markdown, plain_text=plain)


def decode_text(body: bytes, charset: str | None) -> str:
    """A text body as a string (its declared charset, else UTF-8; bad bytes replaced)."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")
