"""Races: a folder of the workspace swapped for a link to outside while searches run.

A helper process swaps, in a loop, ``dd`` (a folder of the workspace) with a link to a
folder outside that holds a secret file, while ``glob`` and ``grep`` are called again
and again on both engines. Whatever the timing, neither the secret's name nor its
content may come back. Each loop is bounded in rounds and in time.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import PackManager, Session
from toolweave_search import find_ripgrep, pack

ROUNDS = 4000
"""Swaps by the helper process."""

SPIN = 2000
"""Idle loops the helper holds each state for."""

SECONDS = 4.0
"""The helper stops after this long, whatever the count."""

SECRET = "TOPSECRETOUTSIDE"
SECRET_NAME = "outside_only_name.txt"

_SWAPPER = textwrap.dedent(
    """
    import os, sys, time
    ws, out, rounds, seconds, spin = sys.argv[1:6]
    os.chdir(ws)
    end = time.monotonic() + float(seconds)

    def step(call, *args):
        try:
            call(*args)
        except OSError:
            pass

    print("ready", flush=True)
    done = 0
    while done < int(rounds) and time.monotonic() < end:
        done += 1
        step(os.rename, "dd", "dd_real")
        step(os.symlink, out, "dd")
        for _ in range(int(spin)):
            pass
        step(os.unlink, "dd")
        step(os.rename, "dd_real", "dd")
        for _ in range(int(spin)):
            pass
    print(done, flush=True)
    """
)


@contextlib.contextmanager
def _swapping(workspace: Path, outside: Path) -> Iterator[subprocess.Popen[str]]:
    """The helper process, swapping ``dd`` until its rounds or its time run out."""
    argv = [str(workspace), str(outside), str(ROUNDS), str(SECONDS), str(SPIN)]
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


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose folder ``dd`` holds files with ordinary names and content, and
    a folder beside it with the secret."""
    root = tmp_path / "ws"
    (root / "dd" / "sub").mkdir(parents=True)
    for i in range(20):
        (root / "dd" / f"inside{i}.txt").write_text(f"line {i}\nnothing here\n")
    (root / "dd" / "sub" / "deeper.txt").write_text("nothing here either\n")
    (root / "top.txt").write_text("top level\n")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / SECRET_NAME).write_text(f"{SECRET}\n")
    (outside / "sub" / "deeper.txt").write_text(f"{SECRET} deeper\n")
    (outside / "inside0.txt").write_text(f"{SECRET} under an inside name\n")
    return root


def _session(root: Path, engine: str) -> Session:
    packs = PackManager(strict=True)
    packs.add("search", pack)
    config = {
        "tools": [
            {"id": "grep", "params": {"engine": engine}},
            {"id": "glob", "params": {"engine": engine}},
        ]
    }
    return packs.builder().build(config).session(workspace=root, debug=True)


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "glob": ("glob", {"pattern": "**/*"}),
    "glob(dd)": ("glob", {"pattern": "**/*", "path": "dd"}),
    "grep(content)": ("grep", {"pattern": ".", "output_mode": "content"}),
    "grep(dd,content)": ("grep", {"pattern": ".", "path": "dd", "output_mode": "content"}),
    "grep(count)": ("grep", {"pattern": SECRET[:6], "output_mode": "count"}),
}

ENGINES = [
    pytest.param("python", id="python"),
    pytest.param(
        "ripgrep",
        id="ripgrep",
        marks=pytest.mark.skipif(find_ripgrep() is None, reason="ripgrep is not installed"),
    ),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_swap_during_a_search_never_reaches_outside(
    workspace: Path, engine: str, call: str
) -> None:
    """While ``dd`` is swapped for a link to outside and back, no search result holds
    the outside secret's name or content (the swap only makes results incomplete)."""
    name, args = CALLS[call]
    session = _session(workspace, engine)
    leaks: list[str] = []
    calls = 0

    async def hammer(swapping: subprocess.Popen[str]) -> None:
        nonlocal calls
        deadline = time.monotonic() + SECONDS + 5
        while swapping.poll() is None and time.monotonic() < deadline:
            result = await session.call(name, args)
            calls += 1
            text = result.text
            if SECRET in text or SECRET_NAME in text:
                leaks.append(text)
            elif args["pattern"] == SECRET[:6] and text != "No matches found.":
                leaks.append(text)  # only the outside files hold the pattern

    with _swapping(workspace, workspace.parent / "outside") as swapping:
        anyio.run(hammer, swapping)
    assert calls > 0
    assert leaks == []
