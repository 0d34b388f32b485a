"""Path patterns of file tools are matched after the path is resolved against the
workspace (``..`` and links followed), never by string prefix."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from toolweave import ToolSetBuilder, tool
from toolweave.policy import Effect, Policy
from toolweave.runtime import Session


@pytest.fixture
def effect(make_session: Callable[..., Session]) -> Callable[..., Effect]:
    session = make_session()
    root = str(session.workspace)

    def run(config: object, tool: str, **args: object) -> Effect:
        entry = session.resolve(tool)
        assert entry is not None
        return Policy(config).decide(entry, entry.parse(args), root).effect  # type: ignore[arg-type]

    return run


ALLOW_SRC = {"allow": ["write_file(src/**)"]}


def test_a_pattern_with_a_slash_is_anchored_at_the_workspace(effect: Callable[..., Effect]) -> None:
    """``src/**`` covers files under src at any depth, not ``other/src/x`` nor
    ``srcfoo``; the path may be absolute if it resolves inside."""
    assert effect(ALLOW_SRC, "write_file", path="src/a.py", content="") is Effect.ALLOW
    assert effect(ALLOW_SRC, "write_file", path="src/deep/er/a.py", content="") is Effect.ALLOW
    assert effect(ALLOW_SRC, "write_file", path="./src/a.py", content="") is Effect.ALLOW
    assert effect(ALLOW_SRC, "write_file", path="docs/src/a.py", content="") is Effect.ASK
    assert effect(ALLOW_SRC, "write_file", path="srcfoo/a.py", content="") is Effect.ASK


def test_dot_dot_is_resolved_before_matching(
    effect: Callable[..., Effect], workspace: Path
) -> None:
    """``src/../secret/k`` is in secret, and ``src/../../outside`` is outside: neither is
    allowed by ``src/**``; an absolute path into src is."""
    assert effect(ALLOW_SRC, "write_file", path="src/../secret/k", content="") is Effect.ASK
    assert effect(ALLOW_SRC, "write_file", path="src/../../outside/passwd", content="") is (
        Effect.ASK
    )
    inside = str(workspace / "src" / "new.py")
    assert effect(ALLOW_SRC, "write_file", path=inside, content="") is Effect.ALLOW


def test_links_are_followed_before_matching(effect: Callable[..., Effect], workspace: Path) -> None:
    """A link inside src that leads out is not allowed by ``src/**`` (nor a file
    through a linked directory); a link elsewhere that leads into src is."""
    os.symlink(workspace.parent / "outside", workspace / "src" / "out")
    os.symlink(workspace.parent / "outside" / "passwd", workspace / "src" / "pw")
    os.symlink(workspace / "src" / "app.py", workspace / "docs" / "app-link.py")
    assert effect(ALLOW_SRC, "write_file", path="src/out/passwd", content="") is Effect.ASK
    assert effect(ALLOW_SRC, "write_file", path="src/pw", content="") is Effect.ASK
    assert effect(ALLOW_SRC, "write_file", path="docs/app-link.py", content="") is Effect.ALLOW


def test_deny_matches_where_a_path_leads_and_how_it_is_spelled(
    effect: Callable[..., Effect], workspace: Path
) -> None:
    """``*.env`` denies an .env at any depth, a link to one under another name, a link
    named like one, and a path outside; the rest stays allowed."""
    (workspace / "config").mkdir()
    (workspace / "config" / ".env").write_text("KEY=1\n")
    os.symlink(workspace / "config" / ".env", workspace / "settings.txt")
    os.symlink(workspace / "src" / "app.py", workspace / "decoy.env")
    deny = {"deny": ["read_file(*.env)", "read_file(/etc/**)"]}
    assert effect(deny, "read_file", path="config/.env") is Effect.DENY  # as in .gitignore
    assert effect(deny, "read_file", path="settings.txt") is Effect.DENY
    assert effect(deny, "read_file", path="decoy.env") is Effect.DENY
    assert effect(deny, "read_file", path="/etc/hostname") is Effect.DENY
    assert effect(deny, "read_file", path="src/app.py") is Effect.ALLOW


def test_a_tool_with_two_paths_needs_both_allowed(effect: Callable[..., Effect]) -> None:
    """``move`` from src into docs needs both covered; one deny of either refuses."""
    config = {"allow": ["move(src/**)", "move(docs/**)"], "deny": ["move(secret/**)"]}
    assert effect(config, "move", source="src/a", destination="docs/a") is Effect.ALLOW
    assert effect(config, "move", source="src/a", destination="other/a") is Effect.ASK
    assert effect(config, "move", source="secret/a", destination="src/a") is Effect.DENY


def test_a_working_directory_argument_outside_stops_path_rules(
    effect: Callable[..., Effect],
) -> None:
    """A ``cwd`` argument inside the workspace moves where paths resolve from; one
    outside makes allow patterns miss and deny patterns ask."""
    config = {"allow": ["look(src/**)"], "deny": ["look(secret/**)"], "read_only": "ask"}
    assert effect(config, "look", path="app.py", cwd="src") is Effect.ALLOW
    assert effect(config, "look", path="ws/src/app.py", cwd="..") is Effect.ASK
    assert effect(config, "look", path="app.py", cwd="/") is Effect.ASK
    assert effect(config, "look", path="key", cwd="secret") is Effect.DENY
    assert effect(config, "look", path="key", cwd="/tmp") is Effect.ASK  # might be denied


@tool(blocking=False, read_only=True)
def read_path(path: Path) -> str:
    """Read a file named by a path object (a stand-in). Not for writing.

    Args:
        path: The file.
    """
    return f"read {path}"


@tool(blocking=False)
def copy_paths(source: list[Path], target: Path, cwd: Path | None = None) -> str:
    """Copy files named by path objects (a stand-in). Not for moving.

    Args:
        source: The files.
        target: Where to.
        cwd: Where the paths are relative to.
    """
    return f"copied {source} to {target}"


@pytest.mark.parametrize(
    ("config", "args", "expected"),
    [
        ({"deny": ["read_path(*.env)"]}, {"path": ".env"}, Effect.DENY),
        ({"deny": ["*(*.env)"]}, {"path": ".env"}, Effect.DENY),
        ({"deny": ["*(*.env)"], "read_only": "allow"}, {"path": "src/.env"}, Effect.DENY),
        ({"allow": ["read_path(src/**)"], "read_only": "ask"}, {"path": "src/app.py"}, Effect.ALLOW),
        ({"allow": ["read_path(src/**)"], "read_only": "ask"}, {"path": "src/../x"}, Effect.ASK),
        ({"deny": ["*(secret/**)"]}, {"source": ["src/a", "secret/k"], "target": "src/b"}, Effect.DENY),
        ({"allow": ["copy_paths(src/**)"]}, {"source": ["src/a"], "target": "src/b"}, Effect.ALLOW),
        ({"allow": ["copy_paths(src/**)"]}, {"source": ["src/a"], "target": "docs/b"}, Effect.ASK),
        ({"allow": ["copy_paths(src/**)"]}, {"source": ["a"], "target": "b", "cwd": "src"}, Effect.ALLOW),
        ({"allow": ["copy_paths(src/**)"]}, {"source": ["a"], "target": "b", "cwd": "/"}, Effect.ASK),
    ],
)  # fmt: skip
def test_path_arguments_typed_as_path_objects_meet_the_rules(
    workspace: Path, config: dict[str, object], args: dict[str, object], expected: Effect
) -> None:
    """A parameter typed ``pathlib.Path`` (alone, in a list, or the working directory)
    validates to a path object, not a string: the rules read it like its text."""
    builder = ToolSetBuilder()
    builder.add(read_path)
    builder.add(copy_paths)
    session = builder.build().session(workspace=workspace)
    tool_name = "read_path" if "path" in args else "copy_paths"
    entry = session.resolve(tool_name)
    assert entry is not None
    root = str(session.workspace)
    assert Policy(config).decide(entry, entry.parse(args), root).effect is expected  # type: ignore[arg-type]
