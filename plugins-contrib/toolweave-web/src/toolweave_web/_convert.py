"""From a fetched body to what the model reads: HTML as Markdown, text as it is.

BeautifulSoup parses (with the standard library's ``html.parser``), soupsieve behind
``soup.select`` applies the CSS selector, and markdownify converts the chosen elements
straight from that tree: one parse, whichever way the page is cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from toolweave import ErrorKind, ToolError, preview

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

__all__ = ["Converted", "html_to_markdown", "refused_type", "text_kind"]

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
        markdown: The content as Markdown.
    """

    title: str | None
    markdown: str


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


def _main_content(soup: BeautifulSoup) -> Tag:
    """The element holding the page's main content: ``<main>``, ``role=main`` or the
    largest ``<article>``, else the body without navigation, headers, footers, sidebars,
    forms and elements named like them."""
    from bs4 import Tag

    for tag in soup.find_all(_is_boilerplate):
        if isinstance(tag, Tag) and not tag.decomposed:
            tag.decompose()
    candidates = [t for t in soup.select("main, [role=main], article") if isinstance(t, Tag)]
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


def html_to_markdown(
    html: bytes | str,
    *,
    base_url: str,
    selector: str | None = None,
    main_content: bool = False,
) -> Converted:
    """The page as Markdown, cut to ``selector``'s matches or to its main content.

    Raises:
        ToolError: ``invalid_params`` for a selector that does not parse, ``not_found``
            when it matches nothing.
    """
    from bs4 import BeautifulSoup, Tag
    from markdownify import ATX, MarkdownConverter
    from soupsieve import SelectorSyntaxError

    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.title
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    for tag in soup(_NEVER_CONTENT):
        if isinstance(tag, Tag) and not tag.decomposed:
            tag.decompose()
    parts: list[Tag]
    if selector:
        try:
            parts = [t for t in soup.select(selector) if isinstance(t, Tag)]
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
    converter = MarkdownConverter(heading_style=ATX, bullets="-", escape_underscores=False)
    texts: list[str] = []
    for part in parts:
        _absolute_links(part, base_url)
        texts.append(converter.convert_soup(part).strip())
    markdown = _BLANK_RUNS.sub("\n\n", "\n\n".join(t for t in texts if t)).strip()
    return Converted(title=title or None, markdown=markdown)


def decode_text(body: bytes, charset: str | None) -> str:
    """A text body as a string (its declared charset, else UTF-8; bad bytes replaced)."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")
