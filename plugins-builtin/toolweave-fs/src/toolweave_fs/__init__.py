"""toolweave-fs: file tools confined to the workspace.

``read_file``, ``write_file``, ``edit_file``, ``delete``, ``move`` and ``list_dir``,
registered through the entry point ``fs = "toolweave_fs:pack"``. Every path is
resolved (``..`` and symbolic links followed) and must stay inside the session's
workspace root; see :class:`FileSystem`.

Example:
    >>> import toolweave_fs
    >>> from toolweave import PackManager
    >>> packs = PackManager()
    >>> _ = packs.add("fs", toolweave_fs.pack)
    >>> packs.build().names
    ['read_file', 'write_file', 'edit_file', 'delete', 'move', 'list_dir']
"""

from __future__ import annotations

from toolweave_fs import pack
from toolweave_fs._delete import Delete, DeleteArgs, DeleteOutput
from toolweave_fs._edit_file import EditFile, EditFileArgs, EditFileOutput
from toolweave_fs._filesystem import FileSystem, filesystem
from toolweave_fs._list_dir import DirEntry, ListDir, ListDirArgs, ListDirOutput, ListDirParams
from toolweave_fs._move import Move, MoveArgs, MoveOutput
from toolweave_fs._read_file import ReadFile, ReadFileArgs, ReadFileOutput, ReadFileParams
from toolweave_fs._write_file import WriteFile, WriteFileArgs, WriteFileOutput

__version__ = "0.1.0"

__all__ = [
    "Delete",
    "DeleteArgs",
    "DeleteOutput",
    "DirEntry",
    "EditFile",
    "EditFileArgs",
    "EditFileOutput",
    "FileSystem",
    "ListDir",
    "ListDirArgs",
    "ListDirOutput",
    "ListDirParams",
    "Move",
    "MoveArgs",
    "MoveOutput",
    "ReadFile",
    "ReadFileArgs",
    "ReadFileOutput",
    "ReadFileParams",
    "WriteFile",
    "WriteFileArgs",
    "WriteFileOutput",
    "__version__",
    "filesystem",
    "pack",
]
