"""What each kind of monitor does on its own thread until it is told to stop.

Every watcher runs on a thread of its own (named ``toolweave-monitor-<id>``) and reports
what it sees through a :data:`Report` callback, which hands it to the session's event
loop. A watcher returns soon after its ``stop`` event is set: file watching checks it
every 50 ms, process checks wait on it, and a URL watcher's requests are cancelled.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import watchfiles
from toolweave import ErrorKind, ToolError
from toolweave.netguard import AddressPolicy, guarded_request

from toolweave_monitor._state import MonitorStatus

__all__ = [
    "Report",
    "Seen",
    "UrlCheck",
    "describe_changes",
    "read_tail",
    "stays_inside",
    "url_status",
    "watch_path",
    "watch_process",
    "watch_url",
]

IGNORED_FOLDERS = (*watchfiles.DefaultFilter.ignore_dirs, ".toolweave")
"""Folders whose changes are never reported: the default filter's (``.git``,
``__pycache__``, ``node_modules``...) and toolweave's own state folder."""

MAX_NAMED = 5
"""Paths named at most in one event; the rest are counted."""

_VERBS = {
    watchfiles.Change.added: "added",
    watchfiles.Change.modified: "modified",
    watchfiles.Change.deleted: "deleted",
}


@dataclass(frozen=True, slots=True)
class Seen:
    """One thing a watcher saw.

    Attributes:
        text: What, in a line for the model.
        end: The monitor's status when this ends it (``ended``, ``failed``), else ``None``.
        note: Why it ended, when that needs saying.
        last_status: URLs: the status now.
        exit_code: Tasks: the exit code.
        output_tail: Tasks: the end of the output.
    """

    text: str
    end: MonitorStatus | None = None
    note: str | None = None
    last_status: str | None = None
    exit_code: int | None = None
    output_tail: str | None = None


Report = Callable[[Seen], None]
"""Called from the watcher's thread with what it saw."""


def describe_changes(
    changes: set[tuple[watchfiles.Change, str]], show: Callable[[str], str]
) -> str:
    """One line for a batch of file changes: ``modified a.py, added b.py (+3 more)``."""
    ordered = sorted(changes, key=lambda change: (change[1], change[0].value))
    named = [f"{_VERBS[change]} {show(path)}" for change, path in ordered[:MAX_NAMED]]
    more = len(ordered) - len(named)
    return ", ".join(named) + (f" (+{more} more)" if more else "")


def stays_inside(folder: str) -> Callable[[str], bool]:
    """Whether a changed path is really in ``folder`` (absolute, links resolved): its
    parent with every link resolved, and its own name, which is not followed (a link
    added in the folder is a change in the folder, wherever it leads).

    The watcher follows links to folders elsewhere (watchfiles has no option not to),
    so a link in the watched folder to a folder outside the workspace makes the files
    created there look like ``src/linked/...``; this tells them apart.
    """
    prefix = folder.rstrip(os.sep) + os.sep

    def check(changed: str) -> bool:
        parent, name = os.path.split(changed)
        try:
            real = os.path.join(os.path.realpath(parent), name)
        except (OSError, ValueError):
            return False
        return real == folder or real.startswith(prefix)

    return check


def watch_path(
    path: Path,
    *,
    is_file: bool,
    show: Callable[[str], str],
    batch_window_ms: int,
    stop: threading.Event,
    report: Report,
) -> None:
    """Report each batch of changes to ``path`` (a file: the file alone, followed by name
    through its folder, so a replaced file is still seen; a folder: everything under it
    whose real place is in it, never what a link in it leads to elsewhere).

    ``path`` is absolute with its links resolved (as :meth:`Workspace.resolve` gives it).
    """
    folder = path.parent if is_file else path
    wanted = str(path)
    inside = stays_inside(str(folder))
    ignored = watchfiles.DefaultFilter(ignore_dirs=IGNORED_FOLDERS)

    def only_the_file(change: watchfiles.Change, changed: str) -> bool:
        return changed == wanted

    def in_the_folder(change: watchfiles.Change, changed: str) -> bool:
        return ignored(change, changed) and inside(changed)

    try:
        for changes in watchfiles.watch(
            folder,
            watch_filter=only_the_file if is_file else in_the_folder,
            debounce=batch_window_ms,
            step=50,
            stop_event=stop,
            raise_interrupt=False,
            recursive=not is_file,
        ):
            if changes:
                report(Seen(describe_changes(changes, show)))
            if not folder.is_dir():
                report(Seen(f"{show(str(folder))} was removed", end="ended"))
                return
    except Exception as exc:  # the folder vanished under the watcher, inotify limits
        report(Seen(f"stopped watching: {exc}", end="failed", note=str(exc)))


def watch_process(
    check: Callable[[], Seen | None], *, interval_s: float, stop: threading.Event, report: Report
) -> None:
    """Call ``check`` every ``interval_s`` until it says the process ended."""
    while not stop.is_set():
        try:
            seen = check()
        except Exception as exc:
            report(Seen(f"could not check the process: {exc}", end="failed", note=str(exc)))
            return
        if seen is not None:
            report(seen)
            return
        stop.wait(interval_s)


def read_tail(path: str, chars: int) -> str:
    """The last ``chars`` characters of the file at ``path`` (``""`` when unreadable)."""
    if chars <= 0:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(size - chars * 4, 0))
            data = fh.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace")[-chars:]


@dataclass(frozen=True, slots=True)
class UrlCheck:
    """How a URL monitor makes its requests.

    Attributes:
        url: The http(s) URL.
        policy: The addresses it may reach.
        timeout_s: Seconds per request, look-up and redirects included.
        max_response_bytes: The most body bytes read.
    """

    url: str
    policy: AddressPolicy
    timeout_s: float
    max_response_bytes: int


async def url_status(check: UrlCheck) -> str:
    """The URL's status now: the HTTP status (``"200"``), or ``unreachable (<kind>)``.

    Raises:
        ToolError: ``permission_denied`` when the guard refuses an address (at any
            hop), ``invalid_params`` for a URL that is not http(s).
    """
    try:
        response = await guarded_request(
            "GET",
            check.url,
            policy=check.policy,
            timeout=check.timeout_s,
            max_bytes=check.max_response_bytes,
        )
    except ToolError as exc:
        if exc.kind in (ErrorKind.PERMISSION_DENIED, ErrorKind.INVALID_PARAMS):
            raise
        return f"unreachable ({exc.kind.value})"
    return str(response.status)


def watch_url(
    check: UrlCheck, *, last: str, interval_s: float, stop: threading.Event, report: Report
) -> None:
    """Request the URL every ``interval_s`` and report each change of its status, in an
    event loop of the thread's own (whose requests ``stop`` cancels)."""

    async def until_stopped(scope: anyio.CancelScope) -> None:
        # ``stop`` is set by another thread; waiting for it on a worker thread would
        # leave that worker behind after the monitor stops.
        while not stop.is_set():  # noqa: ASYNC110
            await anyio.sleep(0.05)
        scope.cancel()

    async def poll() -> None:
        previous = last
        async with anyio.create_task_group() as group:
            group.start_soon(until_stopped, group.cancel_scope)
            while True:
                await anyio.sleep(interval_s)
                try:
                    status = await url_status(check)
                except ToolError as exc:
                    report(Seen(f"refused: {exc.message}", end="failed", note=exc.message))
                    group.cancel_scope.cancel()
                    return
                if status != previous:
                    report(Seen(f"status {previous} -> {status}", last_status=status))
                    previous = status

    anyio.run(poll)
