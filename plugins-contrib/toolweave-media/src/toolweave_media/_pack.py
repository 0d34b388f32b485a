"""The pack's hook implementations: what toolweave calls when it loads the pack."""

from __future__ import annotations

from toolweave import ToolSetBuilder, hookimpl

from toolweave_media._tools import ImageGen, ImageToVideo, VideoGen


@hookimpl
def register_tools(builder: ToolSetBuilder) -> None:
    """Register image_gen, video_gen and image_to_video."""
    builder.add(ImageGen)
    builder.add(VideoGen)
    builder.add(ImageToVideo)
