"""FIFOs, devices, links and large files where skills and their resources are read:
refused or read only in part, never waited on or read whole."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolweave import ErrorKind, Kind, PackManager, Session, tool
from toolweave_skills import SkillIndex, pack

pytestmark = pytest.mark.anyio


@tool(kind=Kind.READ, blocking=False)
def peek() -> str:
    """Look at something (a stand-in for any other tool of the session)."""
    return "looked"


def session_for(workspace: Path, **params: Any) -> Session:
    """A session with ``skill`` and ``peek``."""
    packs = PackManager(strict=True)
    packs.add("skills", pack)
    builder = packs.builder()
    builder.add(peek)
    config = {"tools": [{"id": "skill", "params": params}, "peek"]}
    return builder.build(config).session(workspace=workspace, session_id="s1", debug=True)


@pytest.fixture
def fifos() -> Iterator[list[Path]]:
    """FIFOs a test makes; afterwards each reader still waiting on one is released (so a
    failing test ends instead of leaving a thread blocked)."""
    made: list[Path] = []
    yield made
    release(made)


def release(fifos: list[Path]) -> None:
    """Let any reader waiting on one of ``fifos`` see the end of it."""
    for path in fifos:
        with contextlib.suppress(OSError):  # no reader waiting
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def scan_with_deadline(index: SkillIndex, fifos: list[Path]) -> Any:
    """``index.scan()`` in a thread given 20 s; on expiry the FIFOs are released and the
    test fails."""
    found: list[Any] = []
    worker = threading.Thread(target=lambda: found.append(index.scan()), daemon=True)
    worker.start()
    worker.join(20)
    if not found:
        release(fifos)
        worker.join(20)
        pytest.fail("the scan waited on a FIFO")
    return found[0]


def test_fifo_and_linked_skill_files_are_skipped_with_the_reason(
    skill_writer: Any, tmp_path: Path, fifos: list[Path]
) -> None:
    """A FIFO named SKILL.md, and links named SKILL.md (to a FIFO, to a valid skill
    file), are listed as broken with why, without being waited on; other skills load."""
    root = tmp_path / "skills"
    skill_writer(root, "ok", "Fine.")
    (root / "fifo").mkdir()
    fifos.append(root / "fifo" / "SKILL.md")
    os.mkfifo(fifos[-1])
    outside_fifo = tmp_path / "outside-fifo"
    os.mkfifo(outside_fifo)
    fifos.append(outside_fifo)
    (root / "to-fifo").mkdir()
    (root / "to-fifo" / "SKILL.md").symlink_to(outside_fifo)
    (root / "linked").mkdir()
    (root / "linked" / "SKILL.md").symlink_to(root / "ok" / "SKILL.md")
    scan = scan_with_deadline(SkillIndex((root,)), fifos)
    assert list(scan.skills) == ["ok"]
    problems = sorted(scan.problems)
    assert len(problems) == 3, problems
    fifo, linked, to_fifo = problems
    assert fifo.startswith(f"{root / 'fifo' / 'SKILL.md'}: ")
    assert fifo.endswith("it is not a regular file")
    assert linked.endswith("it is a symbolic link")
    assert to_fifo.endswith("it is a symbolic link")


def test_skill_file_linked_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    """A SKILL.md linking to /dev/zero is skipped as a link, not read without end (run in
    a child process with 1 GiB of address space, so a regression fails, not the host)."""
    root = tmp_path / "skills"
    (root / "zero").mkdir(parents=True)
    (root / "zero" / "SKILL.md").symlink_to("/dev/zero")
    code = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from toolweave_skills import SkillIndex\n"
        "print(SkillIndex((Path(sys.argv[1]),)).scan().problems)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2_000:]
    assert "it is a symbolic link" in done.stdout


async def test_a_fifo_skill_file_does_not_hang_other_calls(
    skill_writer: Any, workspace: Path, fifos: list[Path]
) -> None:
    """With a FIFO named SKILL.md, another tool's call (followed by the skills reminder)
    and the listing both return, the listing naming the FIFO as skipped."""
    skills = workspace / ".skills"
    skill_writer(skills, "release", "Cut a release.")
    (skills / "trap").mkdir()
    fifos.append(skills / "trap" / "SKILL.md")
    os.mkfifo(fifos[-1])
    releaser = threading.Timer(25, lambda: os.close(os.open(fifos[0], os.O_WRONLY)))
    releaser.daemon = True
    releaser.start()  # frees a reader stuck on the FIFO, so a regression fails, not hangs
    try:
        session = session_for(workspace, folders=[".skills"])
        with anyio.fail_after(20):
            first = await session.call("peek", {})
            listed = await session.call("skill", {})
    finally:
        releaser.cancel()
    assert first.output == "looked"
    assert "- release: Cut a release." in first.text
    assert listed.error is None, listed.text
    assert "Skipped (broken SKILL.md):" in listed.text
    assert "trap/SKILL.md: it is not a regular file" in listed.text


async def test_reading_a_large_resource_file_reads_only_what_is_returned(
    skill_writer: Any, workspace: Path
) -> None:
    """A resource file far over ``max_file_chars`` is returned cut, and only about 4
    bytes per returned character are read (of 1 MB; the SKILL.md is read too)."""
    folder = skill_writer(workspace / ".skills", "big", "A big file.")
    (folder / "data.txt").write_bytes(b"a" * 1_000_000)
    reads: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        reads.append(len(data))
        return data

    session = session_for(workspace, max_file_chars=1_000)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "read", counting_read)
        result = await session.call("skill", {"name": "big", "file": "data.txt"})
    assert result.error is None, result.text
    assert result.output["file"]["content"] == "a" * 1_000
    assert result.output["file"]["truncated"] is True
    assert 4_001 in reads
    assert sum(reads) < 10_000


async def test_resource_files_that_are_fifos_links_out_or_nul_names(
    skill_writer: Any, workspace: Path, tmp_path: Path, fifos: list[Path]
) -> None:
    """Links leading out of the skill's folder are not listed (a link inside it is); a
    NUL in ``file`` is invalid_params; a FIFO is not read."""
    folder = skill_writer(workspace / ".skills", "s", "S.", **{"notes.md": "notes"})
    (tmp_path / "secret.txt").write_text("secret")
    (folder / "out").symlink_to(tmp_path / "secret.txt")
    (folder / "in").symlink_to(folder / "notes.md")
    fifos.append(folder / "pipe")
    os.mkfifo(fifos[-1])
    session = session_for(workspace)
    with anyio.fail_after(20):
        loaded = await session.call("skill", {"name": "s"})
        nul = await session.call("skill", {"name": "s", "file": "a\0b"})
        pipe = await session.call("skill", {"name": "s", "file": "pipe"})
        linked = await session.call("skill", {"name": "s", "file": "in"})
    assert loaded.error is None, loaded.text
    assert loaded.output["loaded"]["files"] == ["in", "notes.md"]
    assert nul.error is not None
    assert nul.error.kind is ErrorKind.INVALID_PARAMS, nul.text
    assert pipe.error is not None
    assert pipe.error.kind in (ErrorKind.NOT_FOUND, ErrorKind.INVALID_PARAMS)
    assert linked.error is None, linked.text
    assert linked.output["file"]["content"] == "notes"
