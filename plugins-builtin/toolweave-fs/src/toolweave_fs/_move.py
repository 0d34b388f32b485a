"""``move``: rename or move a file, link or directory inside the workspace."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets

from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Tool, ToolError, ToolOutput
from toolweave.errors import preview
from toolweave.resources import Location

from toolweave_fs._filesystem import EntryType, FileSystem, entry_type, filesystem, os_error

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
    same_file: bool = False
    """``True`` when the destination was already a hard link to the source: nothing
    was replaced, and only the source's name was removed."""

    def to_model(self) -> str:
        """One line saying what moved where."""
        if self.same_file:
            return (
                f"Moved {self.type} `{self.source}` to `{self.destination}`: "
                f"`{self.destination}` was already a hard link to the same file, so only "
                f"the name `{self.source}` was removed."
            )
        extra = " (replacing the file that was there)" if self.replaced else ""
        return f"Moved {self.type} `{self.source}` to `{self.destination}`{extra}."


class Move(Tool[MoveArgs, MoveOutput]):
    """Moves a path of the workspace to another path of the workspace.

    A move either happens whole or changes nothing: the destination is never removed
    before the move is known to succeed (see :func:`_move`).
    """

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
            # Before the destination's missing parents are made: refuse what can be told
            # from the paths already, so that a refused move leaves nothing behind.
            _precheck(fs, src, kind, src_shown, args.destination)
            with fs.entry(args.destination, follow_final_link=False, create_parents=True) as dst:
                dst_shown = fs.spell(dst.relative)
                replaced, same_file = _move(
                    src, dst, kind, src_shown, dst_shown, overwrite=args.overwrite, ctx=ctx
                )
        return MoveOutput(
            source=src_shown,
            destination=dst_shown,
            type=kind,
            replaced=replaced,
            same_file=same_file,
        )


def _into_itself(src_shown: str, inner: str) -> ToolError:
    return ToolError(
        ErrorKind.INVALID_PARAMS, f"`{src_shown}` cannot be moved into itself (`{inner}`)"
    )


def _other_file_system(src_shown: str, dst_shown: str) -> ToolError:
    return ToolError(
        ErrorKind.EXECUTION_ERROR,
        f"`{src_shown}` and `{dst_shown}` are on different file systems; move renames "
        "within one file system only (nothing was moved)",
    )


def _below(parts: tuple[str, ...], folder: tuple[str, ...]) -> bool:
    """Whether the real path ``parts`` is ``folder`` or lies below it."""
    return parts[: len(folder)] == folder


def _precheck(fs: FileSystem, src: Location, kind: EntryType, src_shown: str, asked: str) -> None:
    """Refuse, from the destination's real path (every link on it followed), a directory
    moved into itself and a move to another file system, before anything is created.

    A check by path only: the walk of the destination and the rename itself decide
    (:func:`_move`); this one keeps the parents a refused move would make from being
    made.
    """
    try:
        real = fs.workspace.resolve(asked, follow_final_link=False)
    except ToolError:
        return  # the walk of the destination says why
    if real == fs.root:
        return  # refused as the destination (see _into_the_root)
    shown = fs.show(real)
    if kind == "directory" and _below(tuple(shown.split("/")), src.parts):
        raise _into_itself(src_shown, preview(shown))
    folder = real.parent  # inside the root, or the root itself
    try:
        while folder != fs.root and not folder.exists():
            folder = folder.parent
        other = os.stat(folder).st_dev != os.fstat(src.dir_fd).st_dev
    except (OSError, ValueError):
        return
    if other:
        raise _other_file_system(src_shown, preview(shown))


