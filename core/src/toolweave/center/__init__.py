"""The registry center: operators change what tools do while agents run.

One registry of every tool a deployment knows (packs, plugin folders, MCP servers,
tools pushed by operators), and a lifecycle overlay that attached sessions consult at
every listing and every call: enable and disable (a tool, a group, a source), version
pins and rollback, gray releases by a stable hash of the session id, role whitelists
enforced at dispatch, circuit breakers per tool and per MCP server, and an audit of
every call and every change. The embedded store is one SQLite file shared by the
processes of a machine; a change reaches every attached session within a second.

Example:
    ```python
    from toolweave.center import Center

    center = Center.open(".toolweave/center.db")
    center.attach(session, role="common_user")
    center.disable("bash", reason="incident 42")   # gone from listings, calls refused
    center.rollout("read_file", "2", 10)           # version 2 for 10 % of sessions
    ```

See ``docs/operating.md`` for the operator's guide.
"""

from toolweave.center._attach import CenterHook
from toolweave.center._center import (
    AuditMode,
    Center,
    CenterHealth,
    MCPEntryCheck,
    Snapshot,
    bucket,
    set_mcp_entry_check,
    source_of,
)
from toolweave.center._model import (
    AuditEntry,
    BreakerSettings,
    CenterError,
    ChangeEvent,
    Status,
    ToolRecord,
    ToolState,
)
from toolweave.center._store import CenterStore, SQLiteCenterStore

__all__ = [
    "AuditEntry",
    "AuditMode",
    "BreakerSettings",
    "Center",
    "CenterError",
    "CenterHealth",
    "CenterHook",
    "CenterStore",
    "ChangeEvent",
    "MCPEntryCheck",
    "SQLiteCenterStore",
    "Snapshot",
    "Status",
    "ToolRecord",
    "ToolState",
    "bucket",
    "set_mcp_entry_check",
    "source_of",
]
