"""Where media comes from: the :class:`MediaClient` protocol and the shipped client
for OpenAI's Images and Videos APIs."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import anyio
from toolweave import ErrorKind, ToolError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "ImageRequest",
    "Media",
    "MediaClient",
    "OpenAIMediaClient",
    "VideoJob",
    "VideoRequest",
]

logger = logging.getLogger("toolweave.media")

JobStatus = Literal["queued", "in_progress", "completed", "failed"]


@dataclass(frozen=True, slots=True)
class ImageRequest:
    """An image to generate.

    Attributes:
        prompt: What the image shows.
        count: How many images.
        size: ``"1024x1024"`` and the like, or ``None`` for the model's default.
        model: The model, or ``None`` for the client's default.
    """

    prompt: str
    count: int = 1
    size: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class VideoRequest:
    """A video to generate, from words or from words and a first image.

    Attributes:
        prompt: What the video shows.
        seconds: Its length, or ``None`` for the model's default.
        size: ``"1280x720"`` and the like, or ``None`` for the model's default.
        model: The model, or ``None`` for the client's default.
        image: The first frame (an image file's bytes), for image-to-video.
        image_name: The image file's name (its extension tells its type).
    """

    prompt: str
    seconds: int | None = None
    size: str | None = None
    model: str | None = None
    image: bytes | None = None
    image_name: str = "image.png"


@dataclass(frozen=True, slots=True)
class Media:
    """One generated file.

    Attributes:
        data: Its bytes.
        extension: Its file extension, without the dot (``png``, ``mp4``).
        metadata: What the service said about it (model, size, revised prompt).
    """

    data: bytes
    extension: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VideoJob:
    """A video being generated.

    Attributes:
        id: The service's id of the job.
        status: Where it stands.
        progress: Percent done, when the service says.
        error: Why it failed.
        metadata: What else the service said (model, size, seconds).
    """

    id: str
    status: JobStatus
    progress: float | None = None
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class MediaClient(Protocol):
    """A media-generation service, as the tools use it. A host gives a session its own
    (``resources.insert(client, MediaClient)``) to use another service or account;
    without one the tools use :class:`OpenAIMediaClient`.

    Methods raise :class:`~toolweave.ToolError` for what the model should read (a
    refused prompt: ``invalid_params``; no account: ``unavailable``).
    """

    async def generate_image(self, request: ImageRequest) -> list[Media]:
        """The images, at once."""
        ...

    async def start_video(self, request: VideoRequest) -> VideoJob:
        """Start generating a video."""
        ...

    async def video_status(self, job_id: str) -> VideoJob:
        """Where the job stands now."""
        ...

    async def download_video(self, job_id: str) -> Media:
        """The finished video."""
        ...

    async def cancel_video(self, job_id: str) -> None:
        """Stop the job (best effort; the call that started it was cancelled)."""
        ...


VIDEO_GONE = (
    "OpenAI's Videos API was shut down on 24 September 2026, so the shipped client makes "
    "no videos; give the session a MediaClient of a video service"
)


class OpenAIMediaClient:
    """:class:`MediaClient` over OpenAI's Images API (``images.generate``). It makes no
    videos: OpenAI's Videos API (Sora) was shut down on 24 September 2026, and the video
    methods answer ``unavailable``; a host with a video service gives the session a
    :class:`MediaClient` of its own.

    Args:
        client: The SDK client; by default one configured from the environment
            (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``), made on first use.
        image_model: The default image model.
    """

    def __init__(
        self, client: AsyncOpenAI | None = None, *, image_model: str = "gpt-image-1"
    ) -> None:
        self._client = client
        self.image_model = image_model

    def __repr__(self) -> str:
        return f"<OpenAIMediaClient images={self.image_model}>"

    @property
    def client(self) -> AsyncOpenAI:
        """The SDK client."""
        if self._client is None:
            import openai

            try:
                self._client = openai.AsyncOpenAI()
            except openai.OpenAIError as exc:
                raise ToolError(
                    ErrorKind.UNAVAILABLE,
                    f"media generation is not set up: {exc} (set OPENAI_API_KEY, or give "
                    "the session a MediaClient)",
                ) from None
        return self._client

    async def generate_image(self, request: ImageRequest) -> list[Media]:
        """``images.generate``; images come back as base64 and are decoded."""
        options: dict[str, Any] = {"n": request.count}
        if request.size:
            options["size"] = request.size
        model = request.model or self.image_model
        answer = await _sdk(
            self.client.images.generate(prompt=request.prompt, model=model, **options)
        )
        found = []
        for image in answer.data or []:
            if not image.b64_json:
                continue
            meta = {"model": model, "size": answer.size or request.size}
            if image.revised_prompt:
                meta["revised_prompt"] = image.revised_prompt
            data = base64.b64decode(image.b64_json)
            found.append(Media(data, answer.output_format or image_type(data) or "bin", meta))
        if not found:
            raise ToolError(ErrorKind.EXECUTION_ERROR, "the service returned no image")
        return found

    async def start_video(self, request: VideoRequest) -> VideoJob:
        """Refused: OpenAI's Videos API (Sora) was shut down on 24 September 2026."""
        raise ToolError(ErrorKind.UNAVAILABLE, VIDEO_GONE)

    async def video_status(self, job_id: str) -> VideoJob:
        """Refused, as :meth:`start_video`."""
        raise ToolError(ErrorKind.UNAVAILABLE, VIDEO_GONE)

    async def download_video(self, job_id: str) -> Media:
        """Refused, as :meth:`start_video`."""
        raise ToolError(ErrorKind.UNAVAILABLE, VIDEO_GONE)

    async def cancel_video(self, job_id: str) -> None:
        """Nothing to cancel."""


async def _sdk(pending: Any) -> Any:
    """Await an SDK call; its errors become tool errors the model can read."""
    import openai

    try:
        return await pending
    except openai.AuthenticationError as exc:
        raise ToolError(
            ErrorKind.UNAUTHORIZED, f"the media service refused the key: {exc}"
        ) from None
    except openai.BadRequestError as exc:
        raise ToolError(ErrorKind.INVALID_PARAMS, f"the media service refused: {exc}") from None
    except openai.NotFoundError as exc:
        raise ToolError(ErrorKind.NOT_FOUND, f"the media service does not know it: {exc}") from None
    except openai.RateLimitError as exc:
        raise ToolError(ErrorKind.RATE_LIMITED, f"the media service is busy: {exc}") from None
    except openai.APITimeoutError:
        raise ToolError(ErrorKind.TIMEOUT, "the media service did not answer in time") from None
    except openai.APIConnectionError as exc:
        raise ToolError(ErrorKind.UNAVAILABLE, f"the media service is unreachable: {exc}") from None
    except openai.APIStatusError as exc:
        raise ToolError(
            ErrorKind.EXECUTION_ERROR, f"the media service failed ({exc.status_code}): {exc}"
        ) from None


def image_type(data: bytes) -> str | None:
    """The file extension of a PNG, JPEG or WebP image from its first bytes, else
    ``None``."""
    if data.startswith(b"\x89PNG"):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


async def cancel_quietly(client: MediaClient, job_id: str) -> None:
    """Ask the service to stop a job, within a few seconds, whatever happens."""
    with anyio.move_on_after(5, shield=True):
        try:
            await client.cancel_video(job_id)
        except Exception as exc:  # a failed cancel must not hide the cancellation
            logger.warning("could not cancel video job %s: %s", job_id, exc)
