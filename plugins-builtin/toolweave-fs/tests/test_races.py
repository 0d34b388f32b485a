"""Races: a directory or file swapped for a link to the outside while a tool runs.

A helper process swaps, in a loop, ``dd`` (a directory of the workspace) with a link
to a folder outside, and ``f.txt`` with a link to an outside file, while the tools are
called again and again. Whatever the timing, nothing outside may change and no
outside content may come back. Each loop is bounded in rounds and in time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import Session

ROUNDS = 3000
"""Swaps by the helper process: enough that the old check-then-use code escaped in
every run of these tests (see the pack README)."""

SPIN = 3000
"""Idle loops the helper holds each state for, so that both last about as long as a
tool's check and its use are apart."""

SECONDS = 8.0
"""The helper stops after this long, whatever the count."""

SECRET = "TOP SECRET OUTSIDE"

_SWAPPER = textwrap.dedent(
    """
    import os, sys, time
    ws, out, what, rounds, seconds = sys.argv[1:6]
    os.chdir(ws)
    end = time.monotonic() + float(seconds)
    spin = int(sys.argv[6])  # hold each state a little while
    real, moved = ("dd", "dd_real") if what == "dir" else ("f.txt", "f_real.txt")
    target = out if what == "dir" else os.path.join(out, "secret.txt")

    def step(call, *args):
        try:
            call(*args)
        except OSError:
            pass  # the tool moved or removed something meanwhile

    def put(path, text):
        try:
            with open(path, "w") as fh:
                fh.write(text)
        except OSError:
            pass

    print("ready", flush=True)
    done = 0
    while done < int(rounds) and time.monotonic() < end:
        done += 1
        if done % 8 == 1:  # put back what the tool removed, now and then
            if what == "dir":
                step(os.makedirs, "dd/victim", 0o777, True)
                put("dd/victim/inner.txt", "inside")
                put("dd/secret.txt", "inside")
            elif not os.path.lexists("f.txt"):
                put("f.txt", "inside")
        step(os.rename, real, moved)
        step(os.symlink, target, real)
        for _ in range(spin):
            pass
        step(os.unlink, real)
        step(os.rename, moved, real)
        for _ in range(spin):
            pass
    print(done, flush=True)
    """
)


def _outside_state(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): (p.read_text() if p.is_file() else "<dir>")
        for p in sorted(folder.rglob("*"))
    }


@contextlib.contextmanager
def _swapping(workspace: Path, outside: Path, what: str) -> Iterator[subprocess.Popen[str]]:
    """The helper process, swapping ``dd`` (``what="dir"``) or ``f.txt`` (``"file"``)
    until its rounds or its time run out."""
    (outside / "secret.txt").write_text(SECRET)
    (outside / "victim").mkdir()
    (outside / "victim/precious.txt").write_text(SECRET)
    (workspace / "dd").mkdir()
    (workspace / "f.txt").write_text("inside")
    argv = [str(workspace), str(outside), what, str(ROUNDS), str(SECONDS), str(SPIN)]
    helper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, *argv], stdout=subprocess.PIPE, text=True
    )
    assert helper.stdout is not None
    assert helper.stdout.readline().strip() == "ready"
    try:
        yield helper
    finally:
        helper.kill()
        helper.wait()
        helper.stdout.close()


CALLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "delete": ("dir", "delete", {"path": "dd/victim", "recursive": True}),
    "write_file": ("dir", "write_file", {"path": "dd/new.txt", "content": "pwned"}),
    "write_file(nested)": ("dir", "write_file", {"path": "dd/sub/new.txt", "content": "pwned"}),
    "read_file(parent)": ("dir", "read_file", {"path": "dd/secret.txt"}),
    "read_file(file)": ("file", "read_file", {"path": "f.txt"}),
    "edit_file": (
        "dir",
        "edit_file",
        {"path": "dd/secret.txt", "old_string": "TOP", "new_string": "pwned"},
    ),
    "list_dir": ("dir", "list_dir", {"path": "dd", "depth": 3}),
    "move": (
        "dir",
        "move",
        {"source": "dd/secret.txt", "destination": "stolen.txt", "overwrite": True},
    ),
    "delete(the link itself)": ("file", "delete", {"path": "f.txt"}),
    "delete(the folder itself)": ("dir", "delete", {"path": "dd", "recursive": True}),
    "move(the link itself)": (
        "file",
        "move",
        {"source": "f.txt", "destination": "moved/f.txt", "overwrite": True},
    ),
    "move(into)": (
        "dir",  # only dd is swapped: f.txt is put back by the test
        "move",
        {"source": "f.txt", "destination": "dd/moved.txt", "overwrite": True},
    ),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_swap_during_the_call_never_reaches_outside(
    session: Session, workspace: Path, outside: Path, call: str
) -> None:
    """While a parent or the file is swapped for a link to the outside, the tool neither
    changes anything outside nor returns outside content."""
    what, name, args = CALLS[call]
    with _swapping(workspace, outside, what) as swapping:
        before = _outside_state(outside)
        leaks, calls = _hammer(session, workspace, outside, swapping, name, args)
    assert calls > 0
    assert leaks == []
    assert _outside_state(outside) == before


def _hammer(
    session: Session,
    workspace: Path,
    outside: Path,
    swapping: subprocess.Popen[str],
    name: str,
    args: dict[str, Any],
) -> tuple[list[str], int]:
    """Call the tool until the helper is done; the leaks seen, and how many calls."""
    leaks: list[str] = []
    calls = 0

    async def hammer() -> None:
        nonlocal calls
        deadline = time.monotonic() + SECONDS + 5
        while swapping.poll() is None and time.monotonic() < deadline:
            result = await session.call(name, args)
            calls += 1
            if SECRET in result.text or "precious" in result.text:
                leaks.append(result.text)
            if name == "move":
                _after_move(workspace, leaks)

    anyio.run(hammer)
    return leaks, calls


def _after_move(workspace: Path, leaks: list[str]) -> None:
    """Put ``f.txt`` back when it was moved away, and take away a link moved in (a
    destination leading outside is refused, which would end the moves); note outside
    content moved in."""
    with contextlib.suppress(FileExistsError):  # never through a link swapped in
        fd = os.open(workspace / "f.txt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        os.write(fd, b"inside")
        os.close(fd)
    if (workspace / "moved/f.txt").is_symlink():
        (workspace / "moved/f.txt").unlink()
    stolen = workspace / "stolen.txt"
    if stolen.exists() and stolen.read_text() == SECRET:
        leaks.append("moved the outside secret into the workspace")
