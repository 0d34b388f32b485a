"""The ``memory_save`` tool: remember a fact, a decision or a preference."""

from __future__ import annotations

from pydantic import BaseModel, Field
from toolweave import Capabilities, Context, ErrorKind, Kind, Tool, ToolError, ToolOutput

from toolweave_memory._scopes import Scope, Tag, scope_key, store_for, visible_scopes
from toolweave_memory._store import MAX_ID

__all__ = ["MemorySave", "MemorySaveArgs", "MemorySaveParams", "SavedMemory"]


class MemorySaveArgs(BaseModel):
    """Arguments of ``memory_save``."""

    content: str = Field(
        min_length=1,
        description="What to remember, self-contained: it is read later without this conversation.",
    )
    """The memory's text."""

    title: str | None = Field(
        default=None, max_length=200, description="A short title that names what it is about."
    )
    """A title (weighs most in searches)."""

    tags: list[Tag] = Field(
        default_factory=list,
        max_length=20,
        description="Tags to find it by, e.g. `preference`, `build`, `decision`.",
    )
    """Tags."""

    scope: Scope | None = Field(
        default=None,
        description=(
            "`shared`: every session of this workspace sees it; `session`: only this "
            "session (default set by the host)."
        ),
    )
    """Who sees it."""

    replace_id: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ID,
        description="Id of a memory to overwrite (to correct it), not add.",
    )
    """The memory to replace."""


class MemorySaveParams(BaseModel):
    """Configuration of ``memory_save``."""

    default_scope: Scope = "shared"
    """The scope of a memory saved without one."""

    max_chars: int = Field(default=8_000, ge=100)
    """The longest memory accepted."""


class SavedMemory(ToolOutput):
    """What ``memory_save`` returns."""

    id: int
    """The memory's id (for ``replace_id`` and deleting)."""

    scope: Scope
    """Who sees it."""

    tags: list[str]
    """Its tags."""

    new: bool
    """Whether a new memory was stored (rather than an existing one updated)."""

    def to_model(self) -> str:
        """One line: saved or updated, id, scope, tags."""
        tags = f", tags: {', '.join(self.tags)}" if self.tags else ""
        done = "Saved" if self.new else "Updated"
        return f"{done} memory {self.id} ({self.scope}{tags})."


class MemorySave(Tool[MemorySaveArgs, SavedMemory]):
    """Store a memory in the workspace's memory database."""

    id = "memory_save"
    namespace = "memory"
    kind = Kind.MEMORY_SEARCH
    description = """\
Save something worth remembering beyond this conversation: a user preference, a \
decision and its reason, a fact about the project or its environment, a fix that \
worked. Write it self-contained (it is read later without this conversation), give \
it a short `{param:title}` and a few `{param:tags}`. Saving the same text again updates it instead \
of adding a copy; `{param:replace_id}` corrects an earlier memory.

Do not save secrets, passwords or tokens, things the code or its files already say, \
or the progress of the current task (use the todo list for that)."""
    capabilities = Capabilities(read_only=False, scope="workspace", timeout=30.0)
    params = MemorySaveParams

    def run(self, ctx: Context, args: MemorySaveArgs) -> SavedMemory:
        """Check the size, store, report."""
        params = ctx.params(MemorySaveParams)
        content = args.content.strip()
        if not content:
            raise ToolError(ErrorKind.INVALID_PARAMS, "content is blank; say what to remember")
        if len(content) > params.max_chars:
            raise ToolError(
                ErrorKind.INVALID_PARAMS,
                f"the memory has {len(content)} characters; at most {params.max_chars} are "
                "kept. Save the essentials, or several smaller memories.",
            )
        scope = args.scope or params.default_scope
        saved = store_for(ctx).save(
            scope=scope_key(scope, ctx),
            content=content,
            title=(args.title or "").strip(),
            tags=args.tags,
            replace_id=args.replace_id,
            visible=visible_scopes(ctx),
        )
        if saved is None:
            raise ToolError(
                ErrorKind.NOT_FOUND,
                f"no memory {args.replace_id} is visible to this session; search for it first",
            )
        memory, new = saved
        return SavedMemory(id=memory.id, scope=scope, tags=list(memory.tags), new=new)