def _move(
    src: Location,
    dst: Location,
    kind: EntryType,
    src_shown: str,
    dst_shown: str,
    *,
    overwrite: bool,
    ctx: Context,
) -> tuple[bool, bool]:
    """Rename ``src`` to ``dst``, both relative to their directories' descriptors;
    returns whether a file at ``dst`` was replaced, and whether it was the same file.

    Every outcome is the move done or nothing changed:

    - nothing at ``dst``, or a file (link, ...) replaced by a file (link, ...): one
      ``rename``, which is atomic;
    - a directory at ``dst``: refused, whatever is moved;
    - a directory over a file or link (with ``overwrite``): ``rename`` cannot replace
      one by the other, so the old entry first steps aside to a temporary name in its
      folder, the directory is renamed, and the old entry is then removed, or put back
      when the rename failed;
    - ``dst`` a hard link of the same file as ``src`` (``rename`` would do nothing): the
      source's name is removed, so the file stays under the new name only;
    - a directory into itself (by any spelling or link: the real paths of the walk, and
      the kernel's own refusal), or another file system: refused before anything moves.
    """
    if dst.is_root:
        raise _into_the_root(src, src_shown, ctx.param_name("destination"))
    same_dir = os.path.samestat(os.fstat(src.dir_fd), os.fstat(dst.dir_fd))
    if same_dir and dst.name == src.name:
        raise ToolError(
            ErrorKind.INVALID_PARAMS, f"`{src_shown}` and `{dst_shown}` are the same path"
        )
    if kind == "directory" and _below(dst.parts, src.parts):
        raise _into_itself(src_shown, dst_shown)
    if os.fstat(src.dir_fd).st_dev != os.fstat(dst.dir_fd).st_dev:
        raise _other_file_system(src_shown, dst_shown)
    try:
        src_info = src.lstat()
    except OSError as exc:
        raise os_error(exc, src_shown) from None
    try:
        dst_info: os.stat_result | None = dst.lstat()
    except FileNotFoundError:
        dst_info = None
    except OSError as exc:
        raise os_error(exc, dst_shown) from None
    if (
        dst_info is not None
        and same_dir
        and os.path.samestat(src_info, dst_info)
        and not _both_listed(dst.dir_fd, src.name, dst.name)
    ):
        dst_info = None  # one entry under two spellings (a case-insensitive folder)
    if dst_info is None:
        _rename(src, dst, kind, src_shown, dst_shown)
        return False, False
    existing = entry_type(dst_info.st_mode)
    if existing == "directory":
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"`{dst_shown}` is an existing directory; give the full new path, "
            f"e.g. `{dst_shown}/{src.name}`",
        )
    if not overwrite:
        raise ToolError(
            ErrorKind.INVALID_PARAMS,
            f"`{dst_shown}` already exists; set `{ctx.param_name('overwrite')}` to "
            "true to replace it",
        )
    if os.path.samestat(src_info, dst_info) and src_info.st_nlink > 1:
        # Two hard links of one file: rename(2) would succeed doing nothing.
        try:
            os.unlink(src.name, dir_fd=src.dir_fd)
        except OSError as exc:
            raise os_error(exc, src_shown) from None
        return False, True
    if kind != "directory":
        _rename(src, dst, kind, src_shown, dst_shown)
        return True, False
    _replace_by_directory(src, dst, src_shown, dst_shown)
    return True, False


def _both_listed(dir_fd: int, first: str, second: str) -> bool:
    """Whether the directory open as ``dir_fd`` lists both names (two entries). A folder
    that cannot be listed counts as listing both: the names are then taken as two hard
    links, and removing one of them loses no data (the file has other names)."""
    wanted = {first, second}
    try:
        with os.scandir(dir_fd) as it:
            for child in it:
                wanted.discard(child.name)
                if not wanted:
                    return True
    except OSError:
        return True
    return False


def _rename(src: Location, dst: Location, kind: EntryType, src_shown: str, dst_shown: str) -> None:
    """``rename(2)`` of ``src`` to ``dst``, its failure as a tool error (nothing moved)."""
    try:
        os.replace(src.name, dst.name, src_dir_fd=src.dir_fd, dst_dir_fd=dst.dir_fd)
    except OSError as exc:
        raise _failed(exc, src, kind, src_shown, dst_shown) from None


def _replace_by_directory(src: Location, dst: Location, src_shown: str, dst_shown: str) -> None:
    """Put the directory ``src`` where the file (or link) ``dst`` is: the old entry steps
    aside to a temporary name in its folder, and comes back if the rename fails."""
    aside = f".{secrets.token_hex(8)}.move-aside"
    try:
        os.rename(dst.name, aside, src_dir_fd=dst.dir_fd, dst_dir_fd=dst.dir_fd)
    except OSError as exc:
        raise os_error(exc, dst_shown) from None
    try:
        os.rename(src.name, dst.name, src_dir_fd=src.dir_fd, dst_dir_fd=dst.dir_fd)
    except OSError as exc:
        error = _failed(exc, src, "directory", src_shown, dst_shown)
        try:
            os.rename(aside, dst.name, src_dir_fd=dst.dir_fd, dst_dir_fd=dst.dir_fd)
        except OSError as back:
            folder = dst_shown.rpartition("/")[0]
            kept = f"{folder}/{aside}" if folder else aside
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"{error.message}; the file that was at `{dst_shown}` could not be put "
                f"back ({back.strerror or back}) and is now `{kept}`",
            ) from None
        raise error from None
    with contextlib.suppress(OSError):
        os.unlink(aside, dir_fd=dst.dir_fd)


def _failed(
    exc: OSError, src: Location, kind: EntryType, src_shown: str, dst_shown: str
) -> ToolError:
    """The tool error of a failed rename of ``src`` to ``dst``."""
    if exc.errno == errno.EINVAL and kind == "directory":
        return _into_itself(src_shown, dst_shown)
    if exc.errno == errno.EXDEV:
        return _other_file_system(src_shown, dst_shown)
    try:
        src.lstat()
    except OSError:
        return os_error(exc, src_shown)
    return os_error(exc, dst_shown)


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
