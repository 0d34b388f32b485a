"""The public surface of ``toolweave`` is pinned: changing it is a deliberate act."""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path

import pytest
import toolweave

PUBLIC_API = [
    "READ_ONLY_KINDS",
    "Answer",
    "AskUserHandler",
    "BuildReport",
    "CallHook",
    "CallInfo",
    "CallResult",
    "Capabilities",
    "Catalog",
    "CenterError",
    "ConfigError",
    "ConfigIssue",
    "Context",
    "DeprecatedVersionWarning",
    "DuplicateToolError",
    "Environment",
    "ErasedTool",
    "ErrorKind",
    "Expression",
    "ExpressionError",
    "Guard",
    "GuardHook",
    "HookCall",
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
    "Question",
    "Reminder",
    "Resources",
    "SQLiteStateStore",
    "Session",
    "SetView",
    "SkippedEntry",
    "StateConflict",
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
    "check_config",
    "compile_expression",
    "external_tool",
    "hookimpl",
    "kill_process_group",
    "load_packs",
    "preview",
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


PUBLIC_PACKAGES = [
    "toolweave",
    "toolweave.authoring",
    "toolweave.catalog",
    "toolweave.runtime",
    "toolweave.plugins",
    "toolweave.formats",
    "toolweave.state",
    "toolweave.mcp",
    "toolweave.testing",
    "toolweave.center",
    "toolweave.local",
    "toolweave.inject",
    "toolweave.policy",
    "toolweave.observe",
]


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_public_packages_import_only_from_public_modules(package: str) -> None:
    """A public package's ``__init__`` takes its public names from public modules of
    its own or from its private modules, never from another package's private ones."""
    module = importlib.import_module(package)
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("toolweave"):
            parts = node.module.split(".")
            private = [p for p in parts if p.startswith("_")]
            if private:
                owner = ".".join(parts[: parts.index(private[0])])
                assert owner == package, f"{package} imports {node.module}"


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_every_public_name_is_documented(package: str) -> None:
    """Every class and function a public package exports has a docstring."""
    module = importlib.import_module(package)
    undocumented = [
        name
        for name in module.__all__
        if (inspect.isclass(getattr(module, name)) or inspect.isfunction(getattr(module, name)))
        and not inspect.getdoc(getattr(module, name))
    ]
    assert undocumented == []
