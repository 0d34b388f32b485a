"""``image_gen``, ``video_gen`` and ``image_to_video``: media made by the session's
:class:`MediaClient`, saved into the workspace.

Files are written inside the workspace only (walked from its root's descriptor, never
following a link out), never over an existing file: a taken name gets ``-2``, ``-3``
... Every file the client sent is checked before any is written; each is written whole
into a temporary file of its folder and only then linked under its name, and a call
that fails removes the files it wrote (all its files are saved, or none; folders it
made for them stay, empty). They are written (and the image of ``image_to_video`` is
read) in a worker thread, never on the event loop, so a large file or a slow file
system holds up no other call.
Videos are jobs: the tools stream the job's progress, poll it at the configured
interval until it ends or the deadline passes, and ask the service to stop a job whose
call was cancelled or ran out of time.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Progress, Tool, ToolError, ToolOutput, preview
from toolweave.resources import FileRefused, Location, Workspace, read_regular

from toolweave_media._client import (
    ImageRequest,
    Media,
    MediaClient,
    OpenAIMediaClient,
    VideoRequest,
    cancel_quietly,
    image_type,
)

__all__ = [
    "ImageGen",
    "ImageGenArgs",
    "ImageToVideo",
    "ImageToVideoArgs",
    "MediaOutput",
    "MediaParams",
    "SavedFile",
    "VideoGen",
    "VideoGenArgs",
    "client_of",
]


class MediaParams(BaseModel):
    """Configuration of the media tools."""

    output_dir: str = "media"
    """Where files go when the call names no path (relative to the workspace)."""
    image_model: str | None = None
    """The image model; ``None``: the client's default."""
    video_model: str | None = None
    """The video model; ``None``: the client's default."""
    timeout_s: float = Field(default=900.0, gt=0, le=7200)
    """How long a video job may take before the call gives up (and cancels it)."""
    poll_interval_s: float = Field(default=5.0, ge=0.01, le=300)
    """Seconds between two looks at a video job."""
    max_bytes: int = Field(default=500_000_000, ge=1)
    """The largest file a tool saves; a larger one is refused."""
    max_images: int = Field(default=4, ge=1, le=10)
    """The most images one call may ask for."""


class SavedFile(BaseModel):
    """A file a tool saved."""

    path: str
    """Relative to the workspace."""
    bytes: int
    metadata: dict[str, Any] = Field(default_factory=dict)
    """What the service said about it (model, size, revised prompt, job id)."""


class MediaOutput(ToolOutput):
    """What a media tool made."""

    files: list[SavedFile]

    def to_model(self) -> str:
        """One line per file: its path, size and what the service said."""
        lines = []
        for saved in self.files:
            meta = ", ".join(f"{k}: {v}" for k, v in saved.metadata.items() if v not in (None, ""))
            lines.append(
                f"Saved `{saved.path}` ({saved.bytes:,} bytes)" + (f"; {meta}" if meta else "")
            )
        return "\n".join(lines)


class _OutputArgs(BaseModel):
    path: str | None = Field(
        default=None,
        description="Where to save the file in the workspace (e.g. 'assets/logo.png'); by "
        "default a name made from the prompt in the configured media folder. An existing "
        "file is never replaced: the name gets -2, -3, ...",
    )


class ImageGenArgs(_OutputArgs):
    """Arguments of image_gen."""

    prompt: str = Field(min_length=1, max_length=32_000, description="What the image shows.")
    count: int = Field(default=1, ge=1, le=10, description="How many images (1 by default).")
    size: str | None = Field(
        default=None,
        pattern=r"^(auto|\d{2,5}x\d{2,5})$",
        description="Width x height in pixels (e.g. '1024x1024', '1536x1024'), or 'auto'.",
    )


class VideoGenArgs(_OutputArgs):
    """Arguments of video_gen."""

    prompt: str = Field(min_length=1, max_length=32_000, description="What the video shows.")
    seconds: int | None = Field(
        default=None, ge=1, le=60, description="Its length in seconds (e.g. 4, 8 or 12)."
    )
    size: str | None = Field(
        default=None,
        pattern=r"^\d{2,5}x\d{2,5}$",
        description="Width x height in pixels (e.g. '1280x720', '720x1280').",
    )


