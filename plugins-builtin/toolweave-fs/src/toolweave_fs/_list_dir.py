"""``list_dir``: the entries of a directory, a few levels deep, sorted and capped."""

from __future__ import annotations

import os
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path

from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_fs._filesystem import EntryType, entry_type, filesystem, os_error

__all__ = ["DirEntry", "ListDir", "ListDirArgs", "ListDirOutput", "ListDirParams"]


class ListDirArgs(BaseModel):
    """Arguments of list_dir."""

    path: str = Field(".", description="Directory to list, relative to the workspace root.")
    """Directory to list, relative to the workspace root (or absolute inside it)."""
    depth: int = Field(
        2, ge=1, le=50, description="How many levels to descend; 1 lists only direct entries."
    )
    """How many levels to descend; 1 lists only the directory's own entries."""
    ignore: list[str] = Field(
        default_factory=list,
        description="Glob patterns of entries to leave out, matched against each entry's "
        'name and its path below the listed directory (e.g. "*.log", "build").',
    )
    """Extra glob patterns to leave out (added to the configured ones)."""


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

    def to_model(self) -> str:
        """One entry per line: directories end in ``/``, symbolic links in ``@``."""
        if not self.entries:
            return f"(`{self.path}` is empty)"
        marks = {"directory": "/", "symlink": "@", "file": "", "other": ""}
        text = "\n".join(e.path + marks[e.type] for e in self.entries)
        if self.truncated:
            text += (
                f"\n[Listing stopped at {len(self.entries)} entries. List a subdirectory or "
                "use a smaller depth to see the rest.]"
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
        "(`depth`, default 2). Paths come back relative to the workspace root, sorted by "
        "name, directories marked with a trailing `/` and symbolic links with `@` (links "
        "are not followed). Version-control folders, dependency folders and caches are "
        "left out; `ignore` leaves out more. Long listings stop with a note.\n\n"
        "Do not use it to read files or to search for text inside them."
    )

    def run(self, ctx: Context, args: ListDirArgs) -> ListDirOutput:
        """Walk the directory."""
        fs = filesystem(ctx.resources)
        params = ctx.params(ListDirParams)
        real = fs.resolve(args.path)
        shown = fs.show(real)
        if not real.is_dir():
            if real.exists():
                raise ToolError(
                    ErrorKind.INVALID_PARAMS, f"`{shown}` is a file; read it instead of listing"
                )
            raise ToolError(ErrorKind.NOT_FOUND, f"`{shown}` does not exist")
        walker = _Walker(fs.show, [*params.ignore, *args.ignore], params.max_entries)
        try:
            walker.walk(real, "", args.depth)
        except OSError as exc:
            raise os_error(exc, shown) from None
        return ListDirOutput(path=shown, entries=walker.entries, truncated=walker.truncated)


class _Walker:
    __slots__ = ("entries", "ignore", "limit", "show", "truncated")

    def __init__(self, show: Callable[[Path], str], ignore: list[str], limit: int) -> None:
        self.show = show
        self.ignore = ignore
        self.limit = limit
        self.entries: list[DirEntry] = []
        self.truncated = False

    def _ignored(self, name: str, rel: str) -> bool:
        return any(fnmatchcase(name, p) or fnmatchcase(rel, p) for p in self.ignore)

    def walk(self, directory: Path, prefix: str, depth: int) -> None:
        """Add the entries of ``directory`` (and below, ``depth`` levels) in order."""
        with os.scandir(directory) as it:
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
            path = Path(child.path)
            self.entries.append(
                DirEntry(
                    path=self.show(path),
                    type=kind,
                    size=info.st_size if kind == "file" else None,
                )
            )
            if kind == "directory" and depth > 1:
                try:
                    self.walk(path, rel + "/", depth - 1)
                except PermissionError:
                    continue  # listed, but its content cannot be read
                if self.truncated:
                    return
