"""Cancel ``serve_http`` from code while clients of both eras hold streams open.

Run as a script (the test reads its stderr whole, asyncio's exit included): serves a
session on a free port, connects a 2026-07-28 client listening for list changes and a
2025-era client, cancels the server's scope, then serves again on the same port.
Prints ``returned``, then ``served again`` on stdout.
"""

from __future__ import annotations

import logging
import sys

import anyio
from mcp import Client
from toolweave import ToolSetBuilder
from toolweave.mcp import serve_http

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)


async def serve_until_cancelled(port: int, clients: bool) -> int:
    session = ToolSetBuilder().build().session()
    urls: list[str] = []
    ready = anyio.Event()
    scope = anyio.CancelScope()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    async def server() -> None:
        with scope:
            await serve_http(session, "127.0.0.1", port, on_ready=on_ready)
        print("returned", flush=True)

    async def modern(listening: anyio.Event) -> None:
        async with Client(urls[0]) as client, client.listen(tools_list_changed=True) as sub:
            listening.set()
            async for _event in sub:
                pass

    async def legacy(connected: anyio.Event) -> None:
        async with Client(urls[0], mode="legacy") as client:
            await client.list_tools()
            connected.set()
            await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(server)
        await ready.wait()
        if clients:
            with anyio.CancelScope() as client_scope:
                async with anyio.create_task_group() as inner:
                    listening, connected = anyio.Event(), anyio.Event()
                    inner.start_soon(modern, listening)
                    inner.start_soon(legacy, connected)
                    await listening.wait()
                    await connected.wait()
                    scope.cancel()
                    with anyio.fail_after(10):
                        while not scope.cancelled_caught:  # noqa: ASYNC110
                            await anyio.sleep(0.05)
                    client_scope.cancel()
        else:
            scope.cancel()
    return int(urls[0].rsplit(":", 1)[1].split("/")[0])


async def main() -> None:
    port = await serve_until_cancelled(0, clients=True)
    await serve_until_cancelled(port, clients=False)
    print("served again", flush=True)


anyio.run(main)
