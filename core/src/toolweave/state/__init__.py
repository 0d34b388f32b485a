"""Persisted runtime state: what tools remember between calls and across restarts.

A tool declares its state model (``state = TodoState``, a pydantic model with defaults)
and reads it with ``ctx.state(TodoState)``; it mutates the returned instance (or
replaces it with ``ctx.set_state(...)``). After the call the session saves every state
model the call touched whose JSON changed, in one store transaction. A new session with
the same workspace and session id (in this process or the next) sees the same state.

Calls of tools that declare the same state model run one at a time within a session (a
per-model lock held from before the tool runs until its state is saved), so concurrent
calls never lose one another's updates. State read through ``ctx.state`` of a model the
tool does not declare is the same live instance, but not serialised: mutate it without
awaiting in between.

The default store is :class:`SQLiteStateStore` in ``<workspace>/.toolweave/state.db``;
hosts pass another :class:`StateStore` to the session (``state_store=``) or put one into
the shared resources.
"""

from toolweave.state._session import SessionState, StateSlot
from toolweave.state._sqlite import SCHEMA_VERSION, SQLiteStateStore, default_state_path
from toolweave.state._store import MemoryStateStore, StateStore, state_key

__all__ = [
    "SCHEMA_VERSION",
    "MemoryStateStore",
    "SQLiteStateStore",
    "SessionState",
    "StateSlot",
    "StateStore",
    "default_state_path",
    "state_key",
]
