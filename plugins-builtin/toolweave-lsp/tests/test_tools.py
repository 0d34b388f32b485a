"""The language-server tools end to end on a real ``pylsp`` over a small project."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from toolweave import ErrorKind
from toolweave.processes import process_alive
from toolweave_lsp import LanguageServers

from .conftest import SessionFactory

pytestmark = pytest.mark.anyio


def server_pids(session: object) -> list[int]:
    servers = session.resources.get(LanguageServers)  # type: ignore[attr-defined]
    assert servers is not None
    return [c._process.pid for c in servers.clients if c._process is not None]


async def test_diagnostics_report_the_deliberate_error_and_follow_changes(
    make_session: SessionFactory, workspace: Path
) -> None:
    """The undefined name is reported with its place; once the file is fixed on disk,
    the next call reports no problem (the server is told the new text)."""
    session = make_session()
    found = await session.call("diagnostics", {"path": "pkg/main.py"})
    assert found.error is None, found.text
    assert "pkg/main.py:6:29: error: undefined name 'undefined_name'" in found.text
    assert isinstance(found.output, dict)
    assert found.output["diagnostics"][0]["severity"] == "error"
    main = workspace / "pkg" / "main.py"
    main.write_text(main.read_text().replace(" + undefined_name", ""))
    clean = await session.call("diagnostics", {"path": "pkg/main.py"})
    assert clean.error is None, clean.text
    assert clean.text == "No problems reported in `pkg/main.py`."


async def test_definition_references_hover_and_symbols(make_session: SessionFactory) -> None:
    """Each question answered from the server, in the model's coordinates (lines and
    columns from 1, paths relative to the workspace)."""
    session = make_session()
    definition = await session.call(
        "go_to_definition", {"path": "pkg/main.py", "line": 5, "symbol": "Square"}
    )
    assert definition.text == "pkg/shapes.py:4:7: class Square:"
    references = await session.call(
        "find_references", {"path": "pkg/shapes.py", "line": 4, "symbol": "Square"}
    )
    lines = references.text.splitlines()
    assert "pkg/main.py:5:16: squares = [Square(2), Square(3)]" in lines
    assert "pkg/main.py:5:27: squares = [Square(2), Square(3)]" in lines
    assert "pkg/shapes.py:15:24: def total(shapes: list[Square]) -> float:" in lines
    by_column = await session.call(
        "go_to_definition", {"path": "pkg/main.py", "line": 6, "column": 12}
    )
    assert by_column.text.startswith("pkg/shapes.py:15:5: def total(")
    hover = await session.call("hover", {"path": "pkg/main.py", "line": 6, "symbol": "total"})
    assert "total(shapes: list[Square]) -> float" in hover.text
    symbols = await session.call("document_symbols", {"path": "pkg/shapes.py"})
    outline = symbols.text.splitlines()
    assert outline[0] == "class Square (line 4)"
    assert "  method area (line 10)" in outline
    assert "function total (line 15)" in outline


async def test_bad_places_and_files_are_typed_errors(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A line past the end, a symbol not on the line, no symbol and no column, a file
    no server is configured for, a directory and a path outside the workspace are
    refused with what to do; the server keeps working."""
    session = make_session()
    cases = [
        ({"path": "pkg/main.py", "line": 99, "symbol": "x"}, "line 99 is past the end"),
        ({"path": "pkg/main.py", "line": 1, "symbol": "nope"}, "`nope` is not on line 1"),
        ({"path": "pkg/main.py", "line": 1}, "give `symbol`"),
        ({"path": "notes.txt", "line": 1, "symbol": "not"}, "no language server"),
        ({"path": "pkg", "line": 1, "symbol": "x"}, "is a directory"),
    ]
    for args, message in cases:
        result = await session.call("hover", args)
        assert result.error is not None
        assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text
        assert message in result.text
    outside = await session.call("diagnostics", {"path": str(workspace.parent / "x.py")})
    assert outside.error is not None
    assert outside.error.kind is ErrorKind.PERMISSION_DENIED
    assert (await session.call("diagnostics", {"path": "pkg/shapes.py"})).error is None


