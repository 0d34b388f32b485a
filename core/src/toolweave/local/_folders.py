"""Plugin folders: ``.py`` files whose ``@register_tool`` tools join the registry
center and attached sessions, followed while they change."""

from __future__ import annotations

import hashlib
import importlib.util
import linecache
import logging
import os
import re
import sys
import types
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, final

from toolweave.center import CenterError, ToolRecord, source_of
from toolweave.errors import UsageError, describe_exception, exception_text
from toolweave.local._base import BaseLocalTool, erase_local
from toolweave.local._feed import publish_alerts
from toolweave.local._marks import collecting, spec_of
from toolweave.resources import FileRefused, read_regular

if TYPE_CHECKING:
    from toolweave.catalog import ErasedTool
    from toolweave.center import Center
    from toolweave.runtime import Session

__all__ = [
    "DEFAULT_FOLDER",
    "ENV_PLUGINS",
    "PluginAlert",
    "PluginFile",
    "PluginFolders",
    "PluginTool",
]

logger = logging.getLogger("toolweave.local")

DEFAULT_FOLDER = Path("tools") / "plugins"
"""The plugin folder of a workspace, relative to its root."""
ENV_PLUGINS = "TOOLWEAVE_PLUGINS"
"""Plugin folders for the CLI, separated by ``os.pathsep`` (instead of the default)."""

DELETED = "its plugin file {file} was deleted"
"""The reason of the center's disable of a deleted file's tools."""
DROPPED = "no longer defined in plugin file {file}"
"""The reason of the center's disable of a tool its file no longer defines."""
_OURS = re.compile(r"^(its plugin file .+ was deleted|no longer defined in plugin file .+)$")

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""A tool name every provider format takes (the pattern of configured names)."""


@dataclass(frozen=True, slots=True)
class PluginAlert:
    """A plugin file that could not be loaded (or a tool of it left out).

    Attributes:
        file: The file.
        line: The line the problem is on (``None`` when unknown).
        message: What went wrong.
        source: The center source of the file's folder (``dir:<folder>``).
    """

    file: Path
    line: int | None
    message: str
    source: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else str(self.file)
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "file": str(self.file),
            "line": self.line,
            "message": self.message,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class PluginTool:
    """One tool a plugin file provides.

    Attributes:
        name: The client-visible name (the tool's id, or a ``BaseLocalTool``'s
            ``tool_name``).
        file: The file that defines it.
        source: Its center source (``dir:<folder>``).
        groups: The groups ``@register_tool`` gave it.
        roles: The role whitelist ``@register_tool`` gave it (``None``: every role).
        tool: The erased handle sessions run.
    """

    name: str
    file: Path
    source: str
    groups: tuple[str, ...]
    roles: tuple[str, ...] | None
    tool: ErasedTool

    def record(self) -> ToolRecord:
        """The tool as the registry center records it."""
        tool = self.tool
        try:
            schema = dict(tool.input_schema)
        except Exception:
            schema = {}
        return ToolRecord(
            name=self.name,
            source=self.source,
            fqid=tool.fqid,
            kind=tool.kind.value,
            description=tool.description,
            input_schema=schema,
            read_only=tool.read_only,
            groups=self.groups,
            roles=self.roles,
            versions=(tool.version,) if tool.version else (),
            default_version=tool.version,
        )


@dataclass(slots=True)
class PluginFile:
    """One ``.py`` file of a plugin folder, as last seen.

    Attributes:
        path: The file.
        folder: The plugin folder it is in.
        module: Its module name in ``sys.modules``.
        status: ``loaded`` (its tools are served), ``failed`` (it never loaded) or
            ``stale`` (its last version failed; the last good one is still served).
        tools: The names of the tools it provides now.
        alerts: Its current problems.
        waiting: Names of tools it defines that another file holds (it takes them when
            that file lets go).
    """

    path: Path
    folder: Path
    module: str
    status: Literal["loaded", "failed", "stale"] = "failed"
    tools: list[str] = field(default_factory=list)
    alerts: list[PluginAlert] = field(default_factory=list)
    waiting: set[str] = field(default_factory=set)
    digest: str = ""
    signature: tuple[int, int] = (0, 0)

    @property
    def source(self) -> str:
        """The center source of the file's folder."""
        return f"dir:{self.folder}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary."""
        return {
            "file": str(self.path),
            "folder": str(self.folder),
            "source": self.source,
            "status": self.status,
            "tools": list(self.tools),
            "alerts": [a.to_dict() for a in self.alerts],
        }