class ImageToVideoArgs(VideoGenArgs):
    """Arguments of image_to_video."""

    image_path: str = Field(
        min_length=1,
        description="The workspace image (PNG, JPEG or WebP) the video starts from.",
    )


def client_of(ctx: Context) -> MediaClient:
    """The session's :class:`MediaClient`: the host's, else the OpenAI client."""
    found = ctx.resources.get(MediaClient)  # type: ignore[type-abstract]
    if found is not None:
        return found
    return ctx.resources.get_or_default(OpenAIMediaClient, OpenAIMediaClient)


class ImageGen(Tool[ImageGenArgs, MediaOutput]):
    """Generates images from a prompt."""

    id = "image_gen"
    namespace = "media"
    kind = Kind.IMAGE_GEN
    params = MediaParams
    description = (
        "Generate images from a description and save them into the workspace; answers "
        "with each file's path and what the service said about it (e.g. its revised "
        "prompt). Describe subject, style, composition and colours. Do not use it to "
        "edit or read existing images, or to make diagrams that code can draw."
    )

    async def run(self, ctx: Context, args: ImageGenArgs) -> MediaOutput:
        """Ask the client, save what comes back."""
        params = ctx.params(MediaParams)
        if args.count > params.max_images:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"at most {params.max_images} images per call; ask for fewer "
                f"`{ctx.param_name('count')}`",
            )
        target = _target(ctx, params, args.path, args.prompt)
        request = ImageRequest(args.prompt, args.count, args.size, params.image_model)
        made = await client_of(ctx).generate_image(request)
        return MediaOutput(files=await _save_all(ctx, params, made, target))


class VideoGen(Tool[VideoGenArgs, MediaOutput]):
    """Generates a video from a prompt."""

    id = "video_gen"
    namespace = "media"
    kind = Kind.VIDEO_GEN
    params = MediaParams
    description = (
        "Generate a short video from a description and save it into the workspace as "
        "MP4; it takes minutes, with progress reported as it goes. Describe the shot, the "
        "subject, the motion and the style. Do not use it to animate an existing image "
        "(use {tool:image_to_video|the image-to-video tool}) or to make still images."
    )

    async def stream(
        self, ctx: Context, args: VideoGenArgs
    ) -> AsyncIterator[Progress | MediaOutput]:
        """Start the job, report its progress, save the video."""
        params = ctx.params(MediaParams)
        target = _target(ctx, params, args.path, args.prompt)
        request = VideoRequest(args.prompt, args.seconds, args.size, params.video_model)
        async for item in _video(ctx, params, request, target):
            yield item


class ImageToVideo(Tool[ImageToVideoArgs, MediaOutput]):
    """Generates a video that starts from a workspace image."""

    id = "image_to_video"
    namespace = "media"
    kind = Kind.IMAGE_TO_VIDEO
    params = MediaParams
    description = (
        "Generate a short video that starts from an image of the workspace and moves as "
        "described, saved into the workspace as MP4; it takes minutes, with progress "
        "reported as it goes. Do not use it without an image (use {tool:video_gen|the "
        "video tool}) or to edit the image itself."
    )

    async def stream(
        self, ctx: Context, args: ImageToVideoArgs
    ) -> AsyncIterator[Progress | MediaOutput]:
        """Read the image, start the job, report its progress, save the video."""
        params = ctx.params(MediaParams)
        target = _target(ctx, params, args.path, args.prompt)
        workspace = ctx.resources.require(Workspace)
        image, name = await anyio.to_thread.run_sync(
            _read_image, workspace, params.max_bytes, args.image_path
        )
        request = VideoRequest(
            args.prompt, args.seconds, args.size, params.video_model, image=image, image_name=name
        )
        async for item in _video(ctx, params, request, target):
            yield item


