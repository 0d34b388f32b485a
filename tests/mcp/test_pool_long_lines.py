"""Long lines from a stdio server: read in time linear in their length, bounded by
``MAX_LINE``."""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import pytest
from toolweave import Session
from toolweave.mcp import MCPPool, ServerConfig, _transport
from toolweave.mcp._transport import _WholeLines

from .conftest import PY, SERVERS

pytestmark = pytest.mark.anyio


class _Pieces:
    """A byte stream that hands out its pieces one per read, then ends."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self.pieces:
            raise anyio.EndOfStream
        return self.pieces.pop(0)


async def _read_all(stream: _WholeLines) -> list[bytes]:
    out: list[bytes] = []
    while True:
        try:
            out.append(await stream.receive())
        except anyio.EndOfStream:
            return out


async def test_reads_are_whole_lines_whatever_the_pieces() -> None:
    """Each read ends at a line's end (several lines at once when a piece holds them);
    what ends the stream without one comes last."""
    stream = _WholeLines(_Pieces(b"ab", b"c\nde", b"f", b"g\nh\ni", b"j"), 1 << 20, "s")
    assert await _read_all(stream) == [b"abc\n", b"defg\nh\n", b"ij"]


async def test_a_line_over_the_limit_ends_the_stream_then_passes_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A line longer than the limit ends the stream and stops the server, with a
    warning; later reads hand on what comes as it comes (the SDK drains it)."""
    killed: list[bool] = []
    pieces = _Pieces(b"ok\n", b"abc", b"def", b"gh\n", b"x")
    stream = _WholeLines(pieces, 4, "srv", lambda: killed.append(True))
    with caplog.at_level(logging.WARNING, "toolweave.mcp"):
        assert await stream.receive() == b"ok\n"
        assert not killed
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
    assert killed == [True]
    assert "'srv' wrote a message of more than 0 MiB; it is stopped" in caplog.text
    assert await _read_all(stream) == [b"gh\n", b"x"]


async def test_a_long_answer_arrives_whole(host_session: Callable[..., Session]) -> None:
    """A 3 MiB answer (many reads of the pipe) reaches the model intact."""
    config = ServerConfig(command=PY, args=[str(SERVERS / "long_lines.py")])
    session = host_session()
    async with MCPPool(session, {"l": config}) as pool:
        assert await pool.wait_online("l")
        size = 3 << 20
        result = await session.call("mcp__l__big", {"size": size})
        assert result.error is None, result.text
        assert result.text == ("0123456789" * (size // 10 + 1))[:size]
        small = await session.call("mcp__l__big", {"size": 5})
        assert small.text == "01234"


async def test_a_line_over_the_limit_takes_the_server_offline(
    host_session: Callable[..., Session],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server whose line passes ``MAX_LINE`` is stopped and goes offline at once (not
    after the connect timeout), and the log says why."""
    monkeypatch.setattr(_transport, "MAX_LINE", 1 << 20)
    config = ServerConfig(
        command=PY, args=[str(SERVERS / "long_lines.py"), "2"], connect_timeout=20_000
    )
    session = host_session()
    with caplog.at_level(logging.WARNING, "toolweave.mcp"):
        async with MCPPool(session, {"l": config}) as pool:
            assert not await pool.wait_online("l")
            status = pool.status("l")
            assert status.state == "offline"
            assert status.error is not None
            assert "closed its output before the handshake" in status.error
    assert "wrote a message of more than 1 MiB; it is stopped" in caplog.text
