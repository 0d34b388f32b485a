"""After a file is edited or written, the new errors its language server reports are
added to what the model reads (a cross-tool reminder, as a call hook: asking the
server takes a moment, which reminders may not)."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

from toolweave import CallHook, CallResult, HookCall, Kind, ToolEntry, ToolError
from toolweave.resources import Workspace

from toolweave_lsp._client import LspStopped, file_uri
from toolweave_lsp._servers import LspParams, servers_of
from toolweave_lsp._tools import Diagnostic, diagnostics_of

__all__ = ["EditDiagnostics"]

logger = logging.getLogger("toolweave.lsp")

MAX_SHOWN = 10
"""New errors listed at most after one edit."""


class EditDiagnostics(CallHook):
    """Adds "diagnostics found in files you edited" after a successful edit or write
    of a file a language server is configured for, when the server reports errors
    the file did not have before the call.

    Args:
        params: The configuration of the pack's ``diagnostics`` tool.
        name: What the model calls that tool.
    """

    def __init__(self, params: LspParams, name: str) -> None:
        self.params = params
        self.name = name
        self._known: dict[str, Counter[tuple[str, str]]] = {}
        """The errors each file had when last looked at (by message and source): a
        file's first edit learns them before it runs."""

    def applies_to(self, entry: ToolEntry) -> bool:
        """Tools that edit or write files."""
        return entry.kind in (Kind.EDIT, Kind.WRITE)

    async def before(self, call: HookCall) -> None:
        """Before the first change of a file, learn the errors it has already."""
        target = self._target(call)
        if target is not None and file_uri(target[1]) not in self._known:
            found = await self._errors(call, *target)
            if found is not None:
                self._known[file_uri(target[1])] = _count(found[0])

    async def after(self, call: HookCall, result: CallResult) -> str | None:
        """Ask the file's server for its errors; name those that are new."""
        target = self._target(call)
        found = None if target is None else await self._errors(call, *target)
        if target is None or found is None:
            return None
        errors, shown = found
        uri = file_uri(target[1])
        before = self._known.get(uri, Counter())
        self._known[uri] = _count(errors)
        new = [d for d in errors if _consume(before, d)]
        if not new:
            return None
        lines = [d.label(shown) for d in new[:MAX_SHOWN]]
        more = len(new) - len(lines)
        if more:
            lines.append(f"[{more} more; {self.name} lists them all]")
        return "Diagnostics found in files you edited:\n" + "\n".join(lines)

    def _target(self, call: HookCall) -> tuple[str, Path] | None:
        """The path the call names, as asked and resolved, when it is a file a server
        is configured for."""
        asked = _path_argument(call.arguments)
        if asked is None or servers_of(call).closed:
            return None
        try:
            path = call.resources.require(Workspace).resolve(asked)
        except ToolError:
            return None
        if servers_of(call).language_of(self.params, path) is None or not path.is_file():
            return None
        return asked, path

    async def _errors(
        self, call: HookCall, asked: str, path: Path
    ) -> tuple[list[Diagnostic], str] | None:
        """The errors of the file and its path as shown; ``None`` when its server
        fails."""
        try:
            found = await diagnostics_of(call, self.params, asked)
        except (ToolError, LspStopped) as exc:
            logger.info("no diagnostics for %s: %s", asked, exc)
            return None
        return [d for d in found.diagnostics if d.severity == "error"], found.path


def _path_argument(arguments: Any) -> str | None:
    for field in ("path", "file_path"):
        value = (
            arguments.get(field) if isinstance(arguments, dict) else getattr(arguments, field, None)
        )
        if isinstance(value, str) and value:
            return value
    return None


def _count(found: list[Diagnostic]) -> Counter[tuple[str, str]]:
    return Counter((d.message, d.source) for d in found)


def _consume(before: Counter[tuple[str, str]], diagnostic: Diagnostic) -> bool:
    """Whether ``diagnostic`` is new: not one of ``before`` (each counted once)."""
    key = (diagnostic.message, diagnostic.source)
    if before[key] > 0:
        before[key] -= 1
        return False
    return True
