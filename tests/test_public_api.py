"""The public surface of ``toolweave`` is pinned: changing it is a deliberate act."""

from __future__ import annotations

import importlib
import types

import toolweave

PUBLIC_API = [
    "READ_ONLY_KINDS",
    "BuildReport",
    "CallInfo",
    "CallResult",
    "Capabilities",
    "ConfigError",
    "ConfigIssue",
    "Context",
    "DeprecatedVersionWarning",
    "DuplicateToolError",
    "Environment",
    "ErasedTool",
    "ErrorKind",
    "Catalog",
    "Expression",
    "ExpressionError",
    "Guard",
    "Kind",
    "Lifecycle",
    "MemoryStateStore",
    "MissingResourceError",
    "Notification",
    "Notifier",
    "PackInfo",
    "PackLoadError",
    "PackManager",
    "Progress",
    "Reminder",
    "Resources",
    "SQLiteStateStore",
    "Session",
    "SetView",
    "SkippedEntry",
    "StateStore",
    "SyncSession",
    "TemplateRenderer",
    "Tool",
    "ToolConfig",
    "ToolDefinition",
    "ToolEntry",
    "ToolError",
    "ToolFacts",
    "ToolOutput",
    "ToolSet",
    "ToolSetBuilder",
    "ToolSetConfig",
    "ToolStream",
    "ToolweaveError",
    "ToolweaveWarning",
    "UsageError",
    "Workspace",
    "__version__",
    "compile_expression",
    "hookimpl",
    "kill_process_group",
    "load_packs",
    "process_group",
    "read_only_guard",
    "reminder",
    "tool",
]


def test_all_is_pinned() -> None:
    """``toolweave.__all__`` is exactly the reviewed list; update both together."""
    assert list(toolweave.__all__) == PUBLIC_API


def _isort_key(name: str) -> tuple[int, str]:
    """Constants first, then classes, then everything else (ruff's RUF022 order)."""
    if name.isupper():
        return 0, name
    return (1 if name[0].isupper() else 2), name


def test_all_is_sorted_without_duplicates() -> None:
    """``__all__`` is sorted the way ruff sorts it and names nothing twice."""
    assert list(toolweave.__all__) == sorted(set(toolweave.__all__), key=_isort_key)


def test_every_name_imports() -> None:
    """Every name in ``__all__`` resolves with ``from toolweave import NAME``."""
    fresh = importlib.import_module("toolweave")
    missing = [name for name in fresh.__all__ if not hasattr(fresh, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec("from toolweave import *", namespace)
    assert set(fresh.__all__) - {"__version__"} <= set(namespace)


def test_no_public_name_is_left_out() -> None:
    """Every public, non-module attribute of ``toolweave`` is listed in ``__all__``."""
    public = {
        name
        for name, value in vars(toolweave).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public - set(toolweave.__all__) == set()


def test_version_matches_distribution() -> None:
    """``toolweave.__version__`` is the installed distribution's version."""
    from importlib.metadata import version

    assert toolweave.__version__ == version("toolweave")
