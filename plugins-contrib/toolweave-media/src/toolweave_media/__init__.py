"""Media-generation tools for toolweave: ``image_gen``, ``video_gen`` and
``image_to_video``.

The tools ask the session's :class:`MediaClient` (a protocol; a host inserts its own
with ``resources.insert(client, MediaClient)``) and save what comes back into the
workspace, answering with each file's path and metadata. Without a client of the
host's they use :class:`OpenAIMediaClient`, OpenAI's Images and Videos APIs through the
``openai`` SDK, configured from the environment (``OPENAI_API_KEY``).
"""

from __future__ import annotations

from toolweave_media import _pack as pack
from toolweave_media._client import (
    ImageRequest,
    Media,
    MediaClient,
    OpenAIMediaClient,
    VideoJob,
    VideoRequest,
)
from toolweave_media._tools import (
    ImageGen,
    ImageToVideo,
    MediaOutput,
    MediaParams,
    SavedFile,
    VideoGen,
)

__all__ = [
    "ImageGen",
    "ImageRequest",
    "ImageToVideo",
    "Media",
    "MediaClient",
    "MediaOutput",
    "MediaParams",
    "OpenAIMediaClient",
    "SavedFile",
    "VideoGen",
    "VideoJob",
    "VideoRequest",
    "pack",
]
