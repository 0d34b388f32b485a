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

**Several processes (or sessions) on one session id.** Every stored key has a version,
and a session saves with a compare-and-set on the version it read: it never silently
overwrites a write it has not seen (the :class:`StateStore` guarantee, which every store
keeps). What that means for a tool's read-modify-write:

* A call that holds a model's lock starts from the latest stored state: the first
  access to the model after an earlier call used it checks the stored version and
  loads another writer's change into the live instance.
* If another writer saves the key while the call runs, the call's save is refused:
  the session reloads the key (the other writer's update is kept), logs a warning and
  :meth:`SessionState.persist` returns the :class:`StateConflict`. The call's own
  change to that state is dropped, never half-applied.
* :meth:`SessionState.update` (``await session.state.update(TodoState, fn)``) applies a
  function under the model's lock and, on a conflict, reloads and applies it again:
  two processes each making 100 updates this way keep all 200.

Calls of ``state_access = "shared"`` tools take no lock, so they get the same
protection at save time but no re-read at their start beyond the one above.

The default store is :class:`SQLiteStateStore` in ``<workspace>/.toolweave/state.db``;
hosts pass another :class:`StateStore` to the session (``state_store=``) or put one into
the shared resources: :class:`RedisStateStore` (the ``redis`` extra) for sessions whose
turns run on several machines.

A pack that keeps a file of its own in the workspace (memories, an index) puts it at
:func:`workspace_file` (``<workspace>/.toolweave/<name>``, refused when a planted
symbolic link would send it elsewhere) and makes its folder with :func:`make_folder`
(inside an existing workspace only, with a ``.gitignore``), as the state store does.
"""

from toolweave.state._redis import RedisStateStore
from toolweave.state._session import SessionState, StateSlot
from toolweave.state._sqlite import SCHEMA_VERSION, SQLiteStateStore, default_state_path
from toolweave.state._store import (
    MemoryStateStore,
    StateConflict,
    StateStore,
    StoredState,
    state_key,
)
from toolweave.state._workspace import make_folder, workspace_file

__all__ = [
    "SCHEMA_VERSION",
    "MemoryStateStore",
    "RedisStateStore",
    "SQLiteStateStore",
    "SessionState",
    "StateConflict",
    "StateSlot",
    "StateStore",
    "StoredState",
    "default_state_path",
    "make_folder",
    "state_key",
    "workspace_file",
]
