"""``move``: rename or move a file, link or directory inside the workspace."""

from __future__ import annotations

import errno
import os

from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput
from toolweave.resources import Location

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
        "workspace. `{param:destination}` is the full new path, not a directory to move into. An "
        "existing file at the destination is replaced only with `{param:overwrite}` set to true; "
        "an existing directory is never replaced.\n\n"
        "Do not use it to copy (the source is gone afterwards) or to change a file's "
        "content."
    )

    def run(self, ctx: Context, args: MoveArgs) -> MoveOutput:
        """Move the entry."""
        fs = filesystem(ctx.resources)
        with fs.entry(args.source, follow_final_link=False, check_link_target=False) as src:
            src_shown = fs.spell(src.relative)
            if src.is_root:
                raise ToolError(ErrorKind.PERMISSION_DENIED, "the workspace root cannot be moved")
            try:
                kind = entry_type(src.lstat().st_mode)
            except OSError as exc:
                raise os_error(exc, src_shown) from None
            if kind == "directory":
                inner = fs.spell(args.destination)
                if inner == src.relative or inner.startswith(src.relative + "/"):
                    raise ToolError(
                        ErrorKind.INVALID_PARAMS,
                        f"`{src_shown}` cannot be moved into itself (`{inner}`)",
                    )
            with fs.entry(args.destination, follow_final_link=False, create_parents=True) as dst:
                dst_shown = fs.spell(dst.relative)
                replaced = _move(
                    src, dst, kind, src_shown, dst_shown, overwrite=args.overwrite, ctx=ctx
                )
        return MoveOutput(source=src_shown, destination=dst_shown, type=kind, replaced=replaced)


def _move(
    src: Location,
    dst: Location,
    kind: EntryType,
    src_shown: str,
    dst_shown: str,
    *,
    overwrite: bool,
    ctx: Context,
) -> bool:
    """Rename ``src`` to ``dst``, both relative to their directories' descriptors;
    returns whether a file at ``dst`` was replaced."""
    if dst.is_root:
        raise _into_the_root(src, src_shown, ctx.param_name("destination"))
    if dst.name == src.name and os.path.samestat(os.fstat(src.dir_fd), os.fstat(dst.dir_fd)):
        raise ToolError(
            ErrorKind.INVALID_PARAMS, f"`{src_shown}` and `{dst_shown}` are the same path"
        )
    replaced = False
    existing: EntryType | None = None
    try:
        try:
            existing = entry_type(dst.lstat().st_mode)
        except FileNotFoundError:
            existing = None
        if existing == "directory":
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{dst_shown}` is an existing directory; give the full new path, "
                f"e.g. `{dst_shown}/{src.name}`",
            )
        if existing is not None:
            if not overwrite:
                raise ToolError(
                    ErrorKind.INVALID_PARAMS,
                    f"`{dst_shown}` already exists; set `{ctx.param_name('overwrite')}` to "
                    "true to replace it",
                )
            replaced = True
            if kind == "directory":
                os.unlink(dst.name, dir_fd=dst.dir_fd)
        os.replace(src.name, dst.name, src_dir_fd=src.dir_fd, dst_dir_fd=dst.dir_fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL and kind == "directory":
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{src_shown}` cannot be moved into itself (`{dst_shown}`)",
            ) from None
        if exc.errno == errno.EXDEV:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"`{src_shown}` and `{dst_shown}` are on different file systems; move "
                "renames within one file system only",
            ) from None
        try:
            src.lstat()
        except OSError:
            raise os_error(exc, src_shown) from None
        raise os_error(exc, dst_shown) from None
    return replaced


def _into_the_root(src: Location, src_shown: str, destination: str) -> ToolError:
    """The refusal of the workspace root as a destination: ``destination`` is the full
    new path, not a folder to move into (``destination`` as the model calls it)."""
    full = f"`{destination}` is the full new path, not a directory to move into"
    if len(src.parts) == 1:
        return ToolError(
            ErrorKind.INVALID_PARAMS, f"`{src_shown}` is already in the workspace root; {full}"
        )
    return ToolError(
        ErrorKind.INVALID_PARAMS,
        f"the workspace root is a directory; {full}: to move `{src_shown}` into the root, "
        f"give `{src.name}`",
    )
