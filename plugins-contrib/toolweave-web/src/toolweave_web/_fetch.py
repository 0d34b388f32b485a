"""The ``web_fetch`` tool: a web page as Markdown, guarded and bounded."""

from __future__ import annotations

import threading

from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_web._convert import (
    Converted,
    cut_html,
    decode_text,
    html_to_markdown,
    refused_type,
    text_kind,
)
from toolweave_web._guard import AddressPolicy, Resolver
from toolweave_web._http import FetchRules, HttpLimits, fetch

__all__ = ["WebFetch", "WebFetchArgs", "WebFetchParams", "WebPage"]


def _is_html(media: str, body: bytes) -> bool:
    """Whether the body is HTML: declared so, or undeclared and starting like HTML."""
    if media:
        return text_kind(media) == "html"
    return body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html"))


class WebFetchArgs(BaseModel):
    """Arguments of ``web_fetch``."""

    url: str = Field(
        min_length=1,
        max_length=4_000,
        description="The http(s) URL to fetch, e.g. `https://docs.python.org/3/library/json.html`.",
    )
    """The page."""

    selector: str | None = Field(
        default=None,
        max_length=500,
        description=(
            "CSS selector to keep only part of an HTML page (`article`, `#content`, "
            "`div.docs table`); every match is kept, in page order."
        ),
    )
    """Keep only what this selector matches."""

    main_content: bool = Field(
        default=False,
        description=(
            "Keep only the page's main content (its <main> or largest <article>, else the "
            "body without navigation, headers, footers, sidebars and forms)."
        ),
    )
    """Cut the page to its main content."""

    start_index: int = Field(
        default=0,
        ge=0,
        description="Character offset to start at, to read on where a previous call was cut.",
    )
    """Where to start in the converted text."""

    max_length: int | None = Field(
        default=None,
        ge=100,
        description="The most characters to return (default and ceiling set by the host).",
    )
    """The most characters returned."""


class WebFetchParams(BaseModel):
    """Configuration of ``web_fetch``."""

    allow_loopback: bool = False
    """Allow 127.0.0.0/8 and ::1 (services on the host's machine)."""

    allow_private: bool = False
    """Allow private networks (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)."""

    allow_link_local: bool = False
    """Allow 169.254.0.0/16 and fe80::/10 (where cloud metadata services answer)."""

    allowed_networks: list[str] = Field(default_factory=list)
    """Networks allowed whatever their kind, as CIDR (``["10.1.2.0/24"]``)."""

    max_redirects: int = Field(default=5, ge=0, le=20)
    """Redirects followed (each one checked like the first URL)."""

    max_bytes: int = Field(default=5_000_000, ge=1_000)
    """Body bytes read; a longer page is cut (and says so)."""

    timeout: float = Field(default=30.0, gt=0)
    """Seconds for the whole fetch, redirects and body included."""

    max_html_bytes: int = Field(default=1_000_000, ge=1_000)
    """HTML bytes converted; the rest of a longer page is left out (and the result says
    so). Converting takes seconds per megabyte and its parse cannot be interrupted, so
    this bounds the work of one call, also of one that timed out."""

    max_chars: int = Field(default=50_000, ge=100)
    """Characters returned by default and at most (``max_length`` may ask for fewer)."""

    user_agent: str = "toolweave-web/0.1 (+https://pypi.org/project/toolweave-web/)"
    """The ``User-Agent`` header sent."""

    ca_file: str | None = None
    """A PEM file of certificate authorities to trust besides the system's (a company CA)."""

    def policy(self) -> AddressPolicy:
        """The address policy these params describe."""
        return AddressPolicy.build(
            allow_loopback=self.allow_loopback,
            allow_private=self.allow_private,
            allow_link_local=self.allow_link_local,
            allowed_networks=self.allowed_networks,
        )

    def limits(self) -> HttpLimits:
        """The fetch limits these params describe."""
        return HttpLimits(
            max_redirects=self.max_redirects,
            max_bytes=self.max_bytes,
            timeout=self.timeout,
            user_agent=self.user_agent,
            ca_file=self.ca_file,
        )


