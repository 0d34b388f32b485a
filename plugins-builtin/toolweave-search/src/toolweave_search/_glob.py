"""The ``glob`` tool: find files by path pattern, newest first."""

from __future__ import annotations

import os
import stat
import threading

import anyio.to_thread
from pydantic import BaseModel, Field
from toolweave import (
    Capabilities,
    Context,
    ErrorKind,
    Kind,
    Tool,
    ToolError,
    ToolOutput,
    Workspace,
)
from toolweave.errors import preview

from toolweave_search._engine import EngineParams, list_files, resolve_engine
from toolweave_search._fdwalk import DIR_FLAGS, Below
from toolweave_search._globs import MAX_PATTERN_CHARS, GlobFilter, check_glob, literal_prefix
from toolweave_search._start import Start

__all__ = ["Glob", "GlobArgs", "GlobOutput", "GlobParams"]


class GlobArgs(BaseModel):
    """Arguments of ``glob``."""

    pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description=(
            "Glob matched against file paths below `path`: `**/*.py` (any depth), "
            "`src/**/test_*.ts`, `*.md` (only directly in `path`), `**/*.{js,jsx}`."
        ),
    )
    """The glob."""

    path: str | None = Field(
        default=None,
        description="Folder to search in, relative to the workspace root (default: the root).",
    )
    """The folder the pattern is relative to."""


class GlobParams(EngineParams):
    """Configuration of ``glob``."""

    max_results: int = Field(default=100, ge=1)
    """The most paths returned (the newest ones)."""


class GlobOutput(ToolOutput):
    """What ``glob`` returns."""

    files: list[str]
    """Matching files relative to the workspace root, most recently modified first."""

    total: int
    """How many files matched in all."""

    truncated: bool = False
    """Whether only the newest ``max_results`` were returned."""

    engine: str = "python"
    """Which engine listed the files (``ripgrep`` or ``python``)."""

    def to_model(self) -> str:
        """One path per line, newest first."""
        if not self.files:
            return "No files match."
        text = "\n".join(self.files)
        hidden = self.total - len(self.files)
        if self.truncated:
            text += (
                f"\n[{hidden} more matching file{'' if hidden == 1 else 's'} not shown (older). "
                "Use a more specific pattern or path.]"
            )
        return text


def _newest_first(root_fd: int, paths: list[str]) -> list[str]:
    """``paths`` (below the root) that are regular files inside, reached from the root's
    descriptor without following links, most recently modified first. A name ripgrep
    listed from a folder swapped for a link to outside is not found inside, and left
    out."""
    stamped: list[tuple[float, str]] = []
    with Below(root_fd) as below:
        for rel in paths:
            info = below.stat_file(rel)
            if info is not None:
                stamped.append((-info.st_mtime, rel))
    stamped.sort()
    return [rel for _, rel in stamped]


def _matching(
    matcher: GlobFilter, listed: list[str], skip: int, stop: threading.Event
) -> list[str]:
    """The paths of ``listed`` that match, off the event loop; stops when ``stop`` is set
    (the call was cancelled or passed its deadline)."""
    out: list[str] = []
    for path in listed:
        if stop.is_set():
            break
        if matcher.matches(path[skip:]):
            out.append(path)
    return out


def _narrowed(base: Start, prefix: str) -> Start | None:
    """The folder to list: ``base``, or its subfolder ``prefix`` that every match must be
    in (``None`` when that does not exist). The subfolder is opened from ``base``'s
    descriptor without following links; with a link on the way, ``base`` is listed
    whole (links are not followed)."""
    if not prefix:
        return base
    here = os.dup(base.fd)
    parts = list(base.parts)
    for name in prefix.split("/"):
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=here)
        except OSError:
            try:
                link = stat.S_ISLNK(os.stat(name, dir_fd=here, follow_symlinks=False).st_mode)
            except OSError:
                link = False
            os.close(here)
            return base if link else None
        os.close(here)
        here = fd
        parts.append(name)
    return base.below(here, tuple(parts))


class Glob(Tool[GlobArgs, GlobOutput]):
    """Find files whose paths match a glob, most recently modified first."""

    id = "glob"
    namespace = "search"
    kind = Kind.SEARCH
    description = """\
Find files by path pattern, e.g. `**/*.py`, `src/**/*.test.ts`, `docs/*.md`, \
`**/*.{yml,yaml}`. Returns paths relative to the workspace root, most recently \
modified first, capped; skips files listed in .gitignore and the .git folder.

`*` and `?` stay within one folder, `**` spans any number of folders, `{a,b}` lists \
alternatives, `[abc]` matches one character. A pattern is matched against the whole \
path below `{param:path}`: `*.md` finds only files directly in it; write `**/*.md` for every \
depth.

Use it to find files by name or extension, or to see what changed recently. To find \
files by what they contain, search their contents with {name:grep|a content search} \
instead; to look at one folder, listing it with {tool:list_dir|a directory listing} is \
enough. Prefer it over `find` or `ls` in a shell."""
    capabilities = Capabilities(read_only=True, scope="workspace", timeout=120.0)
    params = GlobParams

    async def run(self, ctx: Context, args: GlobArgs) -> GlobOutput:
        """List the files below ``path``, keep the matching ones, newest first."""
        params = ctx.params(GlobParams)
        workspace = ctx.require(Workspace)
        where = args.path if args.path and args.path.strip() else ""
        pattern = args.pattern.strip().removeprefix("./")
        check_glob(pattern, ctx.param_name("pattern"))
        matcher = GlobFilter(pattern, anchored=True)  # bounded: see _globs
        rg = resolve_engine(params.engine, params.ripgrep_path)
        with Start(workspace, where) as base:
            if base.is_file:
                raise ToolError(
                    ErrorKind.INVALID_PARAMS,
                    f"{preview(args.path)!r} is a file; give the folder to search in as "
                    f"`{ctx.param_name('path')}`.",
                )
            start = _narrowed(base, literal_prefix(pattern))
            if start is None:
                return GlobOutput(files=[], total=0)
            try:
                listed = await list_files(rg, workspace.root, start)
            finally:
                if start is not base:
                    start.close()
            skip = len(base.folder) + 1 if base.parts else 0
            matched = await ctx.in_thread(_matching, matcher, listed, skip, ctx.stop_event)
            ordered = await anyio.to_thread.run_sync(_newest_first, base.root_fd, matched)
        shown = ordered[: params.max_results]
        return GlobOutput(
            files=shown,
            total=len(ordered),
            truncated=len(ordered) > len(shown),
            engine="python" if rg is None else "ripgrep",
        )