async def _video(
    ctx: Context, params: MediaParams, request: VideoRequest, target: tuple[str, str | None]
) -> AsyncIterator[Progress | MediaOutput]:
    client = client_of(ctx)
    deadline = time.monotonic() + params.timeout_s
    job = await client.start_video(request)
    known = dict(job.metadata)
    done = False
    try:
        yield Progress(f"video job {job.id}: {job.status}", progress=job.progress, total=100)
        last: tuple[str, float | None] = (job.status, job.progress)
        while job.status in ("queued", "in_progress"):
            if time.monotonic() >= deadline:
                raise ToolError(
                    ErrorKind.TIMEOUT,
                    f"the video was not ready within {params.timeout_s:g} s (job {job.id} "
                    f"was {job.status}, {job.progress or 0:g} % done); it was cancelled",
                )
            await anyio.sleep(min(params.poll_interval_s, max(0.0, deadline - time.monotonic())))
            job = await client.video_status(job.id)
            known.update(job.metadata)
            if (job.status, job.progress) != last:
                last = (job.status, job.progress)
                yield Progress(
                    f"video job {job.id}: {job.status}", progress=job.progress, total=100
                )
        if job.status != "completed":
            done = True
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"the video job {job.id} failed: {job.error or job.status}",
            )
        video = await client.download_video(job.id)
        done = True
    finally:
        if not done:
            await cancel_quietly(client, job.id)
    if not isinstance(video, Media):
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"the media client returned {type(video).__name__} for the video, not Media; "
            "nothing was saved",
        )
    extra = video.metadata if isinstance(video.metadata, dict) else {}
    meta = {**known, **extra, "video_id": job.id}
    media = Media(video.data, video.extension, meta)
    yield MediaOutput(files=await _save_all(ctx, params, [media], target))


def _read_image(workspace: Workspace, max_bytes: int, asked: str) -> tuple[bytes, str]:
    """The image at ``asked`` and its name: a regular file of at most ``max_bytes``,
    opened without blocking (a FIFO is refused, not waited on) and read no further
    than the limit (run it in a worker thread: it reads a file)."""
    try:
        with workspace.open(asked, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC) as entry:
            assert entry.fd is not None
            data = read_regular(entry.fd, max_bytes)
            name = entry.name
    except FileRefused as refused:  # a directory, a FIFO or device, too large
        raise ToolError(ErrorKind.INVALID_PARAMS, f"`{asked}` {refused}") from None
    except FileNotFoundError:
        raise ToolError(ErrorKind.NOT_FOUND, f"`{asked}` does not exist in the workspace") from None
    except IsADirectoryError:
        raise ToolError(ErrorKind.INVALID_PARAMS, f"`{asked}` is a directory") from None
    except OSError as exc:
        raise ToolError(
            ErrorKind.EXECUTION_ERROR, f"`{asked}` cannot be read: {exc.strerror}"
        ) from None
    if image_type(data) is None:
        raise ToolError(ErrorKind.INVALID_PARAMS, f"`{asked}` is not a PNG, JPEG or WebP image")
    return data, name


def _target(
    ctx: Context, params: MediaParams, path: str | None, prompt: str
) -> tuple[str, str | None]:
    """Where the files go: the path without its extension, and the extension asked for
    (``None``: the media's own). Checked before anything is made or written.

    Raises:
        ToolError: ``invalid_params`` for a path naming no file (``dir/``);
            ``permission_denied`` for one leading outside the workspace.
    """
    workspace = ctx.resources.require(Workspace)
    if path is None:
        stem = "-".join(re.findall(r"[a-z0-9]+", prompt.lower())[:6]) or "media"
        base = f"{params.output_dir.rstrip('/')}/{stem}"
        suffix = None
    else:
        base, dot, ext = path.rpartition(".")
        if not dot or "/" in ext:
            base, suffix = path, None
        else:
            suffix = ext
        if base.rpartition("/")[2] in ("", ".", ".."):
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"`{path}` names no file; end it with a file name such as `picture.png`",
            )
        # The whole path is checked before a directory on its way is made, so a refused
        # path (`new/../../out.png`) leaves nothing behind.
        workspace.resolve(path)
    return base, suffix


