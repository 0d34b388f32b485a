"""Persisted runtime state: what tools remember between calls and across restarts.

A tool declares its state models (``state = TodoState``, or a tuple of models; pydantic
models with defaults) and reads them with ``ctx.state(TodoState)``; it mutates the
returned instance (or replaces it with ``ctx.set_state(...)``). After the call the
session saves every state model the call touched whose JSON changed, in one store
transaction. A new session with the same workspace and session id (in this process or
the next) sees the same state.

A tool reads only the models it declares: ``ctx.state`` of another model raises
:class:`~toolweave.UsageError`, which fails the call. Reminders, which run after the
call, may read any model.

Calls of tools that declare the same model run one at a time within a session: each
holds the model's lock from before the tool runs until its state is saved, so
concurrent calls never lose one another's updates. A tool declaring several models
holds all their locks, always taken in the order of their keys, so two calls never
wait on each other crosswise. A meta-tool's inner calls take only the locks their
outer call does not hold yet.

A tool whose calls must not wait for one another (a wait of several minutes must not
hold up the tools that start or stop what it waits for) declares
``state_access = "shared"``: its calls take no lock and see the same live instance.
It promises to change the state only between two awaits: never read a value, await,
and write back what it read (an update in between would be lost).

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
