"""``delete``: remove a file, a symbolic link or a directory."""

from __future__ import annotations

import errno
import os

from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_fs._filesystem import EntryType, entry_type, filesystem, os_error, remove_tree

__all__ = ["Delete", "DeleteArgs", "DeleteOutput"]


class DeleteArgs(BaseModel):
    """Arguments of delete."""

    path: str = Field(description="Path to delete, relative to the workspace root.")
    """Path to delete, relative to the workspace root (or absolute inside it)."""
    recursive: bool = Field(
        False,
        description="Required to delete a directory that is not empty, with everything in it.",
    )
    """Allow deleting a non-empty directory and its whole content."""


class DeleteOutput(ToolOutput):
    """What ``delete`` returns."""

    path: str
    """What was deleted, relative to the workspace root."""
    type: EntryType
    """What it was."""

    def to_model(self) -> str:
        """One line saying what was deleted."""
        return f"Deleted {self.type} `{self.path}`."


class Delete(Tool[DeleteArgs, DeleteOutput]):
    """Deletes a path of the workspace."""

    id = "delete"
    namespace = "fs"
    kind = Kind.DELETE
    description = (
        "Delete a file, a symbolic link (the link itself, not what it points to) or a "
        "directory in the workspace. A directory that is not empty is deleted only with "
        "`{param:recursive}` set to true, and then everything in it goes. Deletion cannot be "
        "undone.\n\n"
        "Do not use it to empty or shorten a file (write or edit the file instead), and "
        "do not delete files you did not create unless the user asked for it."
    )

    def run(self, ctx: Context, args: DeleteArgs) -> DeleteOutput:
        """Delete the entry."""
        fs = filesystem(ctx.resources)
        with fs.entry(args.path, follow_final_link=False, check_link_target=False) as entry:
            shown = fs.spell(entry.relative)
            if entry.is_root:
                raise ToolError(ErrorKind.PERMISSION_DENIED, "the workspace root cannot be deleted")
            where, name = entry.dir_fd, entry.name
            try:
                kind = entry_type(entry.lstat().st_mode)
                if kind != "directory":
                    os.unlink(name, dir_fd=where)
                elif args.recursive:
                    remove_tree(where, name)
                else:
                    _remove_empty(where, name, shown, ctx.param_name("recursive"))
            except OSError as exc:
                raise os_error(exc, shown) from None
        return DeleteOutput(path=shown, type=kind)


def _remove_empty(where: int, name: str, shown: str, recursive: str) -> None:
    """Remove the directory ``name`` of ``where``, refusing one that is not empty
    (``recursive`` is what the model calls that parameter)."""
    try:
        os.rmdir(name, dir_fd=where)
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"`{shown}` is a directory that is not empty; set `{recursive}` "
            "to true to delete it with everything in it",
        ) from None
