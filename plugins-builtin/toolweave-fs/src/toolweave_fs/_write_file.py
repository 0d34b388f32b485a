"""``write_file``: create or replace a whole file, atomically."""

from __future__ import annotations

from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_fs._filesystem import encode, filesystem, os_error, writing

__all__ = ["WriteFile", "WriteFileArgs", "WriteFileOutput"]


class WriteFileArgs(BaseModel):
    """Arguments of write_file."""

    path: str = Field(description="Path of the file, relative to the workspace root.")
    """Path of the file, relative to the workspace root (or absolute inside it)."""
    content: str = Field(description="The complete new content of the file.")
    """The complete new content, written as UTF-8 exactly as given."""


class WriteFileOutput(ToolOutput):
    """What ``write_file`` returns."""

    path: str
    """The file, relative to the workspace root."""
    bytes_written: int
    """Size of the new content in bytes."""
    created: bool
    """``True`` when the file did not exist before."""

    def to_model(self) -> str:
        """One line saying what was written where."""
        verb = "Created" if self.created else "Replaced"
        size = self.bytes_written
        return f"{verb} `{self.path}` ({size} byte{'' if size == 1 else 's'})."


class WriteFile(Tool[WriteFileArgs, WriteFileOutput]):
    """Writes a whole file of the workspace."""

    id = "write_file"
    namespace = "fs"
    kind = Kind.WRITE
    description = (
        "Write a file in the workspace: create it, or replace its whole content. Missing "
        "parent directories are created. The write is atomic: the file holds either the "
        "old or the new content, never a mix.\n\n"
        "Do not use it for small changes to an existing file: editing just the changed "
        "text with {tool:edit|an edit tool} is cheaper and safer. Read an existing file "
        "with {tool:read|a file reader} before replacing it."
    )

    def run(self, ctx: Context, args: WriteFileArgs) -> WriteFileOutput:
        """Write the content and report the size."""
        fs = filesystem(ctx.resources)
        data = encode(args.content, ctx.param_name("content"))
        with fs.entry(args.path, create_parents=True) as entry, writing(entry):
            shown = fs.spell(entry.relative)
            try:
                created = fs.write_atomic(entry, data)
            except IsADirectoryError:
                raise ToolError(
                    ErrorKind.INVALID_PARAMS, f"`{shown}` is a directory, not a file"
                ) from None
            except OSError as exc:
                raise os_error(exc, shown) from None
        return WriteFileOutput(path=shown, bytes_written=len(data), created=created)
