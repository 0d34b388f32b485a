"""Pack discovery and loading: our own loop over entry points, one pack at a time."""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, final

import pluggy

from toolweave.catalog._config import did_you_mean
from toolweave.errors import PackLoadError, UsageError
from toolweave.plugins import hookspecs

if TYPE_CHECKING:
    from importlib.metadata import Distribution

    from toolweave.catalog._builder import ToolSetBuilder
    from toolweave.catalog._config import ToolSetConfig
    from toolweave.catalog._toolset import ToolSet
    from toolweave.resources import Resources
    from toolweave.runtime._session import Session

__all__ = ["ENTRY_POINT_GROUP", "PackInfo", "PackManager", "load_packs"]

logger = logging.getLogger("toolweave.packs")

ENTRY_POINT_GROUP = "toolweave.packs"
ENV_INCLUDE = "TOOLWEAVE_PACKS"
"""Comma-separated allow-list of pack names (empty or unset: every pack)."""
ENV_EXCLUDE = "TOOLWEAVE_DISABLE_PACKS"
"""Comma-separated block-list of pack names."""
ENV_AUTOLOAD = "TOOLWEAVE_AUTOLOAD"
"""Set to ``0`` to load no pack from entry points unless the host names it."""

Status = Literal["loaded", "failed", "not selected"]

# What a pack raises, at import or in a hook, fails the pack, not the host: an exception,
# sys.exit(), GeneratorExit, a BaseException class of its own. Only KeyboardInterrupt
# still stops the host (every ``except BaseException`` below follows an ``except
# KeyboardInterrupt: raise``). The hooks are plain functions: no event loop's
# cancellation can arrive inside one.


