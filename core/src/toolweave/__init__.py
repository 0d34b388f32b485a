"""toolweave: one typed, extensible tool system for AI agents.

Write tools once with pydantic types, ship them as packs, configure a session, and
hand the model one well-described tool list; remote MCP tools join the same set.
"""

from toolweave._erasure import ErasedTool
from toolweave.builder import ToolSetBuilder
from toolweave.context import Context
from toolweave.errors import (
    ConfigError,
    ConfigIssue,
    DuplicateToolError,
    ErrorKind,
    MissingResourceError,
    PackLoadError,
    ToolError,
    ToolweaveError,
    UsageError,
)
from toolweave.plugins import PackInfo, PackManager, hookimpl, load_packs
from toolweave.registry import ExecutionRegistry
from toolweave.resources import Environment, Resources, Workspace
from toolweave.session import Session, SyncSession, ToolStream
from toolweave.stream import CallResult, Progress
from toolweave.tool import READ_ONLY_KINDS, Capabilities, Kind, Tool, ToolOutput, tool
from toolweave.toolset import ToolDefinition, ToolEntry, ToolSet

__version__ = "0.1.0"

__all__ = [
    "READ_ONLY_KINDS",
    "CallResult",
    "Capabilities",
    "ConfigError",
    "ConfigIssue",
    "Context",
    "DuplicateToolError",
    "Environment",
    "ErasedTool",
    "ErrorKind",
    "ExecutionRegistry",
    "Kind",
    "MissingResourceError",
    "PackInfo",
    "PackLoadError",
    "PackManager",
    "Progress",
    "Resources",
    "Session",
    "SyncSession",
    "Tool",
    "ToolDefinition",
    "ToolEntry",
    "ToolError",
    "ToolOutput",
    "ToolSet",
    "ToolSetBuilder",
    "ToolStream",
    "ToolweaveError",
    "UsageError",
    "Workspace",
    "__version__",
    "hookimpl",
    "load_packs",
    "tool",
]
