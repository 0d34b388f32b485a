"""What pack authors write: typed tools, their kinds and capabilities, reminders.

``Tool[Args, Output]`` classes and ``@tool`` functions are erased to JSON-in,
JSON-out handles by :mod:`toolweave.catalog` when a set is built; nothing here
runs a call.
"""

from toolweave.authoring._asking import Answer, AskUserHandler, Question
from toolweave.authoring._context import Context
from toolweave.authoring._reminders import (
    CallInfo,
    Reminder,
    ToolReminder,
    reminder,
    wrap_reminder,
)
from toolweave.authoring._tool import (
    READ_ONLY_KINDS,
    Capabilities,
    Kind,
    Lifecycle,
    StateAccess,
    Tool,
    ToolOutput,
    tool,
)

__all__ = [
    "READ_ONLY_KINDS",
    "Answer",
    "AskUserHandler",
    "CallInfo",
    "Capabilities",
    "Context",
    "Kind",
    "Lifecycle",
    "Question",
    "Reminder",
    "StateAccess",
    "Tool",
    "ToolOutput",
    "ToolReminder",
    "reminder",
    "tool",
    "wrap_reminder",
]
