"""``list_dir``: the entries of a directory, a few levels deep, sorted and capped."""

from __future__ import annotations

import os
import stat
from fnmatch import fnmatchcase
from typing import Annotated

from pydantic import BaseModel, Field, PrivateAttr
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_fs._filesystem import EntryType, entry_type, filesystem, os_error, special_kind
from toolweave_fs._names import with_tool

__all__ = ["DirEntry", "ListDir", "ListDirArgs", "ListDirOutput", "ListDirParams"]


class ListDirArgs(BaseModel):
    """Arguments of list_dir."""

    path: str = Field(".", description="Directory to list, relative to the workspace root.")
    """Directory to list, relative to the workspace root (or absolute inside it)."""
    depth: int = Field(
        2, ge=1, le=50, description="How many levels to descend; 1 lists only direct entries."
    )
    """How many levels to descend; 1 lists only the directory's own entries."""
    ignore: list[Annotated[str, Field(max_length=1000)]] = Field(
        default_factory=list,
        max_length=100,
        description="Glob patterns of entries to leave out, matched against each entry's "
        'name and its path below the listed directory (e.g. "*.log", "build").',
    )
    """Extra glob patterns to leave out (added to the configured ones); at most 100 of at
    most 1000 characters, since each is matched against every entry."""


class ListDirParams(BaseModel):
    """Configuration of ``list_dir``."""

    max_entries: int = Field(1000, ge=1)
    """The listing stops after this many entries, with a note."""
    ignore: list[str] = Field(
        default_factory=lambda: [
            ".git",
            ".hg",
            ".toolweave",
            ".svn",
            "node_modules",
            "__pycache__",
            ".venv",
            ".mypy_cache",
            ".pytest_cache",
            ".ruff_cache",
            ".DS_Store",
        ]
    )
    """Glob patterns always left out (name or relative path)."""


class DirEntry(BaseModel):
    """One entry of a listing."""

    path: str
    """The entry, relative to the workspace root."""
    type: EntryType
    """What it is."""
    size: int | None = None
    """Size in bytes, for files."""


class ListDirOutput(ToolOutput):
    """What ``list_dir`` returns."""

    path: str
    """The listed directory, relative to the workspace root."""
    entries: list[DirEntry]
    """The entries, depth first, each directory's entries sorted by name."""
    truncated: bool
    """``True`` when the listing stopped at the configured maximum."""
    _depth_name: str = PrivateAttr("depth")
    """What the model calls the ``depth`` parameter (a configuration may rename it)."""

    def to_model(self) -> str:
        """One entry per line: directories end in ``/``, symbolic links in ``@``."""
        if not self.entries:
            return f"(`{self.path}` is empty)"
        marks = {"directory": "/", "symlink": "@", "file": "", "other": ""}
        text = "\n".join(e.path + marks[e.type] for e in self.entries)
        if self.truncated:
            text += (
                f"\n[Listing stopped at {len(self.entries)} "
                f"{'entry' if len(self.entries) == 1 else 'entries'}. List a subdirectory or "
                f"give a smaller `{self._depth_name}` to see the rest.]"
            )
        return text


class ListDir(Tool[ListDirArgs, ListDirOutput]):
    """Lists a directory of the workspace."""

    id = "list_dir"
    namespace = "fs"
    kind = Kind.LIST_DIR
    params = ListDirParams
    description = (
        "List the files and directories in a workspace directory, a few levels deep "
        "(`{param:depth}`, default 2). Paths come back relative to the workspace root, sorted by "
        "name, directories marked with a trailing `/` and symbolic links with `@` (links "
        "are not followed). Version-control folders, dependency folders and caches are "
        "left out; `{param:ignore}` leaves out more. Long listings stop with a note.\n\n"
        "Do not use it to read files or to search for text inside them: use "
        "{tool:read|a file reader} or {tool:search|a search tool} for that."
    )

    def run(self, ctx: Context, args: ListDirArgs) -> ListDirOutput:
        """Walk the directory."""
        fs = filesystem(ctx.resources)
        params = ctx.params(ListDirParams)
        with fs.open(args.path) as entry:
            assert entry.fd is not None
            shown = fs.spell(entry.relative)
            try:
                mode = os.fstat(entry.fd).st_mode
            except OSError as exc:
                raise os_error(exc, shown) from None
            if stat.S_ISREG(mode):
                raise ToolError(
                    ErrorKind.INVALID_PARAMS,
                    f"`{shown}` is a file; read it{with_tool(ctx, Kind.READ)} "
                    "instead of listing it",
                )
            if not stat.S_ISDIR(mode):
                raise ToolError(
                    ErrorKind.INVALID_PARAMS,
                    f"`{shown}` is {special_kind(mode)}, not a directory; it cannot be "
                    "listed, nor read as a file",
                )
            base = "" if entry.is_root else entry.relative + "/"
            walker = _Walker([*params.ignore, *args.ignore], params.max_entries)
            try:
                walker.walk(entry.fd, base, "", args.depth)
            except OSError as exc:
                raise os_error(exc, shown) from None
        output = ListDirOutput(path=shown, entries=walker.entries, truncated=walker.truncated)
        output._depth_name = ctx.param_name("depth")
        return output


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _Walker:
    __slots__ = ("entries", "ignore", "limit", "truncated")

    def __init__(self, ignore: list[str], limit: int) -> None:
        self.ignore = ignore
        self.limit = limit
        self.entries: list[DirEntry] = []
        self.truncated = False

    def _ignored(self, name: str, rel: str) -> bool:
        return any(fnmatchcase(name, p) or fnmatchcase(rel, p) for p in self.ignore)

    def walk(self, fd: int, base: str, prefix: str, depth: int) -> None:
        """Add the entries of the directory open as ``fd`` (and below, ``depth``
        levels) in order; ``base + prefix`` is its path below the root. Subdirectories
        are opened relative to ``fd`` without following links."""
        with os.scandir(fd) as it:
            children = sorted(it, key=lambda e: (e.name.lower(), e.name))
        for child in children:
            rel = prefix + child.name
            if self._ignored(child.name, rel):
                continue
            if len(self.entries) >= self.limit:
                self.truncated = True
                return
            try:
                info = child.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished while listing
            kind = entry_type(info.st_mode)
            self.entries.append(
                DirEntry(
                    path=base + rel,
                    type=kind,
                    size=info.st_size if kind == "file" else None,
                )
            )
            if kind == "directory" and depth > 1:
                try:
                    inner = os.open(child.name, _DIR, dir_fd=fd)
                except OSError:
                    continue  # unreadable, or no longer a directory (a link: not followed)
                try:
                    self.walk(inner, base, rel + "/", depth - 1)
                except PermissionError:
                    continue  # listed, but its content cannot be read
                finally:
                    os.close(inner)
                if self.truncated:
                    return
