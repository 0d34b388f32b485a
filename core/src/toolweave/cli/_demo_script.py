"""The demo's story: a small project with a bug, and the tool calls an agent makes to fix it.

Every step says what it must do (succeed, or fail with a given error kind, and which
text the model must read), so the demo doubles as an end-to-end check of the
built-in packs: a step that misbehaves makes ``toolweave demo`` exit with 1.

The todo reminder comes with ``todo_write``'s default ``remind_after_calls`` (10): the
tenth call after the list was written (``task_output``) carries it.
"""

from __future__ import annotations

import shlex
import sys
import textwrap

from toolweave.testing import Step, step

__all__ = ["PACKS", "WORKSPACE", "script"]

PACKS = ("fs", "search", "shell", "plan", "memory", "skills")
"""The packs the story uses; steps of missing packs are skipped."""

WORKSPACE = {
    "calc.py": textwrap.dedent(
        '''\
        """A tiny calculator."""


        def add(a: int, b: int) -> int:
            """The sum of a and b."""
            return a - b


        def double(a: int) -> int:
            """Twice a."""
            return add(a, a)
        '''
    ),
    "check.py": textwrap.dedent(
        """\
        import sys
        import time

        from calc import add, double

        failed = 0
        for label, got, want in [("add", add(2, 3), 5), ("double", double(4), 8)]:
            time.sleep(0.15)
            ok = got == want
            failed += not ok
            print(f"checking {label}: {'ok' if ok else f'FAIL (got {got}, want {want})'}", flush=True)
        sys.exit(1 if failed else 0)
        """
    ),
    "server.py": textwrap.dedent(
        """\
        import time

        for tick in range(1, 4):
            print(f"server tick {tick}", flush=True)
            time.sleep(0.1)
        print("server done", flush=True)
        """
    ),
    "README.md": "# calc\n\nRun `python check.py` to check the calculator.\n",
    ".skills/calc-style/SKILL.md": textwrap.dedent(
        """\
        ---
        name: calc-style
        description: House style for the calculator's code. Use before changing calc.py.
        ---

        Keep every function typed and documented; run `python check.py` after a change.
        """
    ),
}
"""The files of the demo workspace."""

_TODOS = ("Find out why the checks fail", "Fix the bug", "Run the checks again")
"""The agent's todo list."""


def _todos(*statuses: str) -> dict[str, object]:
    """``todo_write`` arguments: :data:`_TODOS` with these statuses, in order."""
    return {
        "todos": [
            {"content": content, "status": status}
            for content, status in zip(_TODOS, statuses, strict=True)
        ]
    }


def script() -> list[Step | list[Step]]:
    """The model's tool calls, in order (a list inside is one reply with parallel calls)."""
    python = shlex.quote(sys.executable)
    fix = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    return [
        step(
            "todo_write",
            _todos("in_progress", "pending", "pending"),
            note="plan the work as todos",
        ),
        [
            step("list_dir", {"path": "."}, contains="calc.py", note="look around"),
            step("grep", {"pattern": "def add"}, contains="calc.py", note="find the function"),
        ],
        step("read_file", {"path": "calc.py"}, contains="return a - b", note="read the code"),
        # -B: no bytecode cache. The fix below keeps calc.py's size, and Python reuses a
        # cache written in the same second for a file of the same size.
        step(
            "bash",
            {"command": f"{python} -B check.py", "description": "Run the checks"},
            contains=("checking add: FAIL", "exit code 1"),
            note="a streaming command: the checks fail",
        ),
        step("edit_file", fix, note="fix the bug"),
        step(
            "edit_file",
            fix,
            expect="not_found",
            note="a typed error: the text is no longer there",
        ),
        step(
            "bash",
            {"command": f"{python} -B check.py", "description": "Run the checks again"},
            contains="checking double: ok",
            note="the checks pass now",
        ),
        step(
            "bash",
            {"command": f"{python} server.py", "is_background": True},
            contains="task-1",
            note="start a background task",
        ),
        step(
            "wait_tasks",
            {"task_ids": ["task-1"], "timeout": 10000},
            note="wait for it",
            needs=["bash"],
        ),
        step(
            "task_output",
            {"task_id": "task-1"},
            contains=("server done", "<system-reminder>", "Fix the bug"),
            note="read its output; ten calls after the todos were written, a reminder",
            needs=["bash", "todo_write", "grep"],
        ),
        step(
            "todo_write", _todos("completed", "completed", "in_progress"), note="update the todos"
        ),
        step("enter_plan", {}, note="switch to plan mode"),
        step(
            "write_file",
            {"path": "notes.txt", "content": "draft"},
            expect="permission_denied",
            note="plan mode refuses a write",
            needs=["enter_plan"],
        ),
        step("exit_plan", {"plan": "Keep the fix; add more checks."}, note="leave plan mode"),
        step(
            "skill",
            {"name": "calc-style"},
            contains="run `python check.py` after a change",
            note="load a skill (announced after the first call)",
        ),
        step(
            "memory_save",
            {"content": "calc.add subtracted; check.py catches it.", "tags": ["calc"]},
            note="remember what was learned",
        ),
        step(
            "memory_search",
            {"query": "what does check.py catch"},
            contains="**catches**",
            note="find it again, ranked and highlighted",
            needs=["memory_save"],
        ),
        step(
            "read_file",
            {"path": "../outside.txt"},
            expect="permission_denied",
            note="paths stay inside the workspace",
        ),
        step("deploy", {"target": "prod"}, expect="not_found", note="an unknown tool"),
        step(
            "read_file",
            {"path": "calc.py", "limit": "ten"},
            expect="invalid_params",
            note="bad arguments are explained",
        ),
    ]
