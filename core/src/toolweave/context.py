"""The context a tool receives with each call."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar, final

from toolweave.errors import MissingResourceError

if TYPE_CHECKING:
    from toolweave.resources import Resources
    from toolweave.session import Session
    from toolweave.toolset import ToolEntry

__all__ = ["Context"]

T = TypeVar("T")


@final
class Context:
    """What a running tool can see: its session's resources, its params, its call.

    One is created per call; tools should not keep it after the call returns.

    Attributes:
        session: The session the call belongs to.
        entry: The configured entry being called (client name, effective params).
        call_id: The host's id for the call, if any.
    """

    __slots__ = ("call_id", "entry", "session")

    def __init__(self, session: Session, entry: ToolEntry | None, call_id: str | None) -> None:
        self.session = session
        self.entry = entry
        self.call_id = call_id

    @property
    def resources(self) -> Resources:
        """The session's resources."""
        return self.session.resources

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self.session.session_id

    def get(self, key: type[T]) -> T | None:
        """The resource stored under ``key``, or ``None``."""
        return self.session.resources.get(key)

    def require(self, key: type[T]) -> T:
        """The resource stored under ``key``.

        Raises:
            MissingResourceError: None was provided (the call fails as ``unavailable``).
        """
        return self.session.resources.require(key)

    def params(self, key: type[T]) -> T:
        """The effective params of type ``key`` for this call.

        The configured entry's params come first, then a value in the resources, then
        the model's defaults when ``key`` is this tool's params model.
        """
        entry = self.entry
        if entry is not None:
            mine = entry.params
            if mine is not None and type(mine) is key:
                return mine
        found = self.session.resources.get(key)
        if found is not None:
            return found
        if entry is not None and entry.tool.params_type is key:
            return key()
        raise MissingResourceError(key)

    def __repr__(self) -> str:
        name = self.entry.name if self.entry is not None else None
        return f"<Context {name} call_id={self.call_id!r} session={self.session_id!r}>"
