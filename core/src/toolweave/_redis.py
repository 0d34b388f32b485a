"""A blocking facade over the ``redis`` package's asyncio client, for the stores whose
interface blocks (the registry center's, the runtime state's): each store's client lives
on an event loop in a daemon thread of its own, so a host's event loop never carries
Redis I/O and a sync caller can use it too."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar, final

from toolweave._secrets import strip_userinfo

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["RedisLink", "RedisUnavailable", "link", "safe_url"]

T = TypeVar("T")


def safe_url(url: str) -> str:
    """``url`` without its user and password (``redis://***@host:port/db``)."""
    return strip_userinfo(url)


class RedisUnavailable(Exception):
    """Redis could not be reached (or answered too slowly); the message says which."""


@final
class RedisLink:
    """One Redis URL's client on its loop thread.

    Args:
        url: ``redis://[user:password@]host:port/db`` (or ``rediss://``).
        timeout: Seconds one command may take (connecting included).
    """

    def __init__(self, url: str, *, timeout: float = 2.0) -> None:
        try:
            import redis.asyncio as aioredis
        except ImportError as exc:  # pragma: no cover - the extra is missing
            raise RedisUnavailable(
                "the redis package is missing: pip install 'toolweave[redis]'"
            ) from exc
        self.url = url
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="toolweave-redis", daemon=True
        )
        self._thread.start()
        self.client: redis.asyncio.Redis = self.run(_make(aioredis, url, timeout), "connecting")

    def run(self, awaitable: Awaitable[T], what: str = "a command") -> T:
        """Run ``awaitable`` on the link's loop and wait for it (at most ``timeout``
        seconds plus a margin).

        Raises:
            RedisUnavailable: Redis is down, refused the connection, or timed out.
        """
        import redis.exceptions

        future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), self._loop)
        try:
            return future.result(self.timeout * 2 + 1)
        except FutureTimeout:
            future.cancel()
            raise RedisUnavailable(
                f"Redis at {self.safe_url} did not answer {what} in time"
            ) from None
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            raise RedisUnavailable(f"Redis at {self.safe_url} is unreachable ({exc})") from exc

    def spawn(self, factory: Callable[[], Awaitable[Any]]) -> None:
        """Start a background task on the link's loop (a pub/sub listener)."""
        self._loop.call_soon_threadsafe(lambda: self._loop.create_task(_awaited(factory())))

    @property
    def safe_url(self) -> str:
        """The URL without its password."""
        return safe_url(self.url)

    def close(self) -> None:
        """Stop the link's background tasks, close the client and stop the loop
        (idempotent)."""
        loop = self._loop
        if loop.is_closed():
            return

        async def shutdown() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.client.aclose()

        with contextlib.suppress(Exception):  # closing anyway: the process may be ending
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(self.timeout + 5)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            loop.close()


async def _make(aioredis: Any, url: str, seconds: float) -> redis.asyncio.Redis:
    client: redis.asyncio.Redis = aioredis.Redis.from_url(
        url,
        socket_timeout=seconds,
        socket_connect_timeout=seconds,
        health_check_interval=10,
        retry_on_timeout=False,
    )
    return client


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def link(url: str, *, timeout: float = 2.0) -> RedisLink:
    """A new link to ``url`` (see :class:`RedisLink`)."""
    return RedisLink(url, timeout=timeout)