class WebPage(ToolOutput):
    """What ``web_fetch`` returns."""

    url: str
    """The final URL, after redirects."""

    status: int
    """The HTTP status."""

    content_type: str
    """The media type the server declared (``text/html``)."""

    title: str | None = None
    """The page's title (HTML only)."""

    content: str
    """The text returned: Markdown for HTML, the body for other text types."""

    start_index: int = 0
    """Where ``content`` starts in the whole converted text."""

    total_chars: int
    """Characters of the whole converted text."""

    redirects: list[str] = Field(default_factory=list)
    """The URLs redirected from, in order."""

    body_truncated: bool = False
    """Whether the body was longer than the byte limit and was cut before converting."""

    html_truncated: bool = False
    """Whether the HTML was longer than the conversion limit (``max_html_bytes``) and
    only its start was converted."""

    plain_text: bool = False
    """Whether the page was nested too deeply for Markdown and was converted as plain
    text."""

    def to_model(self) -> str:
        """A short header (URL, title), the content, and how to read on when cut."""
        head = [f"URL: {self.url}"]
        if self.redirects:
            head.append(f"(redirected from {self.redirects[0]})")
        if self.title:
            head.append(f"Title: {self.title}")
        text = "\n".join(head) + "\n\n" + (self.content or "(the page has no text)")
        end = self.start_index + len(self.content)
        if end < self.total_chars:
            text += (
                f"\n\n[Cut at character {end} of {self.total_chars}. Call again with "
                f"start_index={end} to read on, or narrow with selector or main_content.]"
            )
        if self.plain_text:
            text += (
                "\n\n[The page's HTML is nested too deeply to convert to Markdown; it was "
                "converted as plain text, without links, headings, lists or tables.]"
            )
        if self.html_truncated:
            text += (
                "\n\n[The page's HTML was larger than the conversion limit; only its start "
                "was converted and its end is missing.]"
            )
        elif self.body_truncated:
            text += "\n\n[The page was larger than the size limit; its end was not read.]"
        return text


class WebFetch(Tool[WebFetchArgs, WebPage]):
    """Fetch a page over HTTP(S) and return it as Markdown."""

    id = "web_fetch"
    namespace = "web"
    kind = Kind.WEB_FETCH
    description = """\
Fetch a web page and read it as Markdown: HTML is converted (headings, lists, links, \
tables, code), plain text, JSON and XML come back as they are. Long pages are cut; \
the result says where, and `{param:start_index}` reads on. Narrow a page with a CSS \
`{param:selector}` (`article`, `#api-reference`) or `{param:main_content}: true` to \
drop navigation and boilerplate.

Use it to read documentation, an article or an API response whose URL you know. Do \
not use it to search the web (use the web search tool for that), for binary files \
(images, PDFs, archives are refused), or for pages behind a login. Addresses on \
private networks and this machine are refused unless the host allowed them."""
    capabilities = Capabilities(read_only=True, scope="network", timeout=120.0)
    params = WebFetchParams
    examples = ({"url": "http://127.0.0.1:9/"},)

    async def run(self, ctx: Context, args: WebFetchArgs) -> WebPage:
        """Fetch, refuse binary types, convert, cut to the requested window."""
        params = ctx.params(WebFetchParams)
        rules = FetchRules(
            policy=params.policy(),
            resolver=ctx.get(Resolver) or Resolver(),
            limits=params.limits(),
            accept_type=refused_type,
        )
        fetched = await fetch(args.url.strip(), rules)
        title: str | None = None
        html_cut = plain = False
        if _is_html(fetched.media_type, fetched.body):
            html, html_cut = cut_html(fetched.body, params.max_html_bytes)
            # On a worker thread, so the event loop runs on (other calls, this call's
            # deadline) while the page is parsed and converted. A stopped call returns
            # at once: the parse cannot be interrupted (max_html_bytes keeps it short),
            # the steps after it see the stop event and end at their next element.
            converted = await ctx.in_thread(
                _page, html, fetched.charset, fetched.url, args, ctx.stop_event
            )
            title, whole, plain = converted.title, converted.markdown, converted.plain_text
        elif args.selector or args.main_content:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"{fetched.url} is {fetched.media_type or 'not HTML'}; selector and "
                "main_content apply to HTML pages only. Fetch it without them.",
            )
        else:
            whole = decode_text(fetched.body, fetched.charset)
        limit = min(args.max_length or params.max_chars, params.max_chars)
        return WebPage(
            url=fetched.url,
            status=fetched.status,
            content_type=fetched.media_type,
            title=title,
            content=whole[args.start_index : args.start_index + limit],
            start_index=args.start_index,
            total_chars=len(whole),
            redirects=fetched.redirects,
            body_truncated=fetched.truncated,
            html_truncated=html_cut,
            plain_text=plain,
        )


def _page(
    html: bytes, charset: str | None, url: str, args: WebFetchArgs, stop: threading.Event
) -> Converted:
    """The page converted (on a worker thread; ends early once ``stop`` is set)."""
    # Without a declared charset, BeautifulSoup reads <meta charset> itself.
    return html_to_markdown(
        html if charset is None else decode_text(html, charset),
        base_url=url,
        selector=args.selector,
        main_content=args.main_content,
        stop=stop,
    )
