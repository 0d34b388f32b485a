"""``image_gen``, ``video_gen`` and ``image_to_video``: media made by the session's
:class:`MediaClient`, saved into the workspace.

Files are written inside the workspace only (walked from its root's descriptor, never
following a link out), never over an existing file: a taken name gets ``-2``, ``-3``
... They are written (and the image of ``image_to_video`` is read) in a worker thread,
never on the event loop, so a large file or a slow file system holds up no other call.
Videos are jobs: the tools stream the job's progress, poll it at the configured
interval until it ends or the deadline passes, and ask the service to stop a job whose
call was cancelled or ran out of time.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from pydantic import BaseModel, Field
from toolweave import Context, ErrorKind, Kind, Progress, Tool, ToolError, ToolOutput
from toolweave.resources import Workspace

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
    meta = {**known, **video.metadata, "video_id": job.id}
    media = Media(video.data, video.extension, meta)
    yield MediaOutput(files=await _save_all(ctx, params, [media], target))


def _read_image(workspace: Workspace, max_bytes: int, asked: str) -> tuple[bytes, str]:
    """The image at ``asked`` and its name: a regular file of at most ``max_bytes``,
    opened without blocking (a FIFO is refused, not waited on) and read no further
    than the limit (run it in a worker thread: it reads a file)."""
    over = f"`{asked}` is over the limit of {max_bytes:,} bytes"
    try:
        with workspace.open(asked, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC) as entry:
            assert entry.fd is not None
            info = os.fstat(entry.fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(info.st_mode):
                raise ToolError(ErrorKind.INVALID_PARAMS, f"`{asked}` is not a regular file")
            if info.st_size > max_bytes:
                raise ToolError(ErrorKind.INVALID_PARAMS, over)
            chunks: list[bytes] = []
            left = max_bytes + 1
            while left > 0:
                chunk = os.read(entry.fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            if left <= 0:
                raise ToolError(
                    ErrorKind.INVALID_PARAMS, over
                )  # it grew past the limit since the size was looked at
            data = b"".join(chunks)
            name = entry.name
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


async def _save_all(
    ctx: Context, params: MediaParams, made: list[Media], target: tuple[str, str | None]
) -> list[SavedFile]:
    """Save ``made`` in a worker thread (a call cancelled meanwhile returns once the
    files are written)."""
    workspace = ctx.resources.require(Workspace)
    base, suffix = target

    def save_all() -> list[SavedFile]:
        return [_save(workspace, params, media, base, suffix or media.extension) for media in made]

    return await anyio.to_thread.run_sync(save_all)


def _save(
    workspace: Workspace, params: MediaParams, media: Media, base: str, extension: str
) -> SavedFile:
    """Write ``media`` as a new file ``base.extension`` (or ``base-N.extension``) of the
    workspace (run it in a worker thread: it writes the file)."""
    if len(media.data) > params.max_bytes:
        raise ToolError(
            ErrorKind.EXECUTION_ERROR,
            f"the service sent {len(media.data):,} bytes, over the limit of {params.max_bytes:,}",
        )
    for number in range(1, 1000):
        name = f"{base}.{extension}" if number == 1 else f"{base}-{number}.{extension}"
        try:
            with workspace.locate(name, create_parents=True) as entry:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                fd = os.open(entry.name, flags, 0o644, dir_fd=entry.dir_fd)
                with os.fdopen(fd, "wb") as file:
                    file.write(media.data)
                shown = "/".join(entry.parts)
        except FileExistsError:
            continue
        except OSError as exc:
            raise ToolError(
                ErrorKind.EXECUTION_ERROR, f"`{name}` could not be written: {exc.strerror}"
            ) from None
        return SavedFile(path=shown, bytes=len(media.data), metadata=media.metadata)
    raise ToolError(ErrorKind.EXECUTION_ERROR, f"`{base}.{extension}` and 998 variants are taken")
