"""Unit tests of ``grep``: both engines, .gitignore rules, modes, limits, confinement."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from toolweave import ErrorKind, PackManager, Session
from toolweave_search import find_ripgrep, pack

pytestmark = pytest.mark.anyio

needs_rg = pytest.mark.skipif(
    find_ripgrep() is None,
    reason="ripgrep is not installed (pip install 'toolweave-search[rg]')",
)

ENGINES = [
    pytest.param("python", id="python"),
    pytest.param("ripgrep", id="ripgrep", marks=needs_rg),
]

EVERY_NEEDLE = [
    "README.md",
    "a/b.py",
    "a.py",
    "docs/guide.md",
    "keep.log",
    "long.txt",
    "src/main.py",
    "src/pkg/important.log",
    "src/pkg/mod.py",
    "src/util.py",
    "src/ünï.py",
]
"""Files holding ``needle`` that a search of the whole tree visits, in result order."""


def session_for(root: Path, engine: str, **params: Any) -> Session:
    """A session with ``grep`` and ``glob`` on ``engine``."""
    packs = PackManager(strict=True)
    packs.add("search", pack)
    config = {
        "tools": [
            {"id": "grep", "params": {"engine": engine, **params}},
            {"id": "glob", "params": {"engine": engine}},
        ]
    }
    return packs.builder().build(config).session(workspace=root, debug=True)


async def grep(
    root: Path, engine: str, args: dict[str, Any], _engine: str | None = None, **params: Any
) -> dict[str, Any]:
    """Run one grep call that must succeed on the engine expected (default: ``engine``)."""
    result = await session_for(root, engine, **params).call("grep", args)
    assert result.error is None, result.text
    assert isinstance(result.output, dict)
    assert result.output["engine"] == (_engine or engine)
    return result.output


@pytest.mark.parametrize("engine", ENGINES)
async def test_files_with_matches_respects_gitignore(tree: Path, engine: str) -> None:
    """Ignored files and folders, nested rules, re-included files, binary files, links
    and .git are all handled; hidden files are searched; results are in path order."""
    out = await grep(tree, engine, {"pattern": "needle"})
    assert out["results"] == EVERY_NEEDLE
    assert out["files"] == EVERY_NEEDLE
    assert out["truncated"] is False


@pytest.mark.parametrize("engine", ENGINES)
async def test_content_mode_with_context(tree: Path, engine: str) -> None:
    """Content lines are path:line:text, context lines path-line-text, groups split by --."""
    out = await grep(
        tree,
        engine,
        {"pattern": "needle", "path": "src/main.py", "output_mode": "content", "context": 1},
    )
    assert out["results"] == [
        "src/main.py-3-def main():",
        "src/main.py:4:    x = needle()",
        "src/main.py-5-    y = 100",
        "src/main.py-6-    z = 200",
        "src/main.py:7:    return needle() + x",
    ]
    apart = await grep(
        tree,
        engine,
        {"pattern": "needle", "path": "src/main.py", "output_mode": "content", "before_context": 1},
    )
    assert apart["results"] == [
        "src/main.py-3-def main():",
        "src/main.py:4:    x = needle()",
        "--",
        "src/main.py-6-    z = 200",
        "src/main.py:7:    return needle() + x",
    ]


@pytest.mark.parametrize("engine", ENGINES)
async def test_count_mode_and_case(tree: Path, engine: str) -> None:
    """Counts are matching lines per file; case-insensitive search finds more."""
    out = await grep(tree, engine, {"pattern": "needle", "path": "src", "output_mode": "count"})
    assert out["results"] == [
        "src/main.py:2",
        "src/pkg/important.log:1",
        "src/pkg/mod.py:1",
        "src/util.py:1",
        "src/ünï.py:1",
    ]
    loud = await grep(
        tree,
        engine,
        {"pattern": "needle", "path": "src/pkg", "case_insensitive": True, "output_mode": "count"},
    )
    assert loud["results"] == ["src/pkg/important.log:1", "src/pkg/mod.py:2"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_explicit_paths_are_searched_even_when_ignored(tree: Path, engine: str) -> None:
    """A folder or file named explicitly is searched although .gitignore lists it."""
    folder = await grep(tree, engine, {"pattern": "needle", "path": "build"})
    assert folder["results"] == ["build/out.py"]
    file = await grep(tree, engine, {"pattern": "needle", "path": "src/local.py"})
    assert file["results"] == ["src/local.py"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_rules_of_parent_folders_apply_to_a_subfolder(tree: Path, engine: str) -> None:
    """Searching src/pkg still applies the root's and src's .gitignore, not only its own."""
    out = await grep(tree, engine, {"pattern": "needle", "path": "src/pkg", "glob": "*.{log,py}"})
    assert out["results"] == ["src/pkg/important.log", "src/pkg/mod.py"]
    src = await grep(tree, engine, {"pattern": "needle", "path": "src", "glob": "**/*.log"})
    assert src["results"] == ["src/pkg/important.log"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_glob_filters_never_bring_back_ignored_files(tree: Path, engine: str) -> None:
    """A glob narrows the search; an ignored file matching it stays out."""
    out = await grep(tree, engine, {"pattern": "needle", "glob": "*.log"})
    assert out["results"] == ["keep.log", "src/pkg/important.log"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_head_limit_and_truncation_note(tree: Path, engine: str) -> None:
    """``head_limit`` caps the entries and the model is told more exist."""
    session = session_for(tree, engine)
    result = await session.call("grep", {"pattern": "needle", "head_limit": 2})
    assert result.output["results"] == EVERY_NEEDLE[:2]
    assert result.output["truncated"] is True
    assert "More results exist" in result.text


@pytest.mark.parametrize("engine", ENGINES)
async def test_long_lines_are_clipped(tree: Path, engine: str) -> None:
    """A 2000-character line is cut to the configured width with a note."""
    out = await grep(
        tree,
        engine,
        {"pattern": "needle", "path": "long.txt", "output_mode": "content"},
        max_line_chars=50,
    )
    [line] = out["results"]
    assert line.startswith("long.txt:1:" + "x" * 50)
    assert line.endswith(f"... [{2000 + 8 + 10 - 50} more characters]")


@pytest.mark.parametrize("engine", ENGINES)
async def test_invalid_regex_is_invalid_params(tree: Path, engine: str) -> None:
    """An unbalanced parenthesis is reported as invalid_params by both engines."""
    result = await session_for(tree, engine).call("grep", {"pattern": "needle("})
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert "regular expression" in result.text


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"pattern": "\x00"}, "pattern"),
        ({"pattern": "needle\x00"}, "pattern"),
        ({"pattern": "needle", "glob": "*.py\x00"}, "glob"),
    ],
)
async def test_a_nul_in_the_pattern_or_glob_is_invalid_params(
    tree: Path, engine: str, args: dict[str, Any], field: str
) -> None:
    """A NUL (which ripgrep's command line cannot carry) is invalid_params naming its
    parameter, on both engines alike."""
    result = await session_for(tree, engine).call("grep", args)
    assert result.error is not None
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert result.text.startswith(f"`{field}` contains a NUL character"), result.text


MALFORMED_GLOBS = [
    "[",
    "*.[py",
    "src/[a/*.py",
    "[z-a]*",
    "*.{ts,tsx",
    "*.py\\",
    "[\\]]*",
    "{[,],x}",
]
"""Globs ripgrep refuses (or would read differently from the Python engine)."""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("bad", MALFORMED_GLOBS)
async def test_a_malformed_glob_is_invalid_params(tree: Path, engine: str, bad: str) -> None:
    """A malformed glob is invalid_params naming the parameter and what is wrong, on
    both engines alike (ripgrep failed with execution_error, the Python engine read it
    as literal text and found nothing)."""
    result = await session_for(tree, engine).call("grep", {"pattern": "needle", "glob": bad})
    assert result.error is not None, result.text
    assert result.error.kind is ErrorKind.INVALID_PARAMS
    assert result.text.startswith("`glob` is not a valid glob"), result.text


def test_ripgrep_glob_errors_are_invalid_params() -> None:
    """Should ripgrep still refuse a glob, that is invalid_params too, also when the
    glob quotes the word "regex"; other failures stay execution_error."""
    from toolweave import ToolError
    from toolweave_search._rgengine import _raise_for

    for errors, kind, start in [
        ("rg: error parsing glob 'regex[': unclosed class", ErrorKind.INVALID_PARAMS, "The glob"),
        ("rg: regex parse error: (", ErrorKind.INVALID_PARAMS, "The pattern"),
        ("rg: something else", ErrorKind.EXECUTION_ERROR, "ripgrep failed"),
    ]:
        with pytest.raises(ToolError) as raised:
            _raise_for(2, errors)
        assert raised.value.kind is kind
        assert str(raised.value.message).startswith(start)


@pytest.mark.parametrize("engine", ENGINES)
async def test_names_with_a_newline_are_searched(tmp_path: Path, engine: str) -> None:
    """A file whose name holds a newline is found in every mode, on both engines."""
    (tmp_path / "a\nb.txt").write_text("needle\n")
    (tmp_path / "plain.txt").write_text("needle\n")
    found = await grep(tmp_path, engine, {"pattern": "needle"})
    assert found["files"] == ["a\nb.txt", "plain.txt"]
    counted = await grep(tmp_path, engine, {"pattern": "needle", "output_mode": "count"})
    assert counted["files"] == ["a\nb.txt", "plain.txt"]
    lines = await grep(tmp_path, engine, {"pattern": "needle", "output_mode": "content"})
    assert lines["files"] == ["a\nb.txt", "plain.txt"]
    assert lines["results"] == ["a\nb.txt:1:needle", "plain.txt:1:needle"]


HUGE_LINE = 50_000_000
"""Characters of a one-line file full of matches: ``rg --json`` wrote about 2.7 GB
for it (a match event lists every match), past any deadline."""


@pytest.mark.parametrize("engine", ENGINES)
async def test_one_huge_line_full_of_matches_is_answered_quickly(
    tmp_path: Path, engine: str
) -> None:
    """Every mode answers a 50 MB line of matches well within the call's timeout; the
    content shows the line's start and says the rest was left out, on both engines."""
    (tmp_path / "huge.txt").write_text("ab" * (HUGE_LINE // 2) + "\n")
    (tmp_path / "small.txt").write_text("x\nab\n")
    packs = PackManager(strict=True)
    packs.add("search", pack)
    config = {"tools": [{"id": "grep", "timeout": 60, "params": {"engine": engine}}]}
    session = packs.builder().build(config).session(workspace=tmp_path)
    expected = {
        "files_with_matches": ["huge.txt", "small.txt"],
        "count": ["huge.txt:1", "small.txt:1"],
        "content": [
            "huge.txt:1:" + "ab" * 200 + "... [the rest of a very long line left out]",
            "small.txt:2:ab",
        ],
    }
    for mode, results in expected.items():
        result = await session.call("grep", {"pattern": "b", "output_mode": mode})
        assert result.error is None, result.text
        assert isinstance(result.output, dict)
        assert result.output["results"] == results


PARITY_CASES: list[dict[str, Any]] = [
    {"pattern": "needle"},
    {"pattern": "needle", "case_insensitive": True},
    {"pattern": "needle", "output_mode": "content"},
    {"pattern": "needle", "output_mode": "content", "line_numbers": False},
    {"pattern": "needle", "output_mode": "content", "context": 2},
    {"pattern": "needle", "output_mode": "content", "before_context": 1, "after_context": 0},
    {"pattern": "needle", "output_mode": "count", "case_insensitive": True},
    {"pattern": r"ne+dle\b", "output_mode": "content"},
    {"pattern": r"^def ", "output_mode": "content"},
    {"pattern": r"\d{3}", "output_mode": "content"},
    {"pattern": "TODO|needle", "glob": "*.py"},
    {"pattern": "needle", "glob": "src/**/*.py"},
    {"pattern": "needle", "glob": "*.{md,log}"},
    {"pattern": "needle", "glob": "*.{py,{md,log}}"},  # nested: ripgrep's own do not nest
    {"pattern": "needle", "glob": "{a}.py"},  # a group of one is literal text
    {"pattern": "needle", "glob": "*.py:*"},  # a ":" cannot go into --type-add
    {"pattern": "needle", "path": "src"},
    {"pattern": "needle", "path": "src/pkg", "output_mode": "content"},
    {"pattern": "needle", "path": "docs"},
    {"pattern": "needle", "path": "build"},
    {"pattern": "needle", "output_mode": "content", "head_limit": 3},
    {"pattern": "needle", "output_mode": "content", "context": 3, "head_limit": 4},
    {"pattern": "needle", "head_limit": 5},
    {"pattern": "nothing-matches-this"},
    {"pattern": "e", "output_mode": "count"},
]


@needs_rg
@pytest.mark.parametrize(
    "args", PARITY_CASES, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items())
)
async def test_ripgrep_and_python_agree(tree: Path, args: dict[str, Any]) -> None:
    """The pure-Python engine returns exactly what ripgrep returns on the same tree."""
    fast = await grep(tree, "ripgrep", args)
    slow = await grep(tree, "python", args)
    fast.pop("engine")
    slow.pop("engine")
    assert slow == fast


async def test_paths_outside_the_workspace_are_refused(tree: Path, tmp_path: Path) -> None:
    """``..``, absolute paths elsewhere and links leading out are permission_denied;
    a missing path is not_found."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("needle\n")
    os.symlink(outside, tree / "escape")
    session = session_for(tree, "python")
    for path in ("..", str(outside), "escape", "escape/x.txt"):
        result = await session.call("grep", {"pattern": "needle", "path": path})
        assert result.error is not None, path
        assert result.error.kind is ErrorKind.PERMISSION_DENIED, path
    missing = await session.call("grep", {"pattern": "needle", "path": "nope"})
    assert missing.error is not None
    assert missing.error.kind is ErrorKind.NOT_FOUND


async def test_forced_ripgrep_that_is_missing_is_unavailable(tree: Path) -> None:
    """A configured ripgrep program that does not exist fails as ``unavailable``."""
    session = session_for(tree, "ripgrep", ripgrep_path=str(tree / "no-rg"))
    result = await session.call("grep", {"pattern": "needle"})
    assert result.error is not None
    assert result.error.kind is ErrorKind.UNAVAILABLE


async def test_no_matches_says_so(tree: Path) -> None:
    """An empty result is a clear sentence, not an empty string."""
    result = await session_for(tree, "python").call("grep", {"pattern": "zzz-absent"})
    assert result.text == "No matches found."


async def test_auto_engine_falls_back_to_python(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``auto`` uses ripgrep when it is found and the Python engine when it is not."""
    import toolweave_search._engine as engine_module

    if find_ripgrep() is not None:
        assert (await grep(tree, "auto", {"pattern": "needle"}, _engine="ripgrep"))["results"]
    monkeypatch.setattr(engine_module, "find_ripgrep", lambda: None)
    out = await grep(tree, "auto", {"pattern": "needle"}, _engine="python")
    assert out["results"] == EVERY_NEEDLE


@needs_rg
async def test_stopping_ripgrep_early_leaves_reaping_to_the_event_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Searches cut short by ``head_limit`` stop ripgrep without reaping it behind the
    event loop's back: no "Unknown child process" warning in 200 quick searches."""
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("needle\n" * 3)
    session = session_for(tmp_path, "ripgrep")
    args = {"pattern": "needle", "output_mode": "content", "head_limit": 1}
    with caplog.at_level("WARNING"):
        for _ in range(200):
            result = await session.call("grep", args)
            assert result.error is None, result.text
            assert result.output is not None
            assert result.output["engine"] == "ripgrep"
    assert not [r for r in caplog.records if "Unknown child process" in r.getMessage()]