async def test_edit_adds_the_errors_it_introduced(make_session: SessionFactory) -> None:
    """An edit that breaks the code is followed by the server's new error; an edit
    that adds none, and the old error of another file, add nothing."""
    session = make_session()
    await session.call("read_file", {"path": "pkg/shapes.py"})
    fine = await session.call(
        "edit_file",
        {"path": "pkg/shapes.py", "old_string": '"""Shapes."""', "new_string": '"""Shapes!"""'},
    )
    assert fine.error is None, fine.text
    assert "Diagnostics found" not in fine.text
    broken = await session.call(
        "edit_file",
        {
            "path": "pkg/shapes.py",
            "old_string": "return self.side * self.side",
            "new_string": "return self.side * sidez",
        },
    )
    assert broken.error is None, broken.text
    assert "Diagnostics found in files you edited:" in broken.text
    assert "pkg/shapes.py:12:28: error: undefined name 'sidez' [pyflakes]" in broken.text
    again = await session.call(
        "edit_file",
        {"path": "pkg/shapes.py", "old_string": '"""Shapes!"""', "new_string": '"""Shapes."""'},
    )
    assert "Diagnostics found" not in again.text  # the error is not new any more
    await session.call("read_file", {"path": "pkg/main.py"})
    other = await session.call(
        "edit_file", {"path": "pkg/main.py", "old_string": "float:", "new_string": "float :"}
    )
    assert "Diagnostics found" not in other.text  # undefined_name was there before


