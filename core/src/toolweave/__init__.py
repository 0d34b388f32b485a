"""toolweave: one typed, extensible tool system for AI agents.

Write tools once with pydantic types, ship them as packs, configure a session, and
hand the model one well-described tool list; remote MCP tools join the same set.
"""

from toolweave._erasure import ErasedTool
from toolweave._expr import Expression, SetView, ToolFacts, compile_expression
from toolweave._guards import Guard, read_only_guard
from toolweave._merge import BuildReport, SkippedEntry
from toolweave._process import kill_process_group, process_group
from toolweave._versions import DeprecatedVersionWarning, ToolweaveWarning
from toolweave.builder import ToolSetBuilder
from toolweave.config import ToolConfig, ToolSetConfig
from toolweave.context import Context
from toolweave.errors import (
    ConfigError,
    ConfigIssue,
    DuplicateToolError,
    ErrorKind,
    ExpressionError,
    MissingResourceError,
    PackLoadError,
    ToolError,
    ToolweaveError,
    UsageError,
)
from toolweave.notifications import Notification, Notifier
from toolweave.plugins import PackInfo, PackManager, hookimpl, load_packs
from toolweave.registry import ExecutionRegistry
from toolweave.reminders import CallInfo, Reminder, reminder
from toolweave.resources import Environment, Resources, Workspace
from toolweave.session import Session, SyncSession, ToolStream
from toolweave.state import MemoryStateStore, SQLiteStateStore, StateStore
from toolweave.stream import CallResult, Progress
from toolweave.templates import TemplateRenderer
from toolweave.tool import (
    READ_ONLY_KINDS,
    Capabilities,
    Kind,
    Lifecycle,
    Tool,
    ToolOutput,
    tool,
)
from toolweave.toolset import ToolDefinition, ToolEntry, ToolSet

__version__ = "0.1.0"

__all__ = [
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
    "ExecutionRegistry",
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