class _Failed(Exception):
    def __init__(self, alert: PluginAlert, alerts: list[PluginAlert] | None = None) -> None:
        super().__init__(str(alert))
        self.alerts = alerts or [alert]


@dataclass(slots=True)
class _Loaded:
    """What reading and importing one file gave, before it is applied."""

    file: PluginFile
    signature: tuple[int, int]
    digest: str
    data: bytes
    failed: list[PluginAlert] | None = None
    tools: list[PluginTool] = field(default_factory=list)
    alerts: list[PluginAlert] = field(default_factory=list)
    old: types.ModuleType | None = None
    done: bool = False


def _signature(path: Path) -> tuple[int, int]:
    """Modification time and size (of a link's target), ``(0, 0)`` when unreadable."""
    try:
        st = path.stat()
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


MAX_PLUGIN_BYTES = 16 * 1024 * 1024
"""The largest plugin file read: a bigger one is reported, not loaded."""


def _read(path: Path) -> bytes:
    """The bytes of a regular file (following links) of at most
    :data:`MAX_PLUGIN_BYTES`; never blocks on a FIFO or a device.

    Raises:
        OSError: It cannot be read, is not a regular file, or is too large.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return read_regular(fd, MAX_PLUGIN_BYTES)
    except FileRefused as refused:
        raise OSError(f"{path.name} {refused}") from None
    finally:
        os.close(fd)


def _module_name(path: Path) -> str:
    digest = hashlib.blake2b(str(path).encode(), digest_size=5).hexdigest()
    stem = re.sub(r"\W", "_", path.stem)
    return f"toolweave_plugin_{digest}_{stem}"


def _line_of(exc: BaseException, path: Path) -> int | None:
    """The line of ``path`` the exception points at: a syntax error's own line, else
    the last frame of the traceback in that file."""
    if isinstance(exc, SyntaxError) and exc.filename == str(path) and exc.lineno:
        return exc.lineno
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == str(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _describe(exc: BaseException) -> str:
    """What an alert says of the exception a file raised at import (its message read
    safely: a file's exception may fail to print, see
    :func:`~toolweave.errors.describe_exception`)."""
    if isinstance(exc, SyntaxError):
        return f"syntax error: {exc.msg}"
    if isinstance(exc, ImportError):
        return f"import error: {describe_exception(exc)}"
    return f"error while importing: {describe_exception(exc)}"


@final
class PluginFolders:
    """The plugin folders of a host: every ``.py`` file in them (recursively) imported,
    its ``@register_tool`` tools registered in the registry center (source
    ``dir:<folder>``, their groups and role whitelist) and added to every attached
    session as external tools under their own names; with :meth:`watch`, files added,
    changed and deleted are followed while sessions run.

    A file that fails to import is skipped with a :class:`PluginAlert` naming the file
    and line (logged, in :attr:`alerts`, and in the center's change feed as the
    ``plugin_alerts`` flag of ``source:dir:<folder>``); the other files load. A changed
    file that now fails keeps its last good version. A deleted file's tools leave the
    sessions and are disabled in the center with a reason naming the file (not
    unregistered: the audit and the operators' flags stay).

    Roles and groups are enforced by a registry center: a tool with a role whitelist
    joins only sessions attached to ``center`` (attach them to it first); without a
    center, or with a read-only one that cannot record the roles, it is left out with
    an alert rather than served to every role.

    Example:
        ```python
        center.attach(session, role="common_user")   # packs first: they keep their names
        plugins = PluginFolders(["tools/plugins"], center=center)
        plugins.attach(session)
        plugins.load()
        async with plugins.watching():
            ...                                      # edits reach the session
        ```

    Args:
        folders: The folders (default: ``tools/plugins`` under ``workspace``); relative
            ones are taken from ``workspace``. A folder that does not exist holds no
            files until it is created (a :meth:`rescan` or the watcher finds them).
        workspace: The root relative folders are resolved against (default: the
            current directory).
        center: The registry center the tools are registered in.
        actor: Who the center's audit names for the loader's changes (default: the
            user running the process).
        import_timeout: Seconds :meth:`watch` gives the import of one file, which it
            runs in a worker thread; one that takes longer is an alert and is left
            running (Python cannot stop it), and the other files load.
    """

    def __init__(
        self,
        folders: Iterable[str | Path] | None = None,
        *,
        workspace: str | Path | None = None,
        center: Center | None = None,
        actor: str | None = None,
        import_timeout: float = 30.0,
    ) -> None:
        root = Path(workspace) if workspace is not None else Path.cwd()
        chosen = [DEFAULT_FOLDER] if folders is None else [Path(f) for f in folders]
        resolved: list[Path] = []
        for folder in chosen:
            path = (root / folder.expanduser()).resolve()
            if path not in resolved:
                resolved.append(path)
        self.folders: tuple[Path, ...] = tuple(resolved)
        """The folders, absolute."""
        self.center = center
        self.actor = actor
        self.import_timeout = import_timeout
        """Seconds the watcher gives a file's import (in a worker thread)."""
        self.files: dict[Path, PluginFile] = {}
        """The files found, by path."""
        self.tools: dict[str, PluginTool] = {}
        """The tools served now, by client name."""
        self.version = 0
        """Bumped on every change of :attr:`tools` or :attr:`alerts`."""
        self.watch_ready = False
        """Whether :meth:`watch` is following the folders now (changes from now on are
        seen)."""
        self._sessions: list[tuple[Session, set[str]]] = []
        self._published: dict[str, dict[str, dict[str, Any]]] = {}

    def __repr__(self) -> str:
        return f"<PluginFolders {[str(f) for f in self.folders]} tools={sorted(self.tools)}>"

    @property
    def sources(self) -> list[str]:
        """The center sources of the folders (``dir:<folder>``)."""
        return [f"dir:{folder}" for folder in self.folders]

    @property
    def alerts(self) -> list[PluginAlert]:
        """The current problems of every file, by file."""
        return [alert for file in self.files.values() for alert in file.alerts]

    # -- sessions -------------------------------------------------------------------------

    def attach(self, session: Session) -> list[PluginAlert]:
        """Add the tools to ``session`` (external tools named as they are, no prefix) and
        keep it in step with every later change. A tool whose name the session already
        has (a pack's tool, an MCP server's) is left out of it, with an alert naming
        both sources.

        Returns:
            The alerts of tools left out of this session.
        """
        for known, _ in self._sessions:
            if known is session:
                return []
        self._sessions.append((session, set()))
        alerts = []
        for tool in list(self.tools.values()):
            alert = self._join(session, tool)
            if alert is not None:
                alerts.append(alert)
                self._remember(alert)
                file = self.files.get(tool.file)
                if file is not None and alert not in file.alerts:
                    file.alerts.append(alert)
        if alerts:
            self.version += 1
            self._publish()
        return alerts

    def detach(self, session: Session) -> None:
        """Take the tools out of ``session`` and stop following it."""
        for i, (known, added) in enumerate(self._sessions):
            if known is session:
                for name in added:
                    session.unregister_external(name)
                del self._sessions[i]
                return

    def _added(self, session: Session) -> set[str]:
        for known, added in self._sessions:
            if known is session:
                return added
        raise KeyError(session)

    def _join(self, session: Session, tool: PluginTool) -> PluginAlert | None:
        """Put ``tool`` into ``session``, replacing the version this loader put there."""
        added = self._added(session)
        name = tool.name
        if tool.roles is not None and not self._governs(session):
            return PluginAlert(
                tool.file,
                None,
                f"{name} allows only the roles {', '.join(tool.roles)}, which only a "
                "registry center enforces: it is left out of sessions not under the "
                "loader's center (attach the session to the center first)",
                tool.source,
            )
        built_in = session.toolset.get(name)
        if built_in is not None:
            return self._clash(tool, f"{source_of(built_in.tool)} ({built_in.tool.origin})")
        if name in added:
            session.unregister_external(name)
            added.discard(name)
        elif name in session.external:
            other = session.external[name].tool
            return self._clash(tool, f"{source_of(other)} (an external tool of the session)")
        try:
            session.register_external(tool.tool, name=name, prefix="", templates=True)
        except UsageError as exc:
            return PluginAlert(
                tool.file, None, f"{name} could not join a session: {exc}", tool.source
            )
        added.add(name)
        return None

    def _governs(self, session: Session) -> bool:
        """Whether the loader's center decides the roles of ``session``."""
        from toolweave.center import CenterHook

        center = self.center
        return center is not None and any(
            isinstance(hook, CenterHook) and hook.center is center for hook in session.hooks
        )

    def _leave(self, name: str) -> None:
        for session, added in self._sessions:
            if name in added:
                session.unregister_external(name)
                added.discard(name)

    @staticmethod
    def _clash(tool: PluginTool, other: str) -> PluginAlert:
        return PluginAlert(
            tool.file,
            None,
            f"tool name {tool.name!r} is defined by {other} and by {tool.source} "
            f"({tool.file.name}); rename one of them",
            tool.source,
        )

    # -- loading ----------------------------------------------------------------------------

    def load(self) -> list[PluginAlert]:
        """Import every file of the folders and register its tools (the same as
        :meth:`rescan`; call it once at start-up, after :meth:`attach`).

        Returns:
            The current alerts (also logged and published to the center).
        """
        return self.rescan()

    def _scan(self) -> dict[Path, Path]:
        found: dict[Path, Path] = {}
        for folder in self.folders:
            if not folder.is_dir():
                continue
            for dirpath, dirnames, filenames in os.walk(folder):
                dirnames[:] = sorted(
                    d for d in dirnames if not d.startswith(".") and d != "__pycache__"
                )
                for filename in sorted(filenames):
                    if filename.endswith(".py") and not filename.startswith("."):
                        found.setdefault(Path(dirpath) / filename, folder)
        return found

    def changed_on_disk(self) -> bool:
        """Whether a file was added, changed or deleted since the last look (by size and
        modification time; cheap)."""
        found = self._scan()
        if found.keys() != self.files.keys():
            return True
        return any(_signature(path) != file.signature for path, file in self.files.items())

    def rescan(self) -> list[PluginAlert]:
        """Bring everything in step with the folders now: new files imported, changed
        ones reloaded, deleted ones' tools disabled. Hosts without ``watchfiles`` may
        call it themselves; files are imported in the calling thread. (:meth:`watch`
        does the same on every change, importing in a worker thread.)

        Returns:
            The current alerts.
        """
        for path, folder in self._changes():
            self._update(path, folder)
        self._publish()
        return self.alerts

    async def _rescan_off_loop(self) -> None:
        """:meth:`rescan` for the watcher: imports in worker threads, bounded by
        :attr:`import_timeout`; a failure is logged, and the watcher goes on."""
        try:
            for path, folder in self._changes():
                await self._update_off_loop(path, folder)
            self._publish()
        except Exception:
            logger.exception("applying the changes of the plugin folders failed")

    def _changes(self) -> Iterator[tuple[Path, Path]]:
        """Delete the files that are gone; then the files to load, with their folders:
        every file found (the unchanged are skipped by their digest), then those waiting
        for a name another file let go."""
        found = self._scan()
        for path in [p for p in self.files if p not in found]:
            self._delete(path)
        yield from found.items()
        for file in list(self.files.values()):
            if any(name not in self.tools for name in file.waiting):
                file.digest = ""  # a name it waited for is free: load it again
                yield file.path, file.folder

    def _update(self, path: Path, folder: Path) -> None:
        loaded = self._peek(path, folder)
        if loaded is not None:
            if loaded.failed is None:
                self._run(loaded)
            self._settle(loaded)

    async def _update_off_loop(self, path: Path, folder: Path) -> None:
        """:meth:`_update` with the import in a worker thread, given
        :attr:`import_timeout` seconds: a file that sleeps or loops at import holds up
        neither the host's event loop nor the other files."""
        import anyio

        loaded = self._peek(path, folder)
        if loaded is None:
            return
        if loaded.failed is None:
            with anyio.move_on_after(self.import_timeout):
                await anyio.to_thread.run_sync(self._run, loaded, abandon_on_cancel=True)
            if not loaded.done:
                self._restore(loaded.file, loaded.old)
                loaded.failed = [
                    PluginAlert(
                        path,
                        None,
                        f"its import did not finish within {self.import_timeout:g} s (left "
                        "running; it is tried again when the file changes)",
                        loaded.file.source,
                    )
                ]
        self._settle(loaded)

    def _peek(self, path: Path, folder: Path) -> _Loaded | None:
        """Read the file: ``None`` when it is gone or unchanged, else what to load."""
        signature = _signature(path)
        file = self.files.get(path)
        try:
            data = _read(path)
        except OSError as exc:
            if not os.path.lexists(path):
                return None  # gone between the scan and now: the next look deletes it
            problem = f"cannot be read: {exc}"  # a dangling link, a FIFO, ...
            file = file or PluginFile(path, folder, _module_name(path))
            alert = PluginAlert(path, None, problem, file.source)
            return _Loaded(file, signature, problem, b"", failed=[alert])
        digest = hashlib.sha256(data).hexdigest()
        if file is not None and file.digest == digest:
            file.signature = signature
            return None
        return _Loaded(
            file or PluginFile(path, folder, _module_name(path)), signature, digest, data
        )

    def _run(self, loaded: _Loaded) -> None:
        """Import the file and erase its tools (touches only ``sys.modules`` and
        ``loaded``: safe in a worker thread)."""
        loaded.old = sys.modules.get(loaded.file.module)
        try:
            found = self._import(loaded.file, loaded.data)
        except _Failed as failed:
            loaded.failed = failed.alerts
        else:
            try:
                loaded.tools, loaded.alerts = self._tools_of(loaded.file, found)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # what the file marked cannot even be inspected
                file = loaded.file
                problem = f"its tools cannot be read: {describe_exception(exc)}"
                loaded.failed = [PluginAlert(file.path, None, problem, file.source)]
        loaded.done = True

    def _settle(self, loaded: _Loaded) -> None:
        """Apply what loading a file gave: its tools, or its alerts (a file that has
        served tools keeps its last good version)."""
        file = self.files.setdefault(loaded.file.path, loaded.file)
        file.signature = loaded.signature
        file.digest = loaded.digest
        failed = loaded.failed
        if failed is None and loaded.alerts and file.tools:
            self._restore(file, loaded.old)  # a broken definition: keep the last good one
            failed = loaded.alerts
        if failed is not None:
            file.alerts = failed
            file.status = "stale" if file.tools else "failed"
            for alert in failed:
                self._remember(alert)
            self.version += 1
            return
        self._apply(file, loaded.tools, loaded.alerts)

    def _import(self, file: PluginFile, data: bytes) -> list[object]:
        """Execute the file as a fresh module under its name; on failure the previous
        module (the last good version) is put back. Returns what it marked."""
        name = file.module
        path = file.path
        old = sys.modules.pop(name, None)
        module = types.ModuleType(name)
        module.__file__ = str(path)
        module.__spec__ = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
        sys.modules[name] = module
        linecache.checkcache(str(path))
        try:
            with collecting() as found:
                code = compile(data, str(path), "exec", dont_inherit=True)
                exec(code, module.__dict__)
        except KeyboardInterrupt:
            self._restore(file, old)
            raise
        except BaseException as exc:  # the file's own doing: SystemExit, GeneratorExit, ...
            self._restore(file, old)
            raise _Failed(
                PluginAlert(path, _line_of(exc, path), _describe(exc), file.source)
            ) from exc
        return found

    @staticmethod
    def _restore(file: PluginFile, old: types.ModuleType | None) -> None:
        sys.modules.pop(file.module, None)
        if old is not None:
            sys.modules[file.module] = old

    def _tools_of(
        self, file: PluginFile, found: list[object]
    ) -> tuple[list[PluginTool], list[PluginAlert]]:
        from toolweave.catalog._erasure import erase

        tools: list[PluginTool] = []
        alerts: list[PluginAlert] = []
        names: set[str] = set()
        for obj in found:
            spec = spec_of(obj)
            if spec is None:
                continue
            line = _definition_line(obj, file.path)
            what = getattr(obj, "__qualname__", repr(obj))
            try:
                if isinstance(obj, type) and issubclass(obj, BaseLocalTool):
                    erased = erase_local(obj(), file.source)
                else:
                    erased = erase(obj, origin=file.source)  # type: ignore[arg-type]
                if not _NAME.fullmatch(erased.id):
                    raise ValueError(
                        f"its name {erased.id!r} is not 1 to 64 letters, digits, '_', '.' "
                        "or '-' (what every provider takes)"
                    )
                erased.listed_schema  # noqa: B018 - built now: a schema that cannot be is an alert
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # the file's own doing
                reason = exception_text(exc) or describe_exception(exc)
                alerts.append(
                    PluginAlert(
                        file.path, line, f"{what} is not a valid tool: {reason}", file.source
                    )
                )
                continue
            if erased.id in names:
                alerts.append(
                    PluginAlert(
                        file.path, line, f"tool name {erased.id!r} is defined twice", file.source
                    )
                )
                continue
            names.add(erased.id)
            tools.append(
                PluginTool(erased.id, file.path, file.source, spec.groups, spec.roles, erased)
            )
        return tools, alerts

    def _apply(self, file: PluginFile, tools: list[PluginTool], alerts: list[PluginAlert]) -> None:
        kept: list[str] = []
        file.waiting = set()
        for tool in tools:
            owner = self.tools.get(tool.name)
            if owner is not None and owner.file != file.path:
                file.waiting.add(tool.name)
                alerts.append(
                    PluginAlert(
                        file.path,
                        None,
                        f"tool name {tool.name!r} is defined by {owner.file} ({owner.source}) "
                        f"and by {file.path} ({tool.source}); rename one of them",
                        tool.source,
                    )
                )
                continue
            clash = self._clash_in_sessions(tool)
            if clash is not None:
                alerts.append(clash)
                continue
            problem = self._register(tool)
            if problem is not None:
                alerts.append(problem)
                continue
            self.tools[tool.name] = tool
            kept.append(tool.name)
            for session, _ in self._sessions:
                alert = self._join(session, tool)
                if alert is not None:
                    alerts.append(alert)
        for name in file.tools:
            if name not in kept:
                self._retire(name, DROPPED.format(file=file.path))
        file.tools = kept
        file.alerts = alerts
        file.status = "loaded"
        for alert in alerts:
            self._remember(alert)
        self.version += 1
        logger.info("plugin file %s: %s", file.path, ", ".join(kept) or "no tools")

    def _clash_in_sessions(self, tool: PluginTool) -> PluginAlert | None:
        for session, added in self._sessions:
            built_in = session.toolset.get(tool.name)
            if built_in is not None:
                return self._clash(tool, f"{source_of(built_in.tool)} ({built_in.tool.origin})")
            if tool.name in session.external and tool.name not in added:
                other = session.external[tool.name].tool
                return self._clash(tool, f"{source_of(other)} (an external tool of the session)")
        return None

    def _register(self, tool: PluginTool) -> PluginAlert | None:
        center = self.center
        if center is None:
            return None  # roles: sessions without a center do not get the tool (_join)
        if center.store.readonly:
            record = center.snapshot.records.get(tool.name)
            if tool.roles is None or (
                record is not None and record.source == tool.source and record.roles == tool.roles
            ):
                return None  # recorded by a process that can write: the center enforces them
            return PluginAlert(
                tool.file,
                None,
                f"{tool.name} allows only the roles {', '.join(tool.roles)}, and the center "
                "is read-only: it cannot record them to enforce them; the tool is left out "
                "rather than served to every role",
                tool.source,
            )
        try:
            center.register([tool.record()], actor=self.actor)
            own = center.snapshot.flags.get(("tool", tool.name, "status"))
            if own is not None and _OURS.match(str(own.get("reason", ""))):
                center.enable(
                    tool.name, actor=self.actor, reason=f"defined again in plugin file {tool.file}"
                )
        except CenterError as exc:
            return PluginAlert(tool.file, None, str(exc), tool.source)
        return None

    def _retire(self, name: str, reason: str) -> None:
        """Take a tool out of the sessions and disable it in the center (kept there)."""
        tool = self.tools.pop(name, None)
        self._leave(name)
        center = self.center
        if tool is None or center is None or center.store.readonly:
            return
        record = center.snapshot.records.get(name)
        if record is None or record.source != tool.source:
            return
        status = center.snapshot.flags.get(("tool", name, "status"))
        if (
            status is not None
            and status.get("status") != "enabled"
            and not _OURS.match(str(status.get("reason", "")))
        ):
            return  # an operator's disable stays as they set it (and is not undone later)
        try:
            center.disable(name, actor=self.actor, reason=reason)
        except CenterError as exc:
            logger.error("disabling %s in the center failed: %s", name, exc)

    def _delete(self, path: Path) -> None:
        file = self.files.pop(path)
        for name in file.tools:
            self._retire(name, DELETED.format(file=path))
        sys.modules.pop(file.module, None)
        self.version += 1
        logger.info(
            "plugin file %s was deleted: %s disabled", path, ", ".join(file.tools) or "nothing"
        )

    def _remember(self, alert: PluginAlert) -> None:
        logger.warning("plugin file skipped: %s", alert)

    def _publish(self) -> None:
        center = self.center
        if center is None:
            return
        for folder in self.folders:
            source = f"dir:{folder}"
            now = {
                str(alert.file): {"line": alert.line, "message": alert.message}
                for file in self.files.values()
                if file.folder == folder
                for alert in file.alerts
            }
            if now != self._published.get(source, {}):
                publish_alerts(center, source, now, actor=self.actor)
                self._published[source] = now

    # -- watching ---------------------------------------------------------------------------

    async def watch(self, *, debounce: float = 0.1, poll: float = 1.0) -> None:
        """Follow the folders until cancelled: every change of a ``.py`` file (seen by
        ``watchfiles``, anyio-native) is applied as :meth:`rescan` does, each file's
        import in a worker thread given :attr:`import_timeout` seconds; every ``poll``
        seconds without an event the folders are looked at too (cheaply: sizes and
        times), which also finds a folder created after the start.

        Args:
            debounce: Seconds changes are gathered before they are applied.
            poll: Seconds between looks without an event.

        Raises:
            ModuleNotFoundError: ``watchfiles`` is not installed (with the install hint).
        """
        try:
            from watchfiles import awatch
        except ImportError as exc:
            raise ModuleNotFoundError(
                "hot reload of plugin folders needs watchfiles, an optional extra: "
                "pip install 'toolweave[local]'",
                name="watchfiles",
            ) from exc
        import anyio

        try:
            while True:
                roots = [str(folder) for folder in self.folders if folder.is_dir()]
                if not roots:
                    self.watch_ready = True
                    await anyio.sleep(poll)
                    if self.changed_on_disk():
                        await self._rescan_off_loop()
                    continue
                changes_of = awatch(
                    *roots,
                    watch_filter=_python_files,
                    debounce=max(1, int(debounce * 1000)),
                    step=50,
                    rust_timeout=max(1, int(poll * 1000)),
                    yield_on_timeout=True,
                    recursive=True,
                )
                async with aclosing(changes_of):
                    async for changes in changes_of:
                        self.watch_ready = True
                        if changes or self.changed_on_disk():
                            await self._rescan_off_loop()
                        if [str(f) for f in self.folders if f.is_dir()] != roots:
                            break  # a folder appeared or vanished: watch the new set
        finally:
            self.watch_ready = False

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[PluginFolders]:
        """Run :meth:`watch` in the background for the block."""
        import anyio

        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch)
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()

    def close(self) -> None:
        """Take the tools out of every attached session and drop the files' modules (the
        center keeps its records)."""
        for session, _ in list(self._sessions):
            self.detach(session)
        for file in self.files.values():
            sys.modules.pop(file.module, None)


def _python_files(_change: object, path: str) -> bool:
    """What wakes the watcher: Python files and folders, outside hidden folders and
    caches."""
    parts = Path(path).parts
    if any(p.startswith(".") or p == "__pycache__" for p in parts[-3:]):
        return False
    return path.endswith(".py") or "." not in parts[-1]


def _definition_line(obj: object, path: Path) -> int | None:
    """The line ``obj`` is defined on in ``path`` (its first decorator's), when it can be
    told."""
    import inspect

    target = getattr(obj, "__wrapped__", obj)
    try:
        if inspect.getsourcefile(target) == str(path):  # type: ignore[arg-type]
            return inspect.getsourcelines(target)[1]  # type: ignore[arg-type]
    except (OSError, TypeError):
        pass
    return None
