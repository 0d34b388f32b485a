"""toolweave-memory: memories that outlive a conversation, searched with SQLite FTS5.

Install the distribution and toolweave finds the pack through its entry point
(``toolweave.packs``, name ``memory``); ``load_packs(include=["memory"])`` loads it
alone. Memories live in the workspace's ``.toolweave/memory.db`` unless the host puts
its own :class:`MemoryStore` into the session's resources.
"""

from __future__ import annotations

from toolweave_memory import _pack as pack
from toolweave_memory._delete import DeletedMemories, MemoryDelete, MemoryDeleteArgs
from toolweave_memory._save import MemorySave, MemorySaveArgs, MemorySaveParams, SavedMemory
from toolweave_memory._scopes import Scope, default_path
from toolweave_memory._search import (
    FoundMemory,
    MemorySearch,
    MemorySearchArgs,
    MemorySearchParams,
    SearchResult,
)
from toolweave_memory._store import Memory, MemoryStore, SearchHit, fts_query

__all__ = [
    "DeletedMemories",
    "FoundMemory",
    "Memory",
    "MemoryDelete",
    "MemoryDeleteArgs",
    "MemorySave",
    "MemorySaveArgs",
    "MemorySaveParams",
    "MemorySearch",
    "MemorySearchArgs",
    "MemorySearchParams",
    "MemoryStore",
    "SavedMemory",
    "Scope",
    "SearchHit",
    "SearchResult",
    "default_path",
    "fts_query",
    "pack",
]
