"""The ``memory_delete`` tool: forget memories that are wrong or no longer apply."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_memory._scopes import store_for, visible_scopes
from toolweave_memory._store import MAX_ID

__all__ = ["DeletedMemories", "MemoryDelete", "MemoryDeleteArgs"]


class MemoryDeleteArgs(BaseModel):
    """Arguments of ``memory_delete``."""

    ids: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Field(
        min_length=1,
        max_length=100,
        description="Ids of the memories to delete, as memory_search shows them (`[12]`).",
    )
    """The memories to delete."""


class DeletedMemories(ToolOutput):
    """What ``memory_delete`` returns."""

    deleted: list[int]
    """The ids deleted."""

    missing: list[int] = Field(default_factory=list)
    """Ids asked for that no visible memory has."""

    def to_model(self) -> str:
        """Which ids were deleted, and which were not found."""
        text = f"Deleted {len(self.deleted)} memor{'y' if len(self.deleted) == 1 else 'ies'}: "
        text += ", ".join(map(str, self.deleted)) + "."
        if self.missing:
            text += f" Not found: {', '.join(map(str, self.missing))}."
        return text


class MemoryDelete(Tool[MemoryDeleteArgs, DeletedMemories]):
    """Delete memories by id."""

    id = "memory_delete"
    namespace = "memory"
    kind = Kind.MEMORY_SEARCH
    description = """\
Delete memories that turned out wrong or no longer apply, by the ids memory_search \
shows. To correct a memory rather than drop it, save it again with `replace_id` \
instead. Only memories this session can see (shared ones and its own) are deleted."""
    capabilities = Capabilities(read_only=False, scope="workspace", timeout=30.0)

    def run(self, ctx: Context, args: MemoryDeleteArgs) -> DeletedMemories:
        """Delete what is visible; fail when nothing was."""
        wanted = sorted(set(args.ids))
        deleted = store_for(ctx).delete(wanted, visible=visible_scopes(ctx))
        if not deleted:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no memory with id {', '.join(map(str, wanted))} is visible to this session",
            )
        missing = [i for i in wanted if i not in deleted]
        return DeletedMemories(deleted=deleted, missing=missing)
