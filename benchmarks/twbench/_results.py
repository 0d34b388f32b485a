"""What a workload produces: tables of rows (median, range, ratio to toolweave) and targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeVar

from twbench._timing import Series

__all__ = ["Config", "Outcome", "Row", "Status", "Table", "Target", "fmt"]

T = TypeVar("T")

Status = Literal["ok", "pending", "error", "skipped"]


@dataclass
class Config:
    """Settings of one run (``--quick`` shrinks every workload).

    Attributes:
        quick: A smoke run: tiny sizes, one or two rounds.
        check: Fail the run on any crash or wrong answer.
        rounds: Overrides every workload's number of rounds when set.
        profile: Workloads whose toolweave rows are also profiled with pyinstrument.
    """

    quick: bool = False
    check: bool = False
    rounds: int | None = None
    profile: set[str] = field(default_factory=set)

    def pick(self, full: T, quick: T) -> T:
        """``quick`` in a smoke run, else ``full``."""
        return quick if self.quick else full

    def rounds_for(self, full: int, quick: int) -> int:
        """Rounds of a workload (``--rounds`` wins)."""
        if self.rounds is not None:
            return self.rounds
        return self.pick(full, quick)


def fmt(value: float) -> str:
    """A number with about three significant digits."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    if magnitude >= 0.01:
        return f"{value:.3f}"
    return f"{value:.2g}"


@dataclass
class Row:
    """One framework's result in a table.

    Attributes:
        key: Unique within the table (framework key, plus variant when needed).
        framework: The framework's display name.
        variant: What was called (``async tool``, ``sync tool (worker thread)``).
        path: Exactly which public path was timed.
        series: The samples, one per round (``None`` unless ``status`` is ``ok``).
        status: ``ok``, ``pending`` (the code to measure has not landed), ``error``,
            or ``skipped`` (not installed, not applicable).
        note: Why a row is pending, skipped or failed; or a remark.
        ref: Key of the row this row's ratio is taken against (default: the table's
            ``ref``), for tables whose rows measure different things (W9's p50 and p99).
    """

    key: str
    framework: str
    variant: str
    path: str
    series: Series | None = None
    status: Status = "ok"
    note: str = ""
    ref: str | None = None


@dataclass
class Table:
    """Rows measured in one unit, with ratios to one reference row (toolweave's).

    Attributes:
        id: ``W1-async`` and so on.
        title: Heading.
        unit: ``µs/call``, ``ms``, ``bytes/tool``.
        rows: The rows, in display order.
        ref: Key of the row ratios are taken against.
        rounds: How many rounds each median is of.
        notes: Lines printed under the table.
    """

    id: str
    title: str
    unit: str
    rows: list[Row] = field(default_factory=list)
    ref: str | None = "toolweave"
    rounds: int = 0
    notes: list[str] = field(default_factory=list)

    def row(self, key: str) -> Row | None:
        """The row with ``key``, if measured."""
        for row in self.rows:
            if row.key == key:
                return row
        return None

    def median(self, key: str) -> float | None:
        """The median of row ``key`` when it was measured."""
        row = self.row(key)
        if row is None or row.status != "ok" or row.series is None:
            return None
        return row.series.median

    def ratio(self, row: Row) -> str:
        """The row's median over the reference row's (its own ``ref``, else the
        table's), as text."""
        if self.ref is None or row.status != "ok" or row.series is None:
            return ""
        ref = self.median(row.ref or self.ref)
        if ref is None or ref == 0:
            return ""
        return f"{row.series.median / ref:.2f}×"

    def markdown(self) -> list[str]:
        """The table as Markdown lines."""
        ratio_head = f" × {self.ref} |" if self.ref else ""
        lines = [
            f"#### {self.id}: {self.title}",
            "",
            f"| framework | what | {self.unit} (median) | range (min–max) |{ratio_head} path timed |",
            "|---|---|---:|---:|" + ("---:|" if self.ref else "") + "---|",
        ]
        for row in self.rows:
            if row.status == "ok" and row.series is not None:
                s = row.series
                med, rng = f"**{fmt(s.median)}**", f"{fmt(s.lo)}–{fmt(s.hi)}"
            else:
                med, rng = row.status.upper(), ""
            path = row.path + (f" — {row.note}" if row.note else "")
            ratio = f" {self.ratio(row)} |" if self.ref else ""
            lines.append(f"| {row.framework} | {row.variant} | {med} | {rng} |{ratio} {path} |")
        if self.rounds:
            lines.append("")
            lines.append(f"Medians of {self.rounds} interleaved round(s).")
        for note in self.notes:
            lines.append("")
            lines.append(note)
        lines.append("")
        return lines

    def plain(self) -> list[str]:
        """The table as aligned text for the terminal (no path column)."""
        head = ["framework", "what", f"{self.unit}", "range", f"× {self.ref}" if self.ref else ""]
        body: list[list[str]] = []
        for row in self.rows:
            if row.status == "ok" and row.series is not None:
                s = row.series
                body.append(
                    [
                        row.framework,
                        row.variant,
                        fmt(s.median),
                        f"{fmt(s.lo)}–{fmt(s.hi)}",
                        self.ratio(row),
                    ]
                )
            else:
                body.append([row.framework, row.variant, row.status.upper(), "", row.note[:60]])
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        out = [f"{self.id}: {self.title}"]
        for r in [head, *body]:
            out.append(
                "  "
                + "  ".join(
                    cell.rjust(widths[i]) if i in (2, 3, 4) else cell.ljust(widths[i])
                    for i, cell in enumerate(r)
                )
            )
        return out


@dataclass
class Target:
    """One target of the issue, judged on ratios of the same run.

    Attributes:
        id: ``W1-async-floor`` and so on.
        text: The target in words.
        measured: What was measured, in words.
        ok: ``True`` (PASS), ``False`` (MISS) or ``None`` (PENDING: nothing to judge yet).
    """

    id: str
    text: str
    measured: str
    ok: bool | None

    @property
    def verdict(self) -> str:
        """PASS, MISS or PENDING."""
        return "PENDING" if self.ok is None else ("PASS" if self.ok else "MISS")


@dataclass
class Outcome:
    """Everything one workload produced.

    Attributes:
        workload: ``W1`` … ``W7``.
        title: What the workload measures.
        tables: Its tables.
        targets: Its targets, judged.
        notes: Lines for the report (paths, methods).
        errors: Crashes and wrong answers (each fails ``--check``).
    """

    workload: str
    title: str
    tables: list[Table] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
