"""The ``grep`` tool: regular-expression search of file contents in the workspace."""

from __future__ import annotations

from pydantic import BaseModel, Field, PrivateAttr
from toolweave import Capabilities, Context, Kind, Tool, ToolOutput, Workspace
from toolweave.errors import ErrorKind, ToolError

from toolweave_search._engine import EngineParams, resolve_engine, search
from toolweave_search._globs import MAX_PATTERN_CHARS, check_glob
from toolweave_search._results import GrepQuery, OutputMode, format_hits
from toolweave_search._start import Start

__all__ = ["MAX_REGEX_CHARS", "Grep", "GrepArgs", "GrepOutput", "GrepParams"]

MAX_REGEX_CHARS = 2_000
"""The longest regular expression ``grep`` accepts, in characters."""


class GrepArgs(BaseModel):
    """Arguments of ``grep``."""

    pattern: str = Field(
        min_length=1,
        max_length=MAX_REGEX_CHARS,
        description=(
            "Regular expression to search for (ripgrep syntax, much like Python's): "
            r"`def \w+_test`, `TODO|FIXME`, `log\.error\(`. Escape literal `(`, `[`, `{`, `.`."
        ),
    )
    """The regular expression."""

    path: str | None = Field(
        default=None,
        description="File or folder to search, relative to the workspace root (default: all).",
    )
    """Where to search."""

    glob: str | None = Field(
        default=None,
        max_length=MAX_PATTERN_CHARS,
        description=(
            "Only search files matching this glob. Without `/` it matches file names at any "
            "depth (`*.py`, `*.{ts,tsx}`); with `/` it matches paths below `path` "
            "(`src/**/*.rs`)."
        ),
    )
    """Only files matching this glob."""

    output_mode: OutputMode = Field(
        default="files_with_matches",
        description=(
            "`files_with_matches`: paths of matching files (default); `content`: the "
            "matching lines as path:line:text; `count`: path:number of matching lines."
        ),
    )
    """What to report."""

    case_insensitive: bool = Field(default=False, description="Ignore upper/lower case.")
    """Ignore case."""

    context: int | None = Field(
        default=None,
        ge=0,
        le=100,
        description="With `content`: lines to show before and after each match.",
    )
    """Context lines on both sides (``content`` mode)."""

    before_context: int | None = Field(
        default=None, ge=0, le=100, description="With `content`: lines to show before each match."
    )
    """Context lines before each match (overrides ``context``)."""

    after_context: int | None = Field(
        default=None, ge=0, le=100, description="With `content`: lines to show after each match."
    )
    """Context lines after each match (overrides ``context``)."""

    line_numbers: bool = Field(default=True, description="With `content`: show line numbers.")
    """Show line numbers (``content`` mode)."""

    head_limit: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Return at most this many entries: lines with `content`, files otherwise. "
            "Omit for the default limit."
        ),
    )
    """The most entries to return."""


class GrepParams(EngineParams):
    """Configuration of ``grep``."""

    default_head_limit: int = Field(default=250, ge=1)
    """Entries returned when the call sets no ``head_limit``."""

    max_head_limit: int = Field(default=2_000, ge=1)
    """The most entries a call may ask for."""

    max_line_chars: int = Field(default=400, ge=20)
    """Longer lines (minified code) are cut, with a note of how much was left out."""

    max_output_chars: int = Field(default=30_000, ge=1_000)
    """The most characters returned; further entries are left out."""


class GrepOutput(ToolOutput):
    """What ``grep`` returns."""

    mode: OutputMode
    """The output mode used."""

    results: list[str]
    """The result lines as the model reads them."""

    files: list[str]
    """The files the results come from, relative to the workspace root, in order."""

    truncated: bool = False
    """Whether more results exist than were returned."""

    engine: str = "python"
    """Which engine searched (``ripgrep`` or ``python``)."""

    _names: dict[str, str] = PrivateAttr(default_factory=dict)
    """What the model calls the parameters the note names, where a configuration
    renamed them."""

    def to_model(self) -> str:
        """The results, or a clear "no matches", and a note when results were cut."""
        if not self.results:
            return "No matches found."
        text = "\n".join(self.results)
        if self.truncated:
            path, glob, limit = (self._names.get(n, n) for n in _NOTE_PARAMS)
            text += (
                f"\n[More results exist than shown. Narrow the search with `{path}`, "
                f"`{glob}` or a more specific pattern, or raise `{limit}`.]"
            )
        return text


_NOTE_PARAMS = ("path", "glob", "head_limit")
"""The parameters the note of a cut result names."""


class Grep(Tool[GrepArgs, GrepOutput]):
    """Search file contents with a regular expression."""

    id = "grep"
    namespace = "search"
    kind = Kind.SEARCH
    description = """\
Search the contents of files in the workspace for a regular expression, fast (ripgrep \
when installed), skipping files listed in .gitignore, binary files and the .git folder.

Use it to find where something is defined or used, to list files mentioning a name, \
or to count occurrences. Start with the default mode (`files_with_matches`), then look \
closer with `{param:output_mode}: content` and a few `{param:context}` lines, narrowed \
by `{param:path}` or `{param:glob}`. Results are sorted by path and capped; the output \
says when there is more.

Do not use it to find files by name (use {name:glob|a file-name search} for that), to \
read a whole file (use {tool:read|the file reader}), or through a shell command \
(`grep`/`rg` in a terminal): this tool is faster, respects the workspace and gives \
structured results.

Patterns are regular expressions, not plain text: escape `.`, `(`, `[`, `{`, `*`, `+`, \
`?` and `|` to match them literally (`interface\\{\\}` for `interface{}`). Matching is \
line by line, so a pattern cannot span lines."""
    capabilities = Capabilities(read_only=True, scope="workspace", timeout=120.0)
    params = GrepParams

    async def run(self, ctx: Context, args: GrepArgs) -> GrepOutput:
        """Resolve the path, choose the engine, search and format."""
        params = ctx.params(GrepParams)
        if "\x00" in args.pattern:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{ctx.param_name('pattern')}` contains a NUL character: files holding one "
                "are binary and never searched, and ripgrep cannot be given one; leave it out",
            )
        workspace = ctx.require(Workspace)
        where = args.path if args.path and args.path.strip() else ""
        limit = min(args.head_limit or params.default_head_limit, params.max_head_limit)
        before = args.before_context if args.before_context is not None else args.context or 0
        after = args.after_context if args.after_context is not None else args.context or 0
        glob = args.glob.strip() if args.glob and args.glob.strip() else None
        if glob is not None:
            check_glob(glob, ctx.param_name("glob"))
        rg = resolve_engine(params.engine, params.ripgrep_path)
        with Start(workspace, where) as start:
            query = GrepQuery(
                pattern=args.pattern,
                folder=start.folder,
                is_file=start.is_file,
                glob=glob,
                mode=args.output_mode,
                case_insensitive=args.case_insensitive,
                before=before,
                after=after,
                limit=limit,
                line_chars=params.max_line_chars,
            )
            hits = await search(rg, workspace.root, start, query)
        lines, files, truncated = format_hits(
            hits,
            args.output_mode,
            line_numbers=args.line_numbers,
            context=bool(before or after),
            limit=limit,
            line_chars=params.max_line_chars,
            max_chars=params.max_output_chars,
        )
        output = GrepOutput(
            mode=args.output_mode,
            results=lines,
            files=files,
            truncated=truncated,
            engine="python" if rg is None else "ripgrep",
        )
        output._names = {name: ctx.param_name(name) for name in _NOTE_PARAMS}
        return output
