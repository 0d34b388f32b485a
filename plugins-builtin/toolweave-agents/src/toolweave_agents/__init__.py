"""Sub-agents for toolweave: the ``task`` tool hands a self-contained sub-task to a
sub-agent that works on it with a subset of the session's tools and returns its final
answer with a summary of its calls.

The pack ships no model client: the host provides a :class:`ModelRunner` as a session
resource (messages and tool definitions in its provider's format in, a :class:`Reply`
out). The sub-agent's calls take the session's own pipeline, so call hooks, policies
and a registry center's roles and switches apply to them as to any call.
"""

from __future__ import annotations

from toolweave_agents import _pack as pack
from toolweave_agents._runner import Message, ModelRunner, Reply, provider_name, user_message
from toolweave_agents._scripted import ScriptedRunner
from toolweave_agents._task import Task, TaskArgs, TaskCall, TaskOutput, TaskParams

__all__ = [
    "Message",
    "ModelRunner",
    "Reply",
    "ScriptedRunner",
    "Task",
    "TaskArgs",
    "TaskCall",
    "TaskOutput",
    "TaskParams",
    "pack",
    "provider_name",
    "user_message",
]