_EXTENSION = re.compile(r"[A-Za-z0-9]{1,16}")
"""What a media client's file extension may be (``png``, ``mp4``)."""

MAX_NAMES = 999
"""Names tried for one file: ``base.ext``, then ``base-2.ext`` to ``base-999.ext``."""

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _checked(
    made: object, max_bytes: int, suffix: str | None
) -> list[tuple[bytes, str, dict[str, Any]]]:
    """Every file of the client's answer as (data, extension, metadata), all of them
    checked (the answer's type, each file's data type, size and extension) before any
    is written.

    Raises:
        ToolError: ``execution_error`` naming what is wrong; nothing is written.
    """
    if not isinstance(made, (list, tuple)):
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"the media client returned {type(made).__name__}, not a list of Media; "
            "nothing was saved",
        )
    if not made:
        raise ToolError(ErrorKind.EXECUTION_ERROR, "the media service returned no file")
    checked: list[tuple[bytes, str, dict[str, Any]]] = []
    for number, media in enumerate(made, 1):
        which = f"file {number} of {len(made)}" if len(made) > 1 else "the file"
        if not isinstance(media, Media):
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"the media client returned {type(media).__name__} as {which}, not Media; "
                "nothing was saved",
            )
        data: object = media.data
        if isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        if not isinstance(data, bytes):
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"the media client sent {which} as {type(data).__name__}, not bytes; "
                "nothing was saved",
            )
        if len(data) > max_bytes:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"the service sent {len(data):,} bytes as {which}, over the limit of "
                f"{max_bytes:,}; nothing was saved",
            )
        extension = suffix if suffix is not None else media.extension
        if suffix is None and not (isinstance(extension, str) and _EXTENSION.fullmatch(extension)):
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"the media client gave {which} the extension {preview(repr(extension))}, "
                "which is not a file extension (letters and digits); nothing was saved",
            )
        metadata = dict(media.metadata) if isinstance(media.metadata, dict) else {}
        checked.append((data, extension, metadata))
    return checked


async def _save_all(
    ctx: Context, params: MediaParams, made: list[Media], target: tuple[str, str | None]
) -> list[SavedFile]:
    """Save ``made`` in a worker thread (a call cancelled meanwhile returns once the
    files are written): all of them, or none (every file is checked first, and those
    written before a failure are removed again)."""
    workspace = ctx.resources.require(Workspace)
    base, suffix = target
    checked = _checked(made, params.max_bytes, suffix)
    return await anyio.to_thread.run_sync(_write_all, workspace, checked, base)


