"""The files toolweave and packs keep inside a workspace: ``<workspace>/.toolweave/``."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["FOLDER", "make_folder", "workspace_file"]

FOLDER = ".toolweave"
"""The folder of a workspace that holds toolweave's files (state, memories, a center)."""

_IGNORE = "# Created by toolweave: runtime state, not source.\n*\n"


def workspace_file(workspace: str | Path, name: str) -> Path:
    """``<workspace>/.toolweave/<name>``: where a pack keeps a file of the workspace.

    A workspace may come from elsewhere (a cloned repository), so neither its
    ``.toolweave`` folder nor the file may be a symbolic link: one would send what is
    written there (state, memories, the moving aside of a damaged file) wherever it
    points, into another workspace's files included. A host that wants a file elsewhere
    names that path itself.

    Raises:
        PermissionError: ``.toolweave`` or the file is a symbolic link.
    """
    path = Path(workspace) / FOLDER / name
    file = os.fspath(path)
    for part in (os.path.dirname(file), file):  # plain strings: cheaper than Paths
        try:
            mode = os.lstat(part).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break  # made by the first write (which fails while a file is in the way)
        if stat.S_ISLNK(mode):
            raise PermissionError(
                f"{part} is a symbolic link (to {os.readlink(part)}); a workspace's files "
                f"stay in its own {FOLDER} folder: remove the link, or have the host name "
                "a path elsewhere"
            )
    return path


def make_folder(file: Path) -> None:
    """Create the folder ``file`` goes in, if it is missing.

    A workspace's ``.toolweave`` folder is made only inside an existing workspace (a
    mistyped workspace is an error, not a new folder tree) and gets a ``.gitignore``
    that keeps its files out of the repository; any other folder is made with its
    parents.

    Raises:
        FileNotFoundError: The folder is a ``.toolweave`` folder whose workspace does
            not exist.
        OSError: The folder cannot be made.
    """
    folder = file.parent
    if folder.name != FOLDER:
        folder.mkdir(parents=True, exist_ok=True)
        return
    if folder.is_dir():
        return
    try:
        folder.mkdir()
    except FileExistsError:
        if not folder.is_dir():  # a file in the way, or a link: every write fails
            raise
        return  # another process made it first: it writes the .gitignore
    except FileNotFoundError:
        raise FileNotFoundError(
            f"the workspace {folder.parent} does not exist; its {FOLDER} folder is made "
            "only inside an existing workspace"
        ) from None
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text(_IGNORE)
