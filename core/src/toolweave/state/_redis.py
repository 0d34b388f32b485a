"""Runtime state on Redis, for sessions whose turns run on several machines."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any, final

from toolweave._redis import RedisLink, RedisUnavailable
from toolweave.state._store import StateConflict, StoredState

__all__ = ["RedisStateStore"]


# One script: the compare-and-set of every expected key and the writes happen in one
# step on the server, so no other client's save can come between them.
_SAVE = """
local expected = cjson.decode(ARGV[1])
local changes = cjson.decode(ARGV[2])
local conflicts = {}
local conflicted = false
for key, want in pairs(expected) do
  local version = tonumber(redis.call('HGET', KEYS[2], key) or '0')
  local value = redis.call('HGET', KEYS[1], key)
  local live = 0
  if value then live = version end
  if live ~= want then
    conflicted = true
    if value then conflicts[key] = {value, version} else conflicts[key] = false end
  end
end
if conflicted then return cjson.encode({conflicts = conflicts}) end
local versions = {}
for key, value in pairs(changes) do
  if value == cjson.null then
    if redis.call('HDEL', KEYS[1], key) == 1 then redis.call('HINCRBY', KEYS[2], key, 1) end
    versions[key] = 0
  else
    redis.call('HSET', KEYS[1], key, value)
    versions[key] = redis.call('HINCRBY', KEYS[2], key, 1)
  end
end
return cjson.encode({versions = versions})
"""


@final
class RedisStateStore:
    """Sessions' runtime state in Redis (``redis://host:port/db``), with the
    compare-and-set guarantee of :class:`~toolweave.state.StateStore`: a save with
    expected versions is one Lua script, so it stores every change or none, and never
    overwrites a write it has not seen, whichever machine made it.

    Each session is two hashes: ``<prefix>:<session>`` (key → JSON text) and
    ``<prefix>:<session>:versions`` (key → version; a version never goes back, not
    even when the key is deleted).

    Args:
        url: The Redis URL.
        prefix: The keys' prefix.
        timeout: Seconds one Redis command may take.

    Raises:
        ConnectionError: Redis cannot be reached (also raised by ``load`` and ``save``
            while it is down; a session then keeps its changes in memory and saves them
            with a later call).
    """

    def __init__(self, url: str, *, prefix: str = "toolweave:state", timeout: float = 2.0):
        self.prefix = prefix
        try:
            self._link = RedisLink(url, timeout=timeout)
            self._link.run(self._link.client.ping(), "PING")
        except RedisUnavailable as exc:
            raise ConnectionError(str(exc)) from exc
        self._save = self._link.client.register_script(_SAVE)

    def __repr__(self) -> str:
        return f"<RedisStateStore {self._link.safe_url}#{self.prefix}>"

    def _keys(self, session_id: str) -> tuple[str, str]:
        base = f"{self.prefix}:{session_id}"
        return base, f"{base}:versions"

    def _run(self, awaitable: Any, what: str) -> Any:
        try:
            return self._link.run(awaitable, what)
        except RedisUnavailable as exc:
            raise ConnectionError(str(exc)) from exc

    def load(self, session_id: str, keys: Collection[str] | None = None) -> dict[str, StoredState]:
        """See :meth:`StateStore.load <toolweave.state.StateStore.load>`."""
        values_key, versions_key = self._keys(session_id)
        client = self._link.client

        async def read() -> dict[str, StoredState]:
            async with client.pipeline(transaction=True) as pipe:
                if keys is None:
                    pipe.hgetall(values_key)
                    pipe.hgetall(versions_key)
                    values, versions = await pipe.execute()
                    found = {k.decode(): v.decode() for k, v in values.items()}
                    numbers = {k.decode(): int(v) for k, v in versions.items()}
                else:
                    wanted = list(keys)
                    if not wanted:
                        return {}
                    pipe.hmget(values_key, wanted)
                    pipe.hmget(versions_key, wanted)
                    values, versions = await pipe.execute()
                    found = {k: v.decode() for k, v in zip(wanted, values, strict=True) if v}
                    numbers = {
                        k: int(v) for k, v in zip(wanted, versions, strict=True) if v is not None
                    }
            return {k: StoredState(v, numbers.get(k, 1)) for k, v in found.items()}

        return self._run(read(), "a state read")  # type: ignore[no-any-return]

    def save(
        self,
        session_id: str,
        changes: Mapping[str, str | None],
        *,
        expected: Mapping[str, int] | None = None,
    ) -> dict[str, int]:
        """See :meth:`StateStore.save <toolweave.state.StateStore.save>`."""
        if not changes and not expected:
            return {}
        keys = self._keys(session_id)
        args = [json.dumps(dict(expected or {})), json.dumps(dict(changes))]
        raw = self._run(self._save(keys=list(keys), args=args), "a state save")
        answer = json.loads(raw)
        conflicts = answer.get("conflicts")
        if conflicts is not None:
            current = {
                key: None if found is False else StoredState(found[0], int(found[1]))
                for key, found in conflicts.items()
            }
            raise StateConflict(session_id, current)
        versions = answer.get("versions")
        # Lua's cjson writes an empty table as an object or an array alike.
        return {k: int(v) for k, v in versions.items()} if isinstance(versions, dict) else {}

    def close(self) -> None:
        """Close the connection."""
        self._link.close()