class _Staged:
    """A file being saved: its bytes in a temporary file of the folder it goes to,
    then linked under its final name (never replacing anything).

    Attributes:
        entry: The final name as first asked, held by a descriptor of its folder
            (links in the folder are never followed from here on).
        stem: The file's name without its extension.
        extension: Its extension.
        size: Its bytes.
        temp: The temporary file's name in the folder (``None`` once gone).
        final: The name it was saved under (``None`` until then).
        ident: The temporary file's device and inode (what ``final`` must still be
            to be removed again).
    """

    __slots__ = ("entry", "extension", "final", "ident", "size", "stem", "temp")

    def __init__(self, entry: Location, extension: str, size: int) -> None:
        self.entry = entry
        self.extension = extension
        self.stem = entry.name[: len(entry.name) - len(extension) - 1]
        self.size = size
        self.temp: str | None = None
        self.final: str | None = None
        self.ident = (0, 0)

    @property
    def shown(self) -> str:
        """The saved file's path relative to the workspace."""
        return "/".join((*self.entry.parts[:-1], self.final or self.entry.name))

    def write(self, data: bytes) -> None:
        """Write ``data`` to a new temporary file of the folder, completely (flushed
        and synced), or remove it again."""
        dir_fd = self.entry.dir_fd
        while True:
            name = f".{secrets.token_hex(8)}.media-part"
            try:
                fd = os.open(name, _CREATE, 0o644, dir_fd=dir_fd)
            except FileExistsError:
                continue
            break
        self.temp = name
        try:
            with os.fdopen(fd, "wb", closefd=False) as file:
                file.write(data)
            os.fsync(fd)
            info = os.fstat(fd)
            self.ident = (info.st_dev, info.st_ino)
        finally:
            os.close(fd)

    def publish(self) -> None:
        """Give the complete file its name: the first free one of ``stem.ext``,
        ``stem-2.ext``..., linked to the temporary file (a hard link never replaces an
        existing entry, a link included) which is then removed."""
        dir_fd, temp = self.entry.dir_fd, self.temp
        assert temp is not None
        for number in range(1, MAX_NAMES + 1):
            suffix = "" if number == 1 else f"-{number}"
            name = f"{self.stem}{suffix}.{self.extension}"
            try:
                os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
                # A file system without hard links: hold the name with an empty file of
                # our own, then move the complete one over it.
                try:
                    held = os.open(name, _CREATE, 0o644, dir_fd=dir_fd)
                except FileExistsError:
                    continue
                try:
                    info = os.fstat(held)
                finally:
                    os.close(held)
                written, self.ident = self.ident, (info.st_dev, info.st_ino)
                self.final = name
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                self.ident, self.temp = written, None
                return
            self.final = name
            self._remove_temp()
            return
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"`{self.stem}.{self.extension}` and {MAX_NAMES - 1} variants are taken",
        )

    def undo(self) -> bool:
        """Remove what was written (the temporary file, and the saved file while it is
        still the one written here); ``False`` when the saved file stays."""
        self._remove_temp()
        if self.final is None:
            return True
        try:
            info = os.stat(self.final, dir_fd=self.entry.dir_fd, follow_symlinks=False)
            if (info.st_dev, info.st_ino) != self.ident:
                return True  # replaced by someone else since: theirs now
            os.unlink(self.final, dir_fd=self.entry.dir_fd)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        self.final = None
        return True

    def _remove_temp(self) -> None:
        if self.temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temp, dir_fd=self.entry.dir_fd)
            self.temp = None


_NO_LINKS = {
    errno.EPERM,
    errno.EOPNOTSUPP,
    errno.ENOTSUP,
    errno.ENOSYS,
    errno.EMLINK,
    errno.EXDEV,
}
"""``link`` errors of a file system that has no hard links (or no more for this file)."""


def _write_all(
    workspace: Workspace, checked: list[tuple[bytes, str, dict[str, Any]]], base: str
) -> list[SavedFile]:
    """Write every checked file as a new file ``base.ext`` (or ``base-N.ext``) of the
    workspace, each complete in a temporary file of its folder before it gets its name;
    on any failure remove what this call wrote (run it in a worker thread: it writes
    files).

    Raises:
        ToolError: ``execution_error`` (or the walk's ``permission_denied``) naming the
            file that could not be written; nothing of this call is left, or the error
            names the files that could not be removed.
    """
    staged: list[_Staged] = []
    current = f"{base}.{checked[0][1]}"
    try:
        try:
            for data, extension, _ in checked:
                current = f"{base}.{extension}"
                entry = workspace.locate(current, follow_final_link=False, create_parents=True)
                item = _Staged(entry, extension, len(data))
                staged.append(item)
                item.write(data)
            for item in staged:
                current = f"{base}.{item.extension}"
                item.publish()
        except OSError as exc:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR,
                f"`{current}` could not be written: {exc.strerror or exc}",
            ) from None
    except BaseException as exc:
        kept = [item.shown for item in staged if not item.undo()]
        if kept and isinstance(exc, ToolError):
            files = ", ".join(f"`{path}`" for path in kept)
            raise ToolError(
                exc.kind,
                f"{exc.message}; saved before that and left in place: {files}",
                exc.data,
            ) from None
        if isinstance(exc, ToolError) and len(checked) > 1:
            raise ToolError(
                exc.kind,
                f"{exc.message}; none of the {len(checked)} files was saved",
                exc.data,
            ) from None
        raise
    finally:
        for item in staged:
            item.entry.close()
    return [
        SavedFile(path=item.shown, bytes=item.size, metadata=metadata)
        for item, (_, _, metadata) in zip(staged, checked, strict=True)
    ]
