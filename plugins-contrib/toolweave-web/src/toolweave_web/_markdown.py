"""markdownify's converter, made to stop when asked.

Imported on the first conversion (by :func:`toolweave_web._convert.html_to_markdown`),
never when the pack loads: it imports markdownify and BeautifulSoup.
"""

from __future__ import annotations

import threading
from typing import Any

from markdownify import ATX, MarkdownConverter

from toolweave_web._convert import Stopped

__all__ = ["StoppableConverter"]


class StoppableConverter(MarkdownConverter):
    """The pack's Markdown style (ATX headings, ``-`` bullets, underscores as they are);
    each element checks ``stop`` first, so a conversion whose call was cancelled ends
    at its next element instead of running on in its worker thread.

    ``process_tag`` is markdownify's per-element step (called for every tag, at every
    depth). Should a later markdownify rename it, conversions only lose this early stop;
    the size limit on the HTML still keeps them short.
    """

    def __init__(self, stop: threading.Event | None) -> None:
        super().__init__(heading_style=ATX, bullets="-", escape_underscores=False)
        self._stop = stop

    def process_tag(self, *args: Any, **kwargs: Any) -> Any:
        """Convert one element, unless the conversion was abandoned."""
        if self._stop is not None and self._stop.is_set():
            raise Stopped
        return super().process_tag(*args, **kwargs)  # type: ignore[misc]  # not in the stubs
