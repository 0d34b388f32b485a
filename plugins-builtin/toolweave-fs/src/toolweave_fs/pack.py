"""The ``fs`` pack: the hooks toolweave calls through the ``toolweave.packs`` entry point."""

from __future__ import annotations

from toolweave import Resources, Session, ToolSetBuilder, hookimpl

from toolweave_fs._delete import Delete
from toolweave_fs._edit_file import EditFile
from toolweave_fs._filesystem import filesystem
from toolweave_fs._list_dir import ListDir
from toolweave_fs._move import Move
from toolweave_fs._read_file import ReadFile
from toolweave_fs._write_file import WriteFile

__all__ = ["TOOLS", "provide_resources", "register_tools"]

TOOLS = (ReadFile, WriteFile, EditFile, Delete, Move, ListDir)
"""The pack's tools, in listing order."""


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register the six file tools."""
    builder.add_all(TOOLS)


@hookimpl
def provide_resources(resources: Resources, session: Session) -> None:
    """Give the session a :class:`~toolweave_fs.FileSystem` over its workspace, unless
    the host provided one."""
    filesystem(resources)
