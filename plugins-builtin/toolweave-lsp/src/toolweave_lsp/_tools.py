"""The language-server tools: diagnostics, go to definition, find references, hover
and document symbols of workspace files.

Positions are what a model reads in a file: lines and columns count from 1, columns
in characters. A position is a line and the symbol on it (``symbol="parse"``), or a
line and a column. The server's UTF-16 positions are converted both ways.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput
from toolweave.resources import Workspace

from toolweave_lsp._client import uri_path
from toolweave_lsp._files import line_texts
from toolweave_lsp._servers import LspParams, OpenFile, ask, servers_of

__all__ = [
    "Diagnostic",
    "Diagnostics",
    "DiagnosticsOutput",
    "DocumentSymbols",
    "FindReferences",
    "GoToDefinition",
    "Hover",
    "Location",
    "LocationsOutput",
    "PathArgs",
    "PositionArgs",
    "diagnostics_of",
]

MAX_LOCATIONS = 200
"""Locations listed at most (references of a common name can be thousands)."""

MAX_SYMBOL_DEPTH = 32
"""Nesting levels of a file's outline listed at most."""

_END = object()

SEVERITY: dict[int, Literal["error", "warning", "information", "hint"]] = {
    1: "error",
    2: "warning",
    3: "information",
    4: "hint",
}

SYMBOL_KINDS = [
    "file",
    "module",
    "namespace",
    "package",
    "class",
    "method",
    "property",
    "field",
    "constructor",
    "enum",
    "interface",
    "function",
    "variable",
    "constant",
    "string",
    "number",
    "boolean",
    "array",
    "object",
    "key",
    "null",
    "enum_member",
    "struct",
    "event",
    "operator",
    "type_parameter",
]


# -- arguments ------------------------------------------------------------------------------


class PathArgs(BaseModel):
    """A workspace file."""

    path: str = Field(
        min_length=1, description="The file, relative to the workspace root (e.g. 'src/app.py')."
    )
    """The file, relative to the workspace root (or absolute inside it)."""


class PositionArgs(PathArgs):
    """A place in a workspace file."""

    line: int = Field(ge=1, description="The line, counting from 1 as the file reader shows.")
    """The line, from 1."""
    symbol: str | None = Field(
        default=None,
        min_length=1,
        description="The name on that line to ask about (e.g. 'parse'); its first "
        "occurrence on the line is used. Give this or `column`.",
    )
    """The name on the line; its first whole-word occurrence is the position."""
    column: int | None = Field(
        default=None,
        ge=1,
        description="The column on that line, counting characters from 1, when `symbol` "
        "is not enough.",
    )
    """The column, in characters from 1 (used when ``symbol`` is not given)."""


