"""``edit_file``: replace an exact piece of text in a file.

Failures, chosen so that a model can tell them apart and act:

- ``old_string`` does not occur in the file: ``not_found`` (read the file again and
  copy the text exactly);
- ``old_string`` occurs more than once and ``replace_all`` is false: ``invalid_params``
  (add context to make it unique, or ask for every occurrence);
- ``old_string`` equals ``new_string``, or the file is binary: ``invalid_params``;
- the file does not exist: ``not_found``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput
from toolweave.resources import Location

from toolweave_fs._filesystem import (
    FileSystem,
    encode,
    filesystem,
    os_error,
    read_text,
    writing,
)
from toolweave_fs._names import with_tool

__all__ = ["EditFile", "EditFileArgs", "EditFileOutput"]


class EditFileArgs(BaseModel):
    """Arguments of edit_file."""

    path: str = Field(description="Path of the file, relative to the workspace root.")
    """Path of the file, relative to the workspace root (or absolute inside it)."""
    old_string: str = Field(
        min_length=1,
        description="The exact text to replace, including whitespace and indentation. "
        "It must occur exactly once unless replace_all is true.",
    )
    """The exact text to replace."""
    new_string: str = Field(description="The text to put in its place.")
    """The replacement text."""
    replace_all: bool = Field(False, description="Replace every occurrence of old_string.")
    """Replace every occurrence instead of requiring exactly one."""


class EditFileOutput(ToolOutput):
    """What ``edit_file`` returns."""

    path: str
    """The file, relative to the workspace root."""
    replacements: int
    """How many occurrences were replaced."""
    first_line: int
    """The line (from 1) where the first replacement starts."""

    def to_model(self) -> str:
        """One line saying how many replacements were made where."""
        plural = "" if self.replacements == 1 else "s"
        return (
            f"Replaced {self.replacements} occurrence{plural} in `{self.path}` "
            f"(first at line {self.first_line})."
        )


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


class EditFile(Tool[EditFileArgs, EditFileOutput]):
    """Replaces exact text in a file of the workspace (see the module docstring)."""

    id = "edit_file"
    namespace = "fs"
    kind = Kind.EDIT
    requires = "kind:read"  # the model must read a file before it can edit it exactly
    description = (
        "Change a text file by replacing an exact piece of it: `{param:old_string}` is replaced "
        "by `{param:new_string}`. `{param:old_string}` must match the file exactly (whitespace and "
        "indentation included) and occur exactly once; include a few surrounding lines "
        "to make it unique, or set `{param:replace_all}` to replace every occurrence. If it is "
        "not found the call fails and nothing changes: read the file again with "
        "{tool:read} and copy the current text. The file is rewritten atomically.\n\n"
        "Do not use it to create a new file or to rewrite most of a file; write the "
        "whole file with {tool:write|a tool that writes files} instead."
    )

    def run(self, ctx: Context, args: EditFileArgs) -> EditFileOutput:
        """Apply the replacement and write the file back."""
        old_name = ctx.param_name("old_string")
        if args.old_string == args.new_string:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{old_name}` and `{ctx.param_name('new_string')}` are the same; "
                "nothing would change",
            )
        fs = filesystem(ctx.resources)
        # The file is opened once its lock is held: what is read is what the last
        # writer left.
        with fs.entry(args.path) as where, writing(where), fs.open(args.path) as entry:
            assert entry.fd is not None
            shown = fs.spell(entry.relative)
            text = read_text(entry.fd, shown)
            return self._edit(ctx, fs, entry, shown, text, args)

    @staticmethod
    def _edit(
        ctx: Context, fs: FileSystem, entry: Location, shown: str, text: str, args: EditFileArgs
    ) -> EditFileOutput:
        """Replace in ``text`` (the content of ``entry``) and write it back there."""
        old, new = args.old_string, args.new_string
        old_name = ctx.param_name("old_string")
        count = text.count(old)
        if count == 0 and "\r\n" in text and "\n" in old:
            # The model wrote \n line ends; the file uses \r\n.
            old, new = _crlf(old), _crlf(new)
            count = text.count(old)
        if count == 0:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"`{old_name}` was not found in `{shown}`. It must match the file exactly, "
                "including whitespace and indentation; read the file again"
                f"{with_tool(ctx, Kind.READ)} and copy the text to replace.",
            )
        if count > 1 and not args.replace_all:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{old_name}` occurs {count} times in `{shown}`. Include more surrounding "
                f"lines to make it unique, or set `{ctx.param_name('replace_all')}` to true "
                "to replace every occurrence.",
            )
        first = text.index(old)
        updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        try:
            fs.write_atomic(entry, encode(updated, ctx.param_name("new_string")))
        except OSError as exc:
            raise os_error(exc, shown) from None
        return EditFileOutput(
            path=shown,
            replacements=count if args.replace_all else 1,
            first_line=text.count("\n", 0, first) + 1,
        )