@dataclass(init=False, repr=False)
class PackInfo:
    """What is known about one pack.

    Attributes:
        name: The entry-point name (``fs``).
        target: The entry-point target (``toolweave_fs:pack``).
        dist: The distribution that declared it, or ``None`` for packs added by the host.
        version: The distribution's version.
        status: ``loaded``, ``failed`` or ``not selected`` (never imported).
        error: The failure, when ``status`` is ``failed``.
        tools: Fully qualified ids of the tools it registered.

    A discovered pack is made with ``distribution=`` (its entry point's) instead of
    ``dist`` and ``version``: they are read from that distribution's metadata when first
    asked for, so packs a host does not select cost only the entry-point scan. Metadata
    that cannot be read (a damaged file) leaves both ``None``, with a warning.
    """

    name: str
    target: str
    status: Status
    error: PackLoadError | None
    tools: list[str]

    def __init__(
        self,
        name: str,
        target: str,
        dist: str | None = None,
        version: str | None = None,
        status: Status = "not selected",
        error: PackLoadError | None = None,
        tools: list[str] | None = None,
        *,
        distribution: Distribution | None = None,
    ) -> None:
        self.name = name
        self.target = target
        self.status = status
        self.error = error
        self.tools = [] if tools is None else tools
        self._distribution = distribution
        self._declared: tuple[str | None, str | None] | None = (
            None
            if distribution is not None and dist is None and version is None
            else (dist, version)
        )

    def __repr__(self) -> str:
        return (
            f"PackInfo(name={self.name!r}, target={self.target!r}, dist={self.dist!r}, "
            f"version={self.version!r}, status={self.status!r}, error={self.error!r}, "
            f"tools={self.tools!r})"
        )

    def _declared_by(self) -> tuple[str | None, str | None]:
        if self._declared is None:
            assert self._distribution is not None
            try:
                meta = self._distribution.metadata
                self._declared = (meta["Name"], meta["Version"])
            except Exception as exc:  # a damaged METADATA file names nothing
                logger.warning(
                    "pack %r: its distribution's metadata is unreadable: %s", self.name, exc
                )
                self._declared = (None, None)
        return self._declared

    @property
    def dist(self) -> str | None:
        """The distribution that declared the pack (``None``: added by the host)."""
        return self._declared_by()[0]

    @property
    def version(self) -> str | None:
        """The declaring distribution's version."""
        return self._declared_by()[1]

    @property
    def origin(self) -> str:
        """How registrations from this pack are labelled (``pack fs (toolweave-fs 0.1.0)``)."""
        label = self.dist_label
        return f"pack {self.name} ({label})" if label else f"pack {self.name}"

    @property
    def dist_label(self) -> str | None:
        """The distribution with its version (``toolweave-fs 0.1.0``), or ``None``."""
        if not self.dist:
            return None
        return f"{self.dist} {self.version}" if self.version else self.dist

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary."""
        return {
            "name": self.name,
            "target": self.target,
            "dist": self.dist,
            "version": self.version,
            "status": self.status,
            "error": str(self.error) if self.error else None,
            "tools": list(self.tools),
        }


def _names(value: str | None) -> set[str] | None:
    if value is None or not value.strip():
        return None
    return {p.strip() for p in value.split(",") if p.strip()}


@final
class PackManager:
    """The packs of one host: discovered, selected, loaded, and their hooks called.

    Each manager owns a fresh pluggy ``PluginManager``; nothing is created at import
    time. A pack that fails (at import, registration or in a hook) is reported with its
    name, distribution and exception and skipped; with ``strict=True`` the failure raises
    :class:`~toolweave.PackLoadError` instead.
    """

    def __init__(self, *, strict: bool = False, import_timeout: float | None = 30.0) -> None:
        self.strict = strict
        self.import_timeout = import_timeout
        """Seconds an installed pack's import may take (in a thread of its own) before
        the pack is reported broken and the host goes on; ``None`` imports on the
        calling thread with no limit."""
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.packs: dict[str, PackInfo] = {}
        self.warnings: list[str] = []
        """Problems that did not stop the load (an unknown pack name in a non-strict
        selection), in the order found; each is also logged."""

    def __repr__(self) -> str:
        loaded = [n for n, p in self.packs.items() if p.status == "loaded"]
        return f"<PackManager loaded={loaded}>"

    # -- discovery ------------------------------------------------------------------

    def discover(
        self,
        *,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        autoload: bool | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """Find the packs declared under ``toolweave.packs`` and load the selected ones.

        Selection: ``include`` (or ``$TOOLWEAVE_PACKS``) names the packs to load, none
        meaning all; ``exclude`` (plus ``$TOOLWEAVE_DISABLE_PACKS``) removes names;
        ``autoload=False`` (or ``$TOOLWEAVE_AUTOLOAD=0``) loads only packs named in
        ``include``. Unselected packs are listed but never imported.

        A name in the selection that no installed pack has is reported with the closest
        installed name: in :attr:`warnings` and the log, or, for ``include`` with
        ``strict=True``, as an error. With ``strict=True`` every loaded pack's
        ``register_tools`` also runs once here, so a pack failing there fails the load.

        Raises:
            UsageError: ``strict`` and ``include`` names a pack that is not installed.
            PackLoadError: ``strict`` and a pack fails to import or to register its tools.
        """
        from importlib.metadata import entry_points

        env = os.environ if environ is None else environ
        source = "include" if include is not None else f"${ENV_INCLUDE}"
        wanted = set(include) if include is not None else _names(env.get(ENV_INCLUDE))
        blocked = set(exclude or ()) | (_names(env.get(ENV_EXCLUDE)) or set())
        if autoload is None:
            autoload = env.get(ENV_AUTOLOAD, "1").strip().lower() not in {"0", "false", "no", "off"}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in self.packs:
                logger.warning("pack name %r is declared twice; keeping the first", ep.name)
                continue
            info = PackInfo(name=ep.name, target=ep.value, distribution=ep.dist)
            self.packs[ep.name] = info
            selected = (wanted is None and autoload) or (wanted is not None and ep.name in wanted)
            if not selected or ep.name in blocked:
                continue
            self._load(info, functools.partial(self._import, ep.load))
        for name in sorted((wanted or set()) - self.packs.keys()):
            self._unknown(name, source, fatal=True)
        for name in sorted(blocked - self.packs.keys() - (wanted or set())):
            self._unknown(name, f"exclude / ${ENV_EXCLUDE}", fatal=False)
        if self.strict:
            # A pack that fails in register_tools fails the strict load now, not at build.
            self.builder()

    def _unknown(self, name: str, source: str, *, fatal: bool) -> None:
        """Report a selected pack name that no installed pack has (raise when strict)."""
        known = sorted(self.packs)
        hint = did_you_mean(name, known, 1) or "."
        listed = ", ".join(known) or "none"
        message = (
            f"no pack named {name!r} is installed (asked for by {source}){hint} "
            f"Installed packs: {listed}."
        )
        if fatal and self.strict:
            raise UsageError(message)
        self.warnings.append(message)
        logger.warning("%s", message)

    def add(self, name: str, pack: object) -> PackInfo:
        """Load a pack object the host provides directly (no entry point)."""
        info = PackInfo(name=name, target=repr(pack))
        self.packs[name] = info
        self._load(info, lambda: pack)
        return info

    def _fail(self, info: PackInfo, exc: BaseException, stage: str) -> None:
        error = PackLoadError(info.name, info.dist_label, exc, stage)
        info.status = "failed"
        info.error = error
        if self.strict:
            raise error from exc
        logger.warning("%s", error)

    def _import(self, load: Callable[[], object]) -> object:
        """Run ``load`` (an entry point's import) within :attr:`import_timeout`.

        The import runs in a daemon thread; one that does not finish in time is left
        behind (Python cannot stop it) and the pack fails with a ``TimeoutError``.
        """
        if self.import_timeout is None:
            return load()
        box: list[Any] = []
        done = threading.Event()

        def run() -> None:
            try:
                box.append((True, load()))
            except BaseException as exc:  # handed to the caller's thread as it is
                box.append((False, exc))
            finally:
                done.set()

        threading.Thread(target=run, name="toolweave pack import", daemon=True).start()
        if not done.wait(self.import_timeout):
            raise TimeoutError(
                f"its import did not finish within {self.import_timeout:g} s (left running)"
            )
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def _load(self, info: PackInfo, load: Callable[[], object]) -> None:
        try:
            pack = load()
            self.pm.register(pack, name=info.name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the pack's own doing
            self._fail(info, exc, "import")
            return
        info.status = "loaded"

    @property
    def loaded(self) -> list[PackInfo]:
        """Packs that are loaded and working, in load order."""
        return [p for p in self.packs.values() if p.status == "loaded"]

    @property
    def failed(self) -> list[PackInfo]:
        """Packs that failed, with their errors."""
        return [p for p in self.packs.values() if p.status == "failed"]

    # -- hooks ----------------------------------------------------------------------

    def _each(
        self, hook: str, kwargs: dict[str, Any]
    ) -> Iterable[tuple[PackInfo, Callable[[], Any]]]:
        caller = getattr(self.pm.hook, hook)
        by_plugin = {id(impl.plugin): impl for impl in caller.get_hookimpls()}
        for info in list(self.packs.values()):
            # Registered packs: loaded ones, and those whose provide_resources failed
            # (they keep their tools; a pack failing earlier is unregistered).
            plugin = self.pm.get_plugin(info.name)
            impl = by_plugin.get(id(plugin)) if plugin is not None else None
            if impl is None:
                continue
            args = {name: kwargs[name] for name in impl.argnames}
            yield info, functools.partial(impl.function, **args)

    def register_tools(self, builder: ToolSetBuilder) -> None:
        """Call every loaded pack's ``register_tools`` (then ``register_reminders``).

        A pack that raises is marked failed and everything it registered (tools and
        reminders) is removed.
        """
        for hook in ("register_tools", "register_reminders"):
            for info, call in self._each(hook, {"builder": builder}):
                builder.origin = info.origin
                try:
                    call()
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # the pack's own doing
                    removed = builder.remove_origin(info.origin)
                    info.tools = [t for t in info.tools if t not in removed]
                    self._fail(info, exc, hook)
                    self.pm.unregister(name=info.name)
                else:
                    # What this pack registered, as the builder recorded it: no scan of
                    # the registry per pack (that is quadratic in packs x tools).
                    info.tools = builder.registered_by(info.origin)
                finally:
                    builder.origin = "host"

    def provide_resources(self, resources: Resources, session: Session) -> None:
        """Call every loaded pack's ``provide_resources`` for a new session.

        A pack that raises is marked failed with its error (so listings show it) but
        keeps its tools: they stay in the sets built with it, and this hook is still
        called for later sessions. Its tools may lack what the hook did not provide;
        they then fail as ``unavailable``, naming what is missing.
        """
        for info, call in self._each(
            "provide_resources", {"resources": resources, "session": session}
        ):
            try:
                call()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # the pack's own doing
                self._fail(info, exc, "provide_resources")

    def setup_session(self, session: Session) -> None:
        """Prepare a new session of a set built from these packs: every loaded pack's
        ``provide_resources``, then its ``provide_call_hooks`` (each hook added to the
        session), then its ``before_call`` / ``after_call`` / ``on_call_error`` (each
        a call hook of its own). A pack that raises is marked failed (see
        :meth:`provide_resources`)."""
        self.provide_resources(session.resources, session)
        for info, call in self._each("provide_call_hooks", {"session": session}):
            try:
                for hook in call() or ():
                    session.add_hook(hook)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # the pack's own doing
                self._fail(info, exc, "provide_call_hooks")
        self._add_call_specs(session)

    def _add_call_specs(self, session: Session) -> None:
        """Add the packs' ``before_call`` / ``after_call`` / ``on_call_error`` to
        ``session``, each as a call hook of its own (see ``_call_hooks``)."""
        from toolweave.plugins._call_hooks import SPECS, pack_call_hook

        for spec in SPECS:
            impls = {id(impl.plugin): impl for impl in getattr(self.pm.hook, spec).get_hookimpls()}
            for info in list(self.packs.values()):
                plugin = self.pm.get_plugin(info.name)
                impl = impls.get(id(plugin)) if plugin is not None else None
                if impl is not None:
                    hook = pack_call_hook(info.name, spec, impl.function, tuple(impl.argnames))
                    session.add_hook(hook)

    def builder(self) -> ToolSetBuilder:
        """A builder holding every loaded pack's tools and reminders."""
        from toolweave.catalog._builder import ToolSetBuilder

        builder = ToolSetBuilder(packs=self)
        self.register_tools(builder)
        return builder

    def build(
        self, config: ToolSetConfig | Mapping[str, Any] | None = None, **options: Any
    ) -> ToolSet:
        """Shortcut: ``self.builder().build(config, **options)`` (see
        :meth:`ToolSetBuilder.build <toolweave.ToolSetBuilder.build>`)."""
        return self.builder().build(config, **options)


def load_packs(
    include: Iterable[str] | None = None,
    *,
    exclude: Iterable[str] | None = None,
    strict: bool = False,
    autoload: bool | None = None,
    import_timeout: float | None = 30.0,
) -> PackManager:
    """Discover the installed packs and load the selected ones.

    Example:
        ``toolset = load_packs(include=["fs"]).build()``

    Args:
        include: Pack names to load (default: ``$TOOLWEAVE_PACKS``, else every pack).
        exclude: Pack names never to load (added to ``$TOOLWEAVE_DISABLE_PACKS``).
        strict: Raise :class:`~toolweave.PackLoadError` on the first broken pack (at
            import or in ``register_tools``) and :class:`~toolweave.UsageError` for an
            unknown name in ``include``; without it, both are reported and skipped. A
            tool whose argument schema cannot be made is not found at load, strict or
            not (schemas are made on first listing): listings leave it out and report
            it then (see :meth:`ToolSet.listed <toolweave.ToolSet.listed>`).
        autoload: ``False`` loads only packs named in ``include``.
        import_timeout: Seconds each pack's import may take before it is reported
            broken (the import runs in a thread of its own); ``None``: no limit, on
            the calling thread.
    """
    manager = PackManager(strict=strict, import_timeout=import_timeout)
    manager.discover(include=include, exclude=exclude, autoload=autoload)
    return manager