def _position(ctx: Context, opened: OpenFile, args: PositionArgs) -> dict[str, int]:
    """The LSP position (0-based line, UTF-16 character) of ``args`` in ``opened``."""
    lines = opened.text.splitlines()
    if args.line > max(len(lines), 1):
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"{ctx.param_name('line')} {args.line} is past the end of `{opened.shown}` "
            f"({len(lines)} lines)",
        )
    text = lines[args.line - 1] if lines else ""
    if args.symbol is not None:
        found = re.search(rf"(?<![\w]){re.escape(args.symbol)}(?![\w])", text)
        if found is None:
            found = re.search(re.escape(args.symbol), text)
        if found is None:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{args.symbol}` is not on line {args.line} of `{opened.shown}`; the line "
                f"is: {text.strip()[:200]!r}",
            )
        index = found.start()
    elif args.column is not None:
        index = min(args.column - 1, len(text))
    else:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"give `{ctx.param_name('symbol')}` (the name on line {args.line} to ask about) "
            f"or `{ctx.param_name('column')}`",
        )
    return {"line": args.line - 1, "character": _utf16(text[:index])}


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _from_utf16(text: str, units: int) -> int:
    """The character index of the UTF-16 offset ``units`` in ``text``."""
    count = 0
    for index, char in enumerate(text):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(text)


# -- outputs --------------------------------------------------------------------------------


class Location(BaseModel):
    """A place the server pointed to."""

    path: str
    """Relative to the workspace root, or absolute for a file outside it."""
    line: int
    """From 1."""
    column: int
    """In characters, from 1."""
    text: str = ""
    """The line's text, stripped."""
    outside: bool = False
    """The file is outside the workspace (a library): it can be read only through the
    server."""

    def label(self) -> str:
        """``path:line:column`` and the line's text."""
        where = f"{self.path}:{self.line}:{self.column}"
        if self.outside:
            where += " (outside the workspace)"
        return f"{where}: {self.text}" if self.text else where


class LocationsOutput(ToolOutput):
    """Where a definition or the references of a symbol are."""

    locations: list[Location]
    """The places, in the server's order."""
    total: int
    """How many the server found (``locations`` stops at 200)."""
    what: str = ""
    """What was asked, for the model's text."""

    def to_model(self) -> str:
        """One location per line."""
        if not self.locations:
            return f"No {self.what} found."
        text = "\n".join(location.label() for location in self.locations)
        if self.total > len(self.locations):
            text += f"\n[{self.total - len(self.locations)} more not shown]"
        return text


async def _locations(ctx: Context, answer: Any, what: str) -> LocationsOutput:
    """The locations of a server's answer (the first :data:`MAX_LOCATIONS` with their
    line's text, the files read in a worker thread)."""
    items = answer if isinstance(answer, list) else [answer] if answer else []
    workspace = ctx.resources.require(Workspace)
    places: list[tuple[Path, int, int]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        uri = item.get("targetUri") or item.get("uri")
        span = item.get("targetSelectionRange") or item.get("range") or {}
        if not isinstance(uri, str) or not isinstance(span, dict):
            continue
        path = uri_path(uri)
        start = span.get("start") or {}
        if path is None or not isinstance(start, dict):
            continue
        places.append((path, _int(start.get("line")), _int(start.get("character"))))
    shown = places[:MAX_LOCATIONS]
    wanted = list(dict.fromkeys(path for path, _, _ in shown))
    texts = await anyio.to_thread.run_sync(
        lambda: {path: line_texts(path) for path in wanted}, abandon_on_cancel=True
    )
    found: list[Location] = []
    for path, line, units in shown:
        lines = texts[path]
        text = lines[line] if 0 <= line < len(lines) else ""
        inside = workspace.contains(path)
        found.append(
            Location(
                path=workspace.relative(path) if inside else str(path),
                line=line + 1,
                column=_from_utf16(text, units) + 1,
                text=text.strip()[:200],
                outside=not inside,
            )
        )
    return LocationsOutput(locations=found, total=len(places), what=what)


def _int(value: Any) -> int:
    """A position's number as the server sent it (0 when it is not one)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


class Diagnostic(BaseModel):
    """One problem the server reported."""

    line: int
    """From 1."""
    column: int
    """In characters, from 1."""
    severity: Literal["error", "warning", "information", "hint"]
    message: str
    source: str = ""
    """Which checker reported it (``pyflakes``)."""
    code: str = ""

    def label(self, path: str) -> str:
        """``path:line:column: severity: message [source code]``."""
        origin = " ".join(part for part in (self.source, self.code) if part)
        return f"{path}:{self.line}:{self.column}: {self.severity}: {self.message}" + (
            f" [{origin}]" if origin else ""
        )


class DiagnosticsOutput(ToolOutput):
    """The problems a server reports in a file."""

    path: str
    diagnostics: list[Diagnostic]
    complete: bool = True
    """``False`` when the server published nothing in time (the list may be stale)."""

    def to_model(self) -> str:
        """One problem per line, or a sentence when there is none."""
        note = "" if self.complete else " (the server sent none in time; ask again later)"
        if not self.diagnostics:
            return f"No problems reported in `{self.path}`{note}."
        lines = [d.label(self.path) for d in self.diagnostics]
        return "\n".join(lines) + (f"\n[{note.strip(' ()')}]" if note else "")


def _diagnostic(text_lines: list[str], raw: Any) -> Diagnostic | None:
    if not isinstance(raw, dict):
        return None
    start = _dict(_dict(raw.get("range")).get("start"))
    line = _int(start.get("line"))
    text = text_lines[line] if 0 <= line < len(text_lines) else ""
    severity = _int(raw.get("severity"))
    return Diagnostic(
        line=line + 1,
        column=_from_utf16(text, _int(start.get("character"))) + 1,
        severity=SEVERITY.get(severity, "error"),
        message=_text(raw.get("message")).strip(),
        source=_text(raw.get("source")),
        code=_text(raw.get("code")),
    )


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when the server sent an object there, else ``{}``."""
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    """A string or number the server sent, as text; ``""`` for anything else (a nested
    structure is never turned into text: that would walk it)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return ""


async def diagnostics_of(ctx: Context, params: LspParams, asked: str) -> DiagnosticsOutput:
    """The diagnostics of the workspace file ``asked``, fresh from its server: pulled
    where the server offers that, else waited for after telling it the file's text."""
    servers = servers_of(ctx)
    opened = await servers.open(ctx, params, asked)
    client = opened.client
    complete = True
    if client.capabilities.get("diagnosticProvider"):
        answer = await client.request(
            "textDocument/diagnostic", {"textDocument": {"uri": opened.uri}}
        )
        items = _dict(answer).get("items")
        raw = items if isinstance(items, list) else []
    else:
        before = opened.published_before
        if not opened.changed and client.published(opened.uri):
            before = client.published(opened.uri) - 1
        complete = await client.wait_diagnostics(opened.uri, before, params.diagnostics_wait_s)
        raw = client.diagnostics.get(opened.uri, [])
    lines = opened.text.splitlines()
    found = [d for d in (_diagnostic(lines, item) for item in raw) if d is not None]
    found.sort(key=lambda d: (d.line, d.column))
    return DiagnosticsOutput(path=opened.shown, diagnostics=found, complete=complete)


# -- tools ----------------------------------------------------------------------------------

_NOT_FOR = "Do not use it to read files or to search them as text."


class Diagnostics(Tool[PathArgs, DiagnosticsOutput]):
    """The problems a language server reports in a file."""

    id = "diagnostics"
    namespace = "lsp"
    kind = Kind.LSP
    params = LspParams
    description = (
        "The errors and warnings a language server reports in one workspace file "
        "(undefined names, syntax errors, unused imports, type errors where the server "
        "checks types), one per line as `path:line:column: severity: message`. Use it "
        "after changing code to check it still makes sense. " + _NOT_FOR
    )

    async def run(self, ctx: Context, args: PathArgs) -> DiagnosticsOutput:
        """Ask the file's server."""
        return await diagnostics_of(ctx, ctx.params(LspParams), args.path)


class GoToDefinition(Tool[PositionArgs, LocationsOutput]):
    """Where a symbol is defined."""

    id = "go_to_definition"
    namespace = "lsp"
    kind = Kind.LSP
    params = LspParams
    description = (
        "Where the symbol at a place in a workspace file is defined (a function, class, "
        "variable or import), as `path:line:column: line text`. Give the file, the line "
        "and the `{param:symbol}` on it. Definitions in libraries are shown with their full path. "
        + _NOT_FOR
    )

    async def run(self, ctx: Context, args: PositionArgs) -> LocationsOutput:
        """Ask the file's server."""
        return await _at(ctx, args, "textDocument/definition", {}, "definition")


class FindReferences(Tool[PositionArgs, LocationsOutput]):
    """Every place a symbol is used."""

    id = "find_references"
    namespace = "lsp"
    kind = Kind.LSP
    params = LspParams
    description = (
        "Every place in the workspace where the symbol at a place in a file is used, "
        "its definition included, as `path:line:column: line text` (at most 200). Give "
        "the file, the line and the `{param:symbol}` on it. Use it before renaming or changing a "
        "function's signature. " + _NOT_FOR
    )

    async def run(self, ctx: Context, args: PositionArgs) -> LocationsOutput:
        """Ask the file's server."""
        extra = {"context": {"includeDeclaration": True}}
        return await _at(ctx, args, "textDocument/references", extra, "references")


async def _at(
    ctx: Context, args: PositionArgs, method: str, extra: dict[str, Any], what: str
) -> LocationsOutput:
    _, answer = await ask(
        ctx,
        ctx.params(LspParams),
        args.path,
        method,
        lambda opened: {"position": _position(ctx, opened, args), **extra},
    )
    return await _locations(ctx, answer, what)


class HoverOutput(ToolOutput):
    """What the server says about a symbol."""

    text: str

    def to_model(self) -> str:
        """The text, or a sentence when there is none."""
        return self.text or "The language server has nothing to say about it."


class Hover(Tool[PositionArgs, HoverOutput]):
    """The type and documentation of a symbol."""

    id = "hover"
    namespace = "lsp"
    kind = Kind.LSP
    params = LspParams
    description = (
        "The signature, type and documentation of the symbol at a place in a workspace "
        "file, as an editor shows on hover. Give the file, the line and the `{param:symbol}` on "
        "it. " + _NOT_FOR
    )

    async def run(self, ctx: Context, args: PositionArgs) -> HoverOutput:
        """Ask the file's server."""
        _, answer = await ask(
            ctx,
            ctx.params(LspParams),
            args.path,
            "textDocument/hover",
            lambda opened: {"position": _position(ctx, opened, args)},
        )
        return HoverOutput(text=_hover_text(_dict(answer).get("contents")).strip())


def _hover_text(contents: Any) -> str:
    """The text of a hover's ``contents``: a string, a ``MarkupContent`` or
    ``MarkedString``, or a list of those (a list in the list is not looked into: no
    walk of the server's answer goes deeper than that)."""
    parts = contents if isinstance(contents, list) else [contents]
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            texts.append(str(part.get("value", "")))
    return "\n\n".join(texts)


class Symbol(BaseModel):
    """One symbol of a file's outline."""

    name: str
    kind: str
    line: int
    """From 1."""
    depth: int = 0
    """How deep it is nested (0: top level)."""
    detail: str = ""


class SymbolsOutput(ToolOutput):
    """A file's outline."""

    path: str
    symbols: list[Symbol]
    deeper: int = 0
    """Symbols nested deeper than :data:`MAX_SYMBOL_DEPTH` levels, not listed."""

    def to_model(self) -> str:
        """One symbol per line, indented by nesting: ``kind name (line N)``."""
        if not self.symbols:
            return f"No symbols in `{self.path}`."
        text = "\n".join(
            f"{'  ' * s.depth}{s.kind} {s.name}"
            + (f" {s.detail}" if s.detail else "")
            + f" (line {s.line})"
            for s in self.symbols
        )
        if self.deeper:
            text += (
                f"\n[{self.deeper} symbols nested deeper than {MAX_SYMBOL_DEPTH} levels not shown]"
            )
        return text


class DocumentSymbols(Tool[PathArgs, SymbolsOutput]):
    """The outline of a file."""

    id = "document_symbols"
    namespace = "lsp"
    kind = Kind.LSP
    params = LspParams
    description = (
        "The outline of a workspace file: its classes, functions, methods and variables "
        "with their lines, nested as in the code. Use it to find your way in a long file "
        "before reading parts of it. " + _NOT_FOR
    )

    async def run(self, ctx: Context, args: PathArgs) -> SymbolsOutput:
        """Ask the file's server."""
        opened, answer = await ask(
            ctx, ctx.params(LspParams), args.path, "textDocument/documentSymbol", lambda _: {}
        )
        items = answer if isinstance(answer, list) else []
        symbols: list[Symbol] = []
        if items and isinstance(items[0], dict) and "location" in items[0]:
            hidden = _flat(items, symbols)
        else:
            hidden = _outline(items, symbols)
        return SymbolsOutput(path=opened.shown, symbols=symbols, deeper=hidden)


def _flat(items: list[Any], out: list[Symbol]) -> int:
    """``SymbolInformation`` items, in line order, nested by their container's name,
    down to :data:`MAX_SYMBOL_DEPTH` levels; how many were deeper than that."""
    pairs = [(symbol, item.get("containerName")) for item in items if (symbol := _symbol(item, 0))]
    pairs.sort(key=lambda pair: pair[0].line)
    depth: dict[str, int] = {}
    hidden = 0
    for symbol, container in pairs:
        if isinstance(container, str) and container in depth:
            symbol.depth = depth[container] + 1
        depth.setdefault(symbol.name, symbol.depth)
        if symbol.depth >= MAX_SYMBOL_DEPTH:
            hidden += 1
        else:
            out.append(symbol)
    return hidden


def _symbol(item: Any, depth: int) -> Symbol | None:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return None
    span = item.get("selectionRange") or item.get("range")
    if span is None:
        span = _dict(item.get("location")).get("range")
    kind = item.get("kind")
    return Symbol(
        name=item["name"],
        kind=SYMBOL_KINDS[kind - 1] if isinstance(kind, int) and 0 < kind <= 26 else "symbol",
        line=_int(_dict(_dict(span).get("start")).get("line")) + 1,
        depth=depth,
        detail=_text(item.get("detail"))[:120],
    )


def _outline(items: list[Any], out: list[Symbol]) -> int:
    """``DocumentSymbol`` items and their children, depth first, down to
    :data:`MAX_SYMBOL_DEPTH` levels (walked with a stack of its own, not by recursion,
    so no answer is too deep for it); how many symbols were deeper than that."""
    hidden = 0
    stack: list[tuple[Iterator[Any], int]] = [(iter(items), 0)]
    while stack:
        children, depth = stack[-1]
        item: Any = next(children, _END)
        if item is _END:
            stack.pop()
            continue
        symbol = _symbol(item, depth)
        if symbol is None:
            continue
        if depth >= MAX_SYMBOL_DEPTH:
            hidden += 1
        else:
            out.append(symbol)
        nested = item.get("children")
        if isinstance(nested, list) and nested:
            stack.append((iter(nested), depth + 1))
    return hidden
