"""Where a search may look: paths the model sends, confined to the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from toolweave import ErrorKind, ToolError

__all__ = ["confine", "relative"]


def confine(root: Path, path: str | None) -> Path:
    """The real location of ``path`` (relative to ``root``, or absolute), inside ``root``.

    Every symbolic link is followed before the check, so no spelling leads outside.

    Raises:
        ToolError: ``invalid_params`` for a path that cannot be one, ``permission_denied``
            outside the workspace, ``not_found`` when nothing is there.
    """
    if path is None or path.strip() in ("", "."):
        return root
    if "\x00" in path:
        raise ToolError(ErrorKind.INVALID_PARAMS, "The path contains a NUL character.")
    given = Path(path)
    real = Path(os.path.realpath(given if given.is_absolute() else root / given))
    if real != root and root not in real.parents:
        raise ToolError(
            ErrorKind.PERMISSION_DENIED,
            f"{path!r} is outside the workspace ({root}); search inside it.",
        )
    if not real.exists():
        raise ToolError(ErrorKind.NOT_FOUND, f"{path!r} does not exist in the workspace.")
    return real


def relative(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (``""`` for the root itself)."""
    if path == root:
        return ""
    return path.relative_to(root).as_posix()
