"""Fixtures of the search pack's tests: one workspace tree that exercises every rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FILES: dict[str, str | bytes] = {
    ".gitignore": "*.log\n/build\nsecret/\n!keep.log\ndocs/generated/\n# a comment\n",
    "a.py": "import os\n\ndef needle():\n    return 1\n",
    "a/b.py": "needle = 2\n",
    "README.md": "# Project\n\nFind the Needle here.\nAnd the needle there.\n",
    "app.log": "needle in an ignored log\n",
    "keep.log": "needle in a kept log\n",
    "build/out.py": "needle in build output\n",
    "secret/s.py": "needle secret\n",
    "docs/guide.md": "Guide: no match here\nline two\nneedle at the end",
    "docs/generated/g.md": "needle generated\n",
    ".config/settings.py": "NEEDLE_SETTING = 123\n",
    ".git/config": "needle in git internals\n",
    "src/.gitignore": "/local.py\ntmp/\n/pkg/skip.py\n",
    "src/main.py": (
        "import sys\n"
        "# TODO: remove\n"
        "def main():\n"
        "    x = needle()\n"
        "    y = 100\n"
        "    z = 200\n"
        "    return needle() + x\n"
    ),
    "src/util.py": "def helper():\r\n    return 'needle'\r\n",
    "src/local.py": "needle local\n",
    "src/tmp/x.py": "needle tmp\n",
    "src/secret/t.py": "needle nested secret\n",
    "src/pkg/.gitignore": "!important.log\n",
    "src/pkg/important.log": "needle important\n",
    "src/pkg/skip.py": "needle skipped by an anchored rule one folder up\n",
    "src/pkg/mod.py": "# needleneedle\nvalue = 'Needle'\n",
    "src/pkg/data.bin": b"needle\x00binary\n",
    "src/ünï.py": "needle = 'unicode name'\n",
    "long.txt": "x" * 2000 + " needle " + "y" * 10 + "\n",
}


def build_tree(root: Path) -> None:
    """Write :data:`FILES` under ``root``, plus links that searches must not follow."""
    for rel, content in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", newline="")
    os.symlink(root / "a.py", root / "link.py")
    os.symlink(root / "src", root / "linkdir")
    stamp = 1_700_000_000
    for i, rel in enumerate(sorted(FILES)):
        os.utime(root / rel, (stamp + i, stamp + i), follow_symlinks=False)


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio."""
    return "asyncio"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The workspace tree of :data:`FILES`."""
    root = tmp_path / "ws"
    root.mkdir()
    build_tree(root)
    return root
