"""``toolweave demo``: a scripted agent session through the real packs, in seconds.

A fixed list of model tool calls (no network, no model) runs against a temporary
workspace holding a small project with a bug. Each call, its progress and the text
the model reads are printed, then a summary. Every step states what it must do; the
command exits with 1 when one does not, so CI catches regressions.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import anyio
import typer
from rich.text import Text

from toolweave.cli._common import (
    ExcludeOpt,
    PacksOpt,
    build_toolset,
    guarded,
    load_packs,
    out,
    print_json,
)

if TYPE_CHECKING:
    from toolweave.results import Progress
    from toolweave.runtime._session import Session
    from toolweave.testing import Step, Transcript, Turn

__all__ = ["register", "run_demo"]

_SHOWN_LINES = 12
_WIDTH = 110


def _clip(line: str, width: int = _WIDTH) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _shorten(lines: list[str], keep: int) -> list[str]:
    if len(lines) <= keep:
        return lines
    hidden = len(lines) - keep + 1
    head = keep - 2
    return [*lines[:head], f"… {hidden} more lines", lines[-1]]


def _model_text(text: str) -> list[str]:
    """The model text, shortened; a reminder at its end is always shown."""
    body, mark, reminder = text.rstrip("\n").partition("<system-reminder>")
    lines = _shorten(body.rstrip("\n").splitlines() or ["(empty)"], _SHOWN_LINES)
    if mark:
        lines += _shorten((mark + reminder).splitlines(), 5)
    return [_clip(line) for line in lines]


class _Printer:
    """Prints each call as it happens."""

    def __init__(self) -> None:
        self.number = 0

    def call(self, s: Step) -> None:
        self.number += 1
        args = s.arguments if isinstance(s.arguments, str) else json.dumps(dict(s.arguments))
        out.print(
            Text.assemble(
                (f"{self.number:>3} ", "bold"), (s.name, "bold cyan"), (f"  {s.note}", "dim")
            )
        )
        out.print(Text.assemble(("    → ", "dim"), _clip(args, _WIDTH - 6)))

    def progress(self, s: Step, item: Progress) -> None:
        out.print(Text.assemble(("    ⋯ ", "dim"), (_clip(item.message.rstrip()), "dim")))

    def result(self, turn: Turn) -> None:
        if turn.skipped:
            self.number += 1
            out.print(
                Text.assemble(
                    (f"{self.number:>3} ", "bold"),
                    (turn.step.name, "bold cyan"),
                    (f"  skipped: needs {', '.join(turn.missing)} (not installed)", "yellow"),
                )
            )
            return
        ms = f"{turn.seconds * 1000:.0f} ms"
        error = turn.result.error
        if turn.problem is not None:
            mark = Text.assemble(("    ✗ unexpected: ", "bold red"), turn.problem, f"  {ms}")
        elif error is None:
            mark = Text.assemble(("    ✓ ok", "green"), f"  {ms}")
        else:
            mark = Text.assemble(
                ("    ✓ ", "green"), (error.kind.value, "yellow"), " (as expected)", f"  {ms}"
            )
        out.print(mark)
        for line in _model_text(turn.result.text):
            out.print(Text.assemble(("    │ ", "dim"), line))


def _summary(transcript: Transcript) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(transcript.errors_by_kind.items()))
    text = f"{transcript.calls} calls in {transcript.seconds:.1f} s · errors by kind: {kinds or 'none'}"
    if transcript.skipped:
        names = sorted({n for t in transcript.skipped for n in t.missing})
        text += f" · {len(transcript.skipped)} skipped (not installed: {', '.join(names)})"
    return text


async def run_demo(session: Session, provider: str, quiet: bool) -> Transcript:
    """Play the demo script against ``session``, printing as it goes unless ``quiet``."""
    from toolweave.cli._demo_script import script
    from toolweave.testing import ScriptedModel

    model = ScriptedModel(script(), provider=provider, skip_missing=True)
    if quiet:
        return await model.run(session)
    printer = _Printer()
    return await model.run(
        session, on_call=printer.call, on_progress=printer.progress, on_result=printer.result
    )


def _turn_json(turn: Turn) -> dict[str, object]:
    return {
        "tool": turn.step.name,
        "note": turn.step.note,
        "arguments": turn.step.arguments,
        "skipped": turn.skipped,
        "error": None if turn.result.error is None else turn.result.error.kind.value,
        "expected": None if turn.step.expect is None else str(turn.step.expect),
        "problem": turn.problem,
        "progress": [p.message for p in turn.progress],
        "text": turn.result.text,
        "seconds": round(turn.seconds, 4),
    }


@guarded
def demo(
    provider: Annotated[
        str,
        typer.Option(
            "--provider",
            help="Message format of the scripted model: openai, openai-responses, anthropic or gemini.",
        ),
    ] = "openai",
    packs: PacksOpt = None,
    exclude: ExcludeOpt = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the transcript as JSON.")] = False,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the demo workspace and print where it is.")
    ] = False,
) -> None:
    """Watch a scripted agent fix a bug through the real packs, in seconds, offline.

    A fixed list of model tool calls runs against a temporary project: reading and
    editing files, a streaming command, a background task, todos with a reminder, plan
    mode refusing a write, a skill and a memory (when their packs are installed), and
    typed errors. Exits with 1 when a step does not behave as scripted.

    **Examples**

        toolweave demo
        toolweave demo --provider anthropic --keep
        toolweave demo --json | jq '.summary'
    """
    from toolweave.cli._demo_script import PACKS, WORKSPACE
    from toolweave.formats._calls import provider as find_provider

    find_provider(provider)  # an unknown provider fails before anything runs
    manager = load_packs(packs, exclude)
    toolset = build_toolset(manager, None)
    root = Path(tempfile.mkdtemp(prefix="toolweave-demo-"))
    try:
        for rel, text in WORKSPACE.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        session = toolset.session(workspace=root)
        loaded = [p.name for p in manager.loaded]
        if not json_:
            out.print(
                Text.assemble(
                    ("toolweave demo", "bold"),
                    " · a scripted agent fixes a bug, through the real packs",
                )
            )
            missing = [p for p in PACKS if p not in loaded]
            line = (
                f"packs: {', '.join(loaded) or 'none'} · {len(toolset)} tools · format: {provider}"
            )
            if missing:
                line += f" · not installed: {', '.join(missing)}"
            out.print(Text(line, style="dim"))
            out.print(Text(f"workspace: {root}", style="dim"))
            out.print()

        async def play() -> Transcript:
            async with session:
                return await run_demo(session, provider, json_)

        transcript = anyio.run(play)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    if json_:
        print_json(
            {
                "ok": transcript.ok,
                "summary": _summary(transcript),
                "calls": transcript.calls,
                "errors_by_kind": dict(transcript.errors_by_kind),
                "skipped": [t.step.name for t in transcript.skipped],
                "problems": transcript.problems,
                "seconds": round(transcript.seconds, 3),
                "workspace": str(root) if keep else None,
                "turns": [_turn_json(t) for t in transcript.turns],
            }
        )
    else:
        out.print()
        out.print(Text(_summary(transcript), style="bold"))
        if keep:
            out.print(Text(f"workspace kept at {root}", style="dim"))
        if transcript.ok:
            out.print(Text("ok: every step behaved as scripted", style="green"))
        for problem in transcript.problems:
            out.print(Text(f"problem: {problem}", style="bold red"))
    if not transcript.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""
    app.command("demo")(demo)
