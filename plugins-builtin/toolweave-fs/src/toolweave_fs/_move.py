"""``move``: rename or move a file, link or directory inside the workspace."""

from __future__ import annotations

import errno
import os
import shutil

from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_fs._filesystem import EntryType, entry_type, filesystem, os_error

__all__ = ["Move", "MoveArgs", "MoveOutput"]


class MoveArgs(BaseModel):
    """Arguments of move."""

    source: str = Field(description="Path to move, relative to the workspace root.")
    """Path to move, relative to the workspace root (or absolute inside it)."""
    destination: str = Field(
        description="The full new path (not just a directory to move into), relative to "
        "the workspace root. Missing parent directories are created."
    )
    """The full new path; missing parent directories are created."""
    overwrite: bool = Field(False, description="Replace an existing file at the destination.")
    """Replace an existing file (never a directory) at the destination."""


class MoveOutput(ToolOutput):
    """What ``move`` returns."""

    source: str
    """The old path, relative to the workspace root."""
    destination: str
    """The new path, relative to the workspace root."""
    type: EntryType
    """What was moved."""
    replaced: bool
    """``True`` when an existing file at the destination was replaced."""

    def to_model(self) -> str:
        """One line saying what moved where."""
        extra = " (replacing the file that was there)" if self.replaced else ""
        return f"Moved {self.type} `{self.source}` to `{self.destination}`{extra}."


class Move(Tool[MoveArgs, MoveOutput]):
    """Moves a path of the workspace to another path of the workspace."""

    id = "move"
    namespace = "fs"
    kind = Kind.MOVE
    description = (
        "Move or rename a file, a symbolic link or a whole directory inside the "
        "workspace. `destination` is the full new path, not a directory to move into. An "
        "existing file at the destination is replaced only with `overwrite` set to true; "
        "an existing directory is never replaced.\n\n"
        "Do not use it to copy (the source is gone afterwards) or to change a file's "
        "content."
    )

    def run(self, ctx: Context, args: MoveArgs) -> MoveOutput:
        """Move the entry."""
        fs = filesystem(ctx.resources)
        src = fs.locate(args.source)
        dst = fs.locate(args.destination)
        src_shown, dst_shown = fs.show(src), fs.show(dst)
        if src == fs.root:
            raise ToolError(ErrorKind.PERMISSION_DENIED, "the workspace root cannot be moved")
        try:
            kind = entry_type(os.lstat(src).st_mode)
        except OSError as exc:
            raise os_error(exc, src_shown) from None
        if src == dst:
            raise ToolError(
                ErrorKind.INVALID_PARAMS, f"`{src_shown}` and `{dst_shown}` are the same path"
            )
        if kind == "directory" and dst.is_relative_to(src):
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{src_shown}` cannot be moved into itself (`{dst_shown}`)",
            )
        replaced = False
        try:
            if os.path.lexists(dst):
                if entry_type(os.lstat(dst).st_mode) == "directory":
                    raise ToolError(
                        ErrorKind.INVALID_PARAMS,
                        f"`{dst_shown}` is an existing directory; give the full new path, "
                        f"e.g. `{dst_shown}/{src.name}`",
                    )
                if not args.overwrite:
                    raise ToolError(
                        ErrorKind.INVALID_PARAMS,
                        f"`{dst_shown}` already exists; set `overwrite` to true to replace it",
                    )
                replaced = True
                if kind == "directory":
                    os.unlink(dst)
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(src, dst)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                shutil.move(src, dst)  # another file system: copy, then delete
        except OSError as exc:
            raise os_error(exc, dst_shown if os.path.lexists(src) else src_shown) from None
        return MoveOutput(source=src_shown, destination=dst_shown, type=kind, replaced=replaced)