async def test_a_dead_server_is_started_again_and_close_stops_it(
    make_session: SessionFactory,
) -> None:
    """Killing the server's process group between calls costs nothing: the next call
    starts another. Closing the session leaves no server process behind."""
    session = make_session()
    assert (await session.call("document_symbols", {"path": "pkg/main.py"})).error is None
    (first,) = server_pids(session)
    os.killpg(first, signal.SIGKILL)
    again = await session.call("document_symbols", {"path": "pkg/main.py"})
    assert again.error is None, again.text
    assert "function run (line 4)" in again.text
    (second,) = server_pids(session)
    assert second != first
    await session.aclose()
    assert not process_alive(second)


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["/nonexistent/lsp-server"], "could not be started"),
        ([sys.executable, "-c", "import time; time.sleep(60)"], "did not answer in time"),
        (
            [sys.executable, "-c", "import sys, time; print('hello'); sys.stdout.flush(); "
             "time.sleep(60)"],
            "did not start",
        ),
    ],
)  # fmt: skip
async def test_a_server_that_cannot_start_is_unavailable(
    make_session: SessionFactory, command: list[str], message: str
) -> None:
    """A missing command, a server that never answers and one that does not speak
    the protocol end the call as ``unavailable`` within the start timeout, naming the
    command; no process is left running."""
    params = {"servers": {"python": command}, "start_timeout_s": 2}
    session = make_session({"tools": [{"id": "diagnostics", "params": params}]})
    result = await session.call("diagnostics", {"path": "pkg/main.py"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE, result.text
    assert message in result.text
    assert command[0] in result.text
    servers = session.resources.get(LanguageServers)
    assert servers is not None
    assert servers.clients == []


def test_a_session_never_closed_leaves_no_server_behind(workspace: Path) -> None:
    """A host that drops a session without closing it (as a one-shot command does)
    leaves no language server running and no file open once the session is collected."""
    import gc
    import time
    import warnings

    import anyio
    import toolweave_fs
    import toolweave_lsp
    from toolweave import PackManager

    packs = PackManager(strict=True)
    packs.add("fs", toolweave_fs.pack)
    packs.add("lsp", toolweave_lsp.pack)
    session = packs.builder().build().session(workspace=workspace)
    result = anyio.run(session.call, "document_symbols", {"path": "pkg/main.py"})
    assert result.error is None, result.text
    (pid,) = server_pids(session)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        del session, result
        gc.collect()
    deadline = time.monotonic() + 10
    while process_alive(pid):
        assert time.monotonic() < deadline, "the server outlived its session"
        time.sleep(0.05)


FAKE_SERVER = Path(__file__).with_name("fake_server.py")


def fake(mode: str) -> dict[str, object]:
    """A configuration whose ``document_symbols`` asks the scripted server in ``mode``."""
    params = {"servers": {"python": [sys.executable, str(FAKE_SERVER), mode]}}
    return {"tools": [{"id": "document_symbols", "params": params}]}


async def test_a_fifo_is_refused_without_waiting(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A FIFO named like a Python file is refused as not a regular file at once, by
    ``diagnostics`` and ``document_symbols`` alike: nothing waits for a writer, neither
    the call nor the event loop (which keeps running meanwhile)."""
    import contextlib
    import threading

    import anyio

    fifo = workspace / "pkg" / "pipe.py"
    os.mkfifo(fifo)

    def release() -> None:  # frees a reader stuck on the FIFO: a regression fails, not hangs
        with contextlib.suppress(OSError):  # no reader: nothing is stuck
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    releaser = threading.Timer(25, release)
    releaser.daemon = True
    releaser.start()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    session = make_session()
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(tick)
                results = [
                    await session.call(tool, {"path": "pkg/pipe.py"})
                    for tool in ("diagnostics", "document_symbols")
                ]
                await anyio.sleep(0.05)
                group.cancel_scope.cancel()
    finally:
        releaser.cancel()
    for result in results:
        assert result.error is not None
        assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text
        assert "`pkg/pipe.py` is not a regular file" in result.text
    assert ticks > 0
    servers = session.resources.get(LanguageServers)
    assert servers is not None
    assert servers.clients == []  # refused before any server was asked


async def test_a_file_over_the_limit_is_refused(
    make_session: SessionFactory, workspace: Path
) -> None:
    """A source file larger than the pack sends a server is refused, not read."""
    from toolweave_lsp._files import MAX_FILE_BYTES

    with (workspace / "pkg" / "huge.py").open("wb") as file:
        file.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    session = make_session()
    result = await session.call("diagnostics", {"path": "pkg/huge.py"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS, result.text
    assert "is over the limit" in result.text


async def test_a_message_nested_too_deeply_is_a_typed_error(
    make_session: SessionFactory,
) -> None:
    """An answer nested deeper than the JSON parser goes is an execution error naming
    the server, not a RecursionError; the server keeps working for the next call."""
    session = make_session(fake("deep"))
    deep = await session.call("document_symbols", {"path": "pkg/main.py"})
    assert deep.error is not None
    assert deep.error.kind is ErrorKind.EXECUTION_ERROR, deep.text
    assert "sent a message nested too deeply" in deep.text
    assert str(FAKE_SERVER) in deep.text
    assert "RecursionError" not in deep.text
    again = await session.call("document_symbols", {"path": "pkg/main.py"})
    assert again.error is None, again.text
    assert again.text == "class ok (line 1)"
    (pid,) = server_pids(session)  # the same server answered: it was not restarted
    assert process_alive(pid)


async def test_a_deep_outline_is_cut_at_the_depth_limit(make_session: SessionFactory) -> None:
    """An outline nested 40 levels deep lists the first 32 levels and counts the rest."""
    session = make_session(fake("tall"))
    result = await session.call("document_symbols", {"path": "pkg/main.py"})
    assert result.error is None, result.text
    lines = result.text.splitlines()
    assert lines[0] == "class level-1 (line 1)"
    assert lines[31] == "  " * 31 + "class level-32 (line 1)"
    assert lines[32] == "[8 symbols nested deeper than 32 levels not shown]"
    assert len(lines) == 33
