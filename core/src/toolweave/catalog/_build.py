"""The build step: a configuration checked against the registry, then frozen.

Order of work (every problem is collected; nothing stops at the first):

1. resolve each configured id (baseline entries, then the remote list) and name it;
2. merge the layers: baseline > external snapshots > remote list (skips reported);
3. per entry: resolve the behaviour version, merge and validate params, check renames;
4. across entries: unique client names, mutual exclusions, dependency expressions;
5. build the template renderer (kind / id → client name) and render every description;
6. apply the mode (``read_only``), dropping tools whose dependencies no longer hold;
7. create the entries, filter reminders by their expressions, return the plan.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from toolweave.authoring._tool import Kind
from toolweave.catalog._config import (
    ToolConfig,
    ToolSetConfig,
    _config_issues,
    _parse_config,
    did_you_mean,
    unreadable_issue,
)
from toolweave.catalog._erasure import read_only_as
from toolweave.catalog._expr import (
    ExpressionError,
    SetView,
    ToolFacts,
    arg_fields,
    compile_expression,
)
from toolweave.catalog._merge import BuildReport, Candidate, SkippedEntry, merge_layers
from toolweave.catalog._templates import (
    Parameters,
    TemplateProblem,
    TemplateRenderer,
    problem_issue,
)
from toolweave.catalog._toolset import ToolEntry
from toolweave.catalog._versions import DeprecatedVersionWarning, choose_version
from toolweave.errors import ConfigError, ConfigIssue

if TYPE_CHECKING:
    from toolweave.catalog._catalog import Catalog
    from toolweave.catalog._erasure import ErasedTool

__all__ = ["BuildPlan", "ExternalTools", "RemoteEntries", "plan_build"]

ExternalTools = Mapping[str, "ErasedTool"] | Iterable["ErasedTool"]
"""External tools offered at build time: handles (named by id) or name → handle."""

RemoteEntries = Iterable[ToolConfig | Mapping[str, Any] | str]
"""A remote list of configuration entries (lowest priority)."""


@dataclass(slots=True)
class _Planned:
    """One built-in entry on its way to becoming a ToolEntry."""

    source: str
    path: str
    config: ToolConfig
    fqid: str | None
    name: str
    tool: ErasedTool | None = None
    kind: Kind = Kind.OTHER
    read_only: bool = False
    params: BaseModel | None = None
    to_client: dict[str, str] | None = None
    description: str = ""
    timeout: float | None = None
    known: ToolFacts | None = None
    stand_in: BaseModel | None = None
    """For an entry whose params are invalid: its valid params over the defaults, so
    that problems they cause elsewhere are not reported (see :meth:`_Planner.guesses`)."""
    unknown: frozenset[str] = frozenset()
    """The params whose configured value is invalid."""

    @property
    def label(self) -> str:
        return self.fqid or self.config.id

    def facts(self) -> ToolFacts:
        """What expressions see of this entry (made once; its params and argument names
        are read only if an expression asks)."""
        if self.known is None:
            assert self.tool is not None
            self.known = ToolFacts.of(self.tool, kind=self.kind, params=self.params, name=self.name)
        return self.known


@dataclass(slots=True)
class BuildPlan:
    """The outcome of planning a build.

    Attributes:
        config: The configuration used.
        issues: Every problem found; the build fails when there is any.
        deprecated: Deprecated versions chosen (warnings, not problems).
        entries: The entries of the set, in listing order (empty when there are issues).
        reminders: The reminders whose expressions hold.
        report: What was left out and why.
    """

    config: ToolSetConfig
    issues: list[ConfigIssue] = field(default_factory=list)
    deprecated: list[DeprecatedVersionWarning] = field(default_factory=list)
    entries: list[ToolEntry] = field(default_factory=list)
    reminders: list[Any] = field(default_factory=list)
    report: BuildReport = field(default_factory=BuildReport)
    versions: dict[str, dict[str, ErasedTool]] = field(default_factory=dict)
    """For each chosen tool with more than one usable version: every usable version
    (what a registry center may pin or roll out at dispatch)."""


_ENTRY_PATH = re.compile(r"(tools|remote)\[(\d+)\]")


def _position(issue: ConfigIssue) -> tuple[int, int]:
    """Sort key putting issues in configuration order (baseline, remote, the rest)."""
    m = _ENTRY_PATH.match(issue.path)
    if m is None:
        return (2, 0)
    return (0 if m.group(1) == "tools" else 1, int(m.group(2)))


_TARGET = re.compile(r"\{(tool|name):([^{}\s]+)\}")
_KIND_VALUES = frozenset(k.value for k in Kind)
_ALL = frozenset({"*"})
"""Every param unknown (see :attr:`ToolFacts.unknown`)."""


def _default_params(tool: ErasedTool) -> BaseModel | None:
    """The tool's params with every default, or ``None`` (no params model, or one with
    required fields)."""
    model = tool.params_type
    if model is None:
        return None
    try:
        return model()
    except ValidationError:
        return None


_KIND_NEED = re.compile(r"\s*kind:(\w+)\s*")
_NAMESPACE_NEED = re.compile(r"\s*(?:namespace|ns):([\w-]+)\s*")
_TOOL_NEED = re.compile(r"\s*(?:tool:)?((?!param:|schema:)[A-Za-z_][\w-]*(?::[A-Za-z_][\w-]*)?)\s*")


def _in_words(requirement: str) -> str:
    """What a requirement of one predicate asks for, in words (`` (a tool of kind
    'read')``); ``""`` for other requirements, which say it best themselves."""
    if m := _KIND_NEED.fullmatch(requirement):
        return f" (a tool of kind {m.group(1)!r})"
    if m := _NAMESPACE_NEED.fullmatch(requirement):
        return f" (a tool from namespace {m.group(1)!r})"
    if m := _TOOL_NEED.fullmatch(requirement):
        return f" (the tool {m.group(1)!r})"
    return ""


def _origin(p: _Planned) -> str:
    """Where the tool of an entry was registered from (``host``, ``pack fs (...)``)."""
    return p.tool.origin if p.tool is not None else "an unresolved entry"


def _refers_to(ref: str, fqid: str) -> bool:
    return ref == fqid if ":" in ref else ref == fqid.split(":", 1)[1]


class _Planner:
    def __init__(
        self,
        registry: Catalog,
        config: ToolSetConfig,
        reminders: Iterable[Any],
    ) -> None:
        self.registry = registry
        self.config = config
        self.implicit = config.tools is None
        self.reminders = list(reminders)
        self.plan = BuildPlan(config)
        self.skipped: list[SkippedEntry] = []
        self.positions: tuple[int, ...] | None = None
        """Index in the data of each configured entry (when invalid ones were left out)."""
        self.unresolved: list[str] = []
        """Ids of configured entries that name no usable tool (unknown, ambiguous, with
        an unknown version, or invalid): what they stand for is guessed (see
        :meth:`guesses`), so that problems they cause elsewhere are not reported twice."""
        self.unmet: dict[int, Any] = {}
        """id() of each entry whose requirement fails → its compiled expression."""
        self.view = SetView()
        """The configured set as the requirements were last checked against."""
        self.guessed: tuple[ToolFacts, ...] = ()
        """Facts about the tools the unresolved entries stand for (see :meth:`guesses`)."""

    # -- helpers ------------------------------------------------------------------------

    def issue(
        self,
        tool_id: str,
        message: str,
        tag: str,
        path: str = "",
        expected: Any = None,
        actual: Any = None,
    ) -> None:
        self.plan.issues.append(ConfigIssue(tool_id, message, path, expected, actual, tag))

    def skip(self, p: _Planned, reason: str, message: str) -> None:
        self.skipped.append(SkippedEntry(p.source, p.name, p.fqid or "", reason, message))

    @staticmethod
    def default_name(fqid: str) -> str:
        """The client name of an entry without a configured ``name``: the bare id, always.

        A name the model calls never changes because some other tool is registered; two
        entries that would share one are a ``duplicate_name`` problem (see
        :meth:`unique_names`)."""
        return fqid.rpartition(":")[2]

    # -- 1. resolve ids ---------------------------------------------------------------------

    def resolve(self, cfg: ToolConfig, path: str, source: str) -> _Planned:
        matches = self.registry.resolve(cfg.id)
        fqid: str | None = None
        if len(matches) == 1:
            fqid = matches[0]
        elif not matches:
            known = list(self.registry) + [fq.split(":", 1)[1] for fq in self.registry]
            hint = did_you_mean(cfg.id, known)
            self.issue(
                cfg.id,
                f"no tool {cfg.id!r} is registered{hint}",
                "unknown_tool",
                f"{path}.id",
                actual=cfg.id,
            )
            self.unresolved.append(cfg.id)
        else:
            self.issue(
                cfg.id,
                f"{cfg.id!r} exists in several namespaces; write one of {', '.join(matches)}",
                "ambiguous_id",
                f"{path}.id",
                expected=matches,
                actual=cfg.id,
            )
            self.unresolved.append(cfg.id)
        name = cfg.name or self.default_name(fqid or cfg.id)
        return _Planned(source, path, cfg, fqid, name)

    def remote_entries(self, remote: RemoteEntries) -> list[Candidate[_Planned]]:
        out: list[Candidate[_Planned]] = []
        for i, raw in enumerate(remote):
            path = f"remote[{i}]"
            try:
                if isinstance(raw, ToolConfig):
                    cfg = raw
                elif isinstance(raw, str):
                    cfg = ToolConfig(id=raw)
                else:
                    cfg = ToolConfig.model_validate(raw)
            except ValidationError as exc:
                raw_id = raw.get("id") if isinstance(raw, Mapping) else None
                tool_id = raw_id if isinstance(raw_id, str) and raw_id else path
                self.plan.issues.extend(
                    _config_issues(exc, path, tool_id=tool_id, model=ToolConfig)
                )
                continue
            except Exception as exc:  # pydantic could not even describe it
                self.plan.issues.append(unreadable_issue(exc, path, path))
                continue
            p = self.resolve(cfg, path, "remote")
            out.append(Candidate("remote", p.name, p.fqid, p))
        return out

    def external_entries(self, external: ExternalTools) -> list[Candidate[ErasedTool]]:
        prefix = self.config.external_prefix or ""
        if isinstance(external, Mapping):
            pairs = list(external.items())
        else:
            pairs = [(tool.id, tool) for tool in external]
        return [Candidate("external", prefix + name, tool.fqid, tool) for name, tool in pairs]

    # -- 3. per entry -----------------------------------------------------------------------

    def choose(self, p: _Planned) -> None:
        assert p.fqid is not None
        cfg = p.config
        choice = choose_version(p.fqid, self.registry.versions(p.fqid), cfg.version)
        if choice.tool is None:
            if self.implicit:
                self.skip(p, "removed", choice.problem)
                return
            self.unresolved.append(p.fqid)
            self.issue(
                p.fqid,
                choice.problem,
                "unknown_version",
                f"{p.path}.version" if cfg.version is not None else p.path,
                expected=list(choice.available),
                actual=cfg.version,
            )
            return
        tool = choice.tool
        if len(choice.available) > 1:
            every = self.registry.versions(p.fqid)
            self.plan.versions[p.fqid] = {v: every[v] for v in choice.available}
        if choice.deprecated:
            self.plan.deprecated.append(
                DeprecatedVersionWarning(p.fqid, tool.version, tool.replacement)
            )
        p.tool = tool
        p.kind = tool.kind if cfg.kind is None else cfg.kind
        p.read_only = read_only_as(tool.capabilities, p.kind)
        p.timeout = cfg.timeout or tool.capabilities.timeout or self.config.timeout
        self.params(p, tool)
        self.renames(p, tool)

    def params(self, p: _Planned, tool: ErasedTool) -> None:
        given = p.config.params
        model = tool.params_type
        where = f"{p.path}.params"
        if model is None:
            if given:
                self.issue(
                    tool.fqid,
                    f"{tool.fqid} takes no params",
                    "invalid_params",
                    where,
                    actual=given,
                )
            return
        known: dict[str, str] = {}
        for fname, finfo in model.model_fields.items():
            known[fname] = fname
            if finfo.alias:
                known[finfo.alias] = fname
        unknown = [k for k in given if k not in known]
        for key in unknown:
            self.issue(
                tool.fqid,
                f"{tool.fqid} has no param {key!r}{did_you_mean(key, known, 1)}",
                "invalid_params",
                f"{where}.{key}",
                expected=sorted(known),
                actual=key,
            )
        data = {k: v for k, v in given.items() if k in known}
        try:
            p.params = model.model_validate(data)
        except ValidationError as exc:
            bad: set[str] = set()
            for err in exc.errors(include_url=False):
                at = err.get("loc")
                # An error of the whole model leaves every given param unknown.
                bad.update((str(at[0]),) if at else data)
            p.unknown = frozenset(bad)
            try:
                p.stand_in = model.model_validate({k: v for k, v in data.items() if k not in bad})
            except Exception:
                p.stand_in = _default_params(tool)
            for err in exc.errors(include_url=False):
                loc = ".".join(str(part) for part in err.get("loc", ()))
                missing = err.get("type") == "missing"
                self.issue(
                    tool.fqid,
                    f"{tool.fqid} param {loc or '(params)'}: {err.get('msg', 'invalid')}",
                    "invalid_params",
                    f"{where}.{loc}" if loc else where,
                    actual=None if missing else err.get("input"),
                )
        except Exception as exc:  # pydantic could not even describe it (nested too deeply)
            p.unknown = frozenset(data)
            p.stand_in = _default_params(tool)
            self.issue(tool.fqid, unreadable_issue(exc, where).message, "invalid_params", where)

    def renames(self, p: _Planned, tool: ErasedTool) -> None:
        rename = p.config.rename
        if not rename:
            return
        fields = arg_fields(tool)
        ok = True
        for canonical in rename:
            if canonical not in fields:
                ok = False
                self.issue(
                    tool.fqid,
                    f"{tool.fqid} has no parameter {canonical!r} to rename",
                    "invalid_rename",
                    f"{p.path}.rename.{canonical}",
                    expected=sorted(fields),
                    actual=canonical,
                )
        final: dict[str, list[str]] = {}
        for f in sorted(fields):
            final.setdefault(rename.get(f, f), []).append(f)
        for client, sources in final.items():
            if len(sources) > 1:
                ok = False
                renamed = [s for s in sources if s in rename] or sources
                self.issue(
                    tool.fqid,
                    f"renaming makes {' and '.join(map(repr, sources))} both {client!r}",
                    "invalid_rename",
                    f"{p.path}.rename.{renamed[0]}",
                    actual=client,
                )
        if ok:
            p.to_client = {k: v for k, v in rename.items() if k != v} or None

    # -- 4. across entries ------------------------------------------------------------------

    def unique_names(self, planned: list[_Planned]) -> None:
        seen: dict[str, _Planned] = {}
        for p in planned:
            first = seen.setdefault(p.name, p)
            if first is p:
                continue
            if self.implicit:
                fix = (
                    "list the tools in `tools` and give one of them another `name` "
                    f'(e.g. {{id = "{p.label}", name = "..."}}), or leave one out'
                )
            else:
                fix = "give one of them another `name`, or leave one out"
            self.issue(
                p.label,
                f"client name {p.name!r} would name two tools: {first.label} from "
                f"{_origin(first)} (at {first.path}) and {p.label} from {_origin(p)}; {fix}",
                "duplicate_name",
                f"{p.path}.name",
                expected=[first.label, p.label],
                actual=p.name,
            )

    def exclusions(self, planned: list[_Planned]) -> list[_Planned]:
        kept: list[_Planned] = []
        # Only a pair where one side declares conflicts can clash: a tool that declares
        # none is checked against the kept tools that do, not against every kept tool.
        declaring: list[_Planned] = []
        for p in planned:
            assert p.tool is not None
            clash: tuple[_Planned, str] | None = None
            for q in kept if p.tool.conflicts else declaring:
                assert q.tool is not None
                if q.fqid == p.fqid:
                    continue
                if any(_refers_to(ref, q.tool.fqid) for ref in p.tool.conflicts):
                    clash = (q, p.tool.fqid)
                elif any(_refers_to(ref, p.tool.fqid) for ref in q.tool.conflicts):
                    clash = (q, q.tool.fqid)
                if clash is not None:
                    break
            if clash is None:
                kept.append(p)
                if p.tool.conflicts:
                    declaring.append(p)
                continue
            other, declared_by = clash
            message = (
                f"{p.label} and {other.label} cannot be configured together "
                f"(declared by {declared_by})"
            )
            if self.implicit:
                self.skip(p, "conflict", message)
                continue
            kept.append(p)
            if p.tool.conflicts:
                declaring.append(p)
            self.issue(p.label, message, "conflict", p.path, actual=other.label)
        return kept

    def requirement(self, tool_id: str, text: str, path: str) -> Any:
        """The compiled expression, or ``None`` after reporting it as malformed."""
        try:
            return compile_expression(text)
        except ExpressionError as exc:
            self.issue(
                tool_id,
                f"malformed requirement: {exc}",
                "dependency",
                path,
                actual=text,
            )
            return None

    def dependencies(
        self,
        planned: list[_Planned],
        external: list[Candidate[ErasedTool]],
        *,
        report_as: str | None,
    ) -> list[_Planned]:
        """Check ``requires`` of every entry; return the entries kept.

        With ``report_as`` (a skip reason), entries whose requirement fails are dropped
        and reported, repeatedly until the rest holds; otherwise each failure is an issue,
        unless the tools that unresolved entries stand for would meet it (the problem is
        theirs, and reported already).
        """
        if not any(p.tool is not None and p.tool.requires for p in planned):
            return list(planned)  # nothing to check: no facts (nor Args models) needed
        ext_facts = tuple(ToolFacts.of(c.item, name=c.name) for c in external)
        current = list(planned)
        while True:
            view = self.view = SetView(tuple(p.facts() for p in current) + ext_facts)
            guessed = SetView(view.tools + self.guessed) if self.guessed else None
            failed: list[tuple[_Planned, str]] = []
            for p in current:
                assert p.tool is not None
                text = p.tool.requires
                if not text:
                    continue
                try:
                    expr = compile_expression(text)
                except ExpressionError:
                    continue  # reported as malformed already
                if not expr.evaluate(view):
                    failed.append((p, text))
            if not failed:
                return current
            for p, text in failed:
                message = (
                    f"{p.label} requires `{text}`{_in_words(text)}, which the configured set "
                    f"does not meet; configure what it needs or leave {p.label} out"
                )
                if report_as is None:
                    expr = self.unmet[id(p)] = compile_expression(text)
                    if guessed is None or not expr.evaluate(guessed):
                        self.issue(p.label, message, "dependency", p.path, expected=text)
                else:
                    self.skip(p, report_as, message)
            if report_as is None:
                return current
            dropped = {id(p) for p, _ in failed}
            current = [p for p in current if id(p) not in dropped]

    # -- 5. templates -----------------------------------------------------------------------

    def render(self, planned: list[_Planned]) -> TemplateRenderer:
        tools = [(p.tool.fqid, p.kind.value, p.name) for p in planned if p.tool is not None]
        renderer = TemplateRenderer.from_tools(tools)
        extended = None
        if self.guessed:
            extended = TemplateRenderer.from_tools(
                tools + [(f.fqid, f.kind, f.name) for f in self.guessed]
            )
        for p in planned:
            assert p.tool is not None
            override = p.config.description
            text = override if override is not None else p.tool.description
            rendered, problems = renderer.render(
                text, Parameters(p.tool.argument_names, p.to_client)
            )
            p.description = rendered
            path = f"{p.path}.description" if override is not None else p.path
            for problem in self.own_problems(p, problems, extended):
                issue = problem_issue(problem, p.label, path)
                self.plan.issues.append(
                    ConfigIssue(
                        issue.tool_id,
                        f"in the description of {p.name}: {issue.message}",
                        issue.path,
                        issue.expected,
                        issue.actual,
                        issue.tag,
                    )
                )
        return renderer

    def own_problems(
        self, p: _Planned, problems: list[TemplateProblem], extended: TemplateRenderer | None
    ) -> list[TemplateProblem]:
        """The template problems of ``p`` that are not echoes of another issue: left out
        are placeholders that a tool an unresolved entry stands for would render, and
        placeholders naming what ``p``'s unmet requirement asks for (its dependency
        issue says it already)."""
        if extended is not None:
            problems = [q for q in problems if extended.render(q.placeholder)[1]]
        expr = self.unmet.get(id(p))
        if expr is None or not problems:
            return problems
        wanted = [(q, self.placeholder_facts(q.placeholder)) for q in problems]
        fakes = tuple(f for _, f in wanted if f is not None)
        if not fakes or not expr.evaluate(SetView(self.view.tools + self.guessed + fakes)):
            return problems
        return [q for q, f in wanted if f is None]

    def placeholder_facts(self, placeholder: str) -> ToolFacts | None:
        """A stand-in for the tool a ``{tool:<kind>}`` or ``{name:<id>}`` placeholder
        names, its params unknown (configured as the requirement needs): the registered
        tool when the id names one, else a tool of that kind or id (``None`` for other
        placeholders and unknown kinds)."""
        m = _TARGET.fullmatch(placeholder)
        if m is None:
            return None
        word, value = m.groups()
        if word == "tool":
            return ToolFacts(":", value) if value in _KIND_VALUES else None
        for fact in self.registered_facts(self.registry.resolve(value)):
            return fact
        fqid = value if ":" in value else f":{value}"
        return ToolFacts(fqid, Kind.OTHER.value, unknown=_ALL)

    def registered_facts(self, fqids: Iterable[str]) -> list[ToolFacts]:
        """Facts about the default version of each registered tool, its params unknown
        (an entry that names it is invalid, or it is not configured yet)."""
        facts: list[ToolFacts] = []
        for fqid in fqids:
            tool = choose_version(fqid, self.registry.versions(fqid), None).tool
            if tool is not None:
                facts.append(ToolFacts.of(tool, unknown=_ALL))
        return facts

    def guesses(self, planned: Iterable[_Planned]) -> tuple[ToolFacts, ...]:
        """What the unresolved and invalid entries most likely stand for: every tool an
        ambiguous id names, the default version of a tool asked for in an unknown
        version, the closest registered id for an unknown one (their params unknown);
        an entry whose params are invalid, with its valid params over the defaults and
        the invalid ones unknown. A requirement on an unknown param holds: it might, once
        the configuration is fixed."""
        known = list(self.registry) + [fq.split(":", 1)[1] for fq in self.registry]
        facts: list[ToolFacts] = []
        for ref in self.unresolved:
            fqids = self.registry.resolve(ref)
            if not fqids:
                close = difflib.get_close_matches(ref, known, n=1)
                fqids = self.registry.resolve(close[0]) if close else []
            facts += self.registered_facts(fqids)
        for p in planned:
            if p.unknown and p.tool is not None:
                facts.append(
                    ToolFacts.of(
                        p.tool, kind=p.kind, params=p.stand_in, name=p.name, unknown=p.unknown
                    )
                )
        return tuple(facts)

    # -- the whole ----------------------------------------------------------------------------

    def run(self, external: ExternalTools, remote: RemoteEntries) -> BuildPlan:
        cfg = self.config
        if self.implicit:
            baseline_cfgs = [ToolConfig(id=fqid) for fqid in self.registry]
        else:
            assert cfg.tools is not None
            baseline_cfgs = list(cfg.tools)
        positions = self.positions or range(len(baseline_cfgs))
        baseline = [
            self.resolve(c, f"tools[{i}]", "baseline")
            for i, c in zip(positions, baseline_cfgs, strict=True)
        ]
        merged = merge_layers(
            [Candidate("baseline", p.name, p.fqid, p) for p in baseline],
            self.external_entries(external),
            self.remote_entries(remote),
        )
        self.skipped.extend(merged.skipped)
        planned = [c.item for c in merged.builtin]
        for p in planned:
            if p.fqid is not None:
                self.choose(p)
        self.guessed = self.guesses(planned)
        self.unique_names(planned)
        usable = self.exclusions([p for p in planned if p.tool is not None])
        for p in usable:
            assert p.tool is not None
            if p.tool.requires:
                self.requirement(p.label, p.tool.requires, p.path)
        reminder_exprs: list[tuple[Any, Any]] = []
        for r in self.reminders:
            text = getattr(r, "requires", None)
            rid = str(getattr(r, "id", None) or getattr(r, "name", None) or r)
            expr = self.requirement(rid, text, f"reminders.{rid}") if text else None
            reminder_exprs.append((r, expr))
        usable = self.dependencies(
            usable, merged.external, report_as="dependency" if self.implicit else None
        )
        self.render(usable)
        if self.plan.issues:
            return self.finish([], [])
        externals = merged.external
        if cfg.mode == "read_only":
            kept: list[_Planned] = []
            for p in usable:
                if p.read_only:
                    kept.append(p)
                else:
                    self.skip(p, "mode", f"{p.label} is not read-only")
            ext_kept: list[Candidate[ErasedTool]] = []
            for c in externals:
                if c.item.read_only:
                    ext_kept.append(c)
                else:
                    self.skipped.append(
                        SkippedEntry(
                            "external", c.name, c.item.fqid, "mode", f"{c.name} is not read-only"
                        )
                    )
            externals = ext_kept
            usable = self.dependencies(kept, externals, report_as="dependency")
        entries = [
            ToolEntry(
                p.name,
                p.tool,
                description=p.description,
                to_client=p.to_client,
                params=p.params,
                timeout=p.timeout,
                kind=p.kind,
            )
            for p in usable
            if p.tool is not None
        ]
        for c in sorted(externals, key=lambda c: c.name):
            timeout = c.item.capabilities.timeout or cfg.external_timeout
            entries.append(ToolEntry(c.name, c.item, timeout=timeout))
        kept_reminders: list[Any] = []
        if cfg.reminders:
            # The view (facts of every entry) is built only when some reminder asks.
            view = None
            for r, e in reminder_exprs:
                if e is not None and view is None:
                    view = SetView.from_entries(entries)
                if e is None or e.evaluate(view):
                    kept_reminders.append(r)
        return self.finish(entries, kept_reminders)

    def finish(self, entries: list[ToolEntry], reminders: list[Any]) -> BuildPlan:
        self.plan.issues.sort(key=_position)
        self.plan.entries = entries
        self.plan.reminders = reminders
        self.plan.report = BuildReport(tuple(self.skipped))
        return self.plan


def plan_build(
    registry: Catalog,
    config: ToolSetConfig | Mapping[str, Any] | None,
    *,
    external: ExternalTools = (),
    remote: RemoteEntries = (),
    reminders: Iterable[Any] = (),
) -> BuildPlan:
    """Check ``config`` against ``registry`` and work out the set's entries.

    Configuration data (a mapping) is read leniently: its schema problems are issues
    of the plan, and its valid parts are checked against the registry all the same,
    so that every problem is found in one pass.
    """
    if config is None or isinstance(config, ToolSetConfig):
        return _Planner(registry, config or ToolSetConfig(), reminders).run(external, remote)
    parsed = _parse_config(config)
    planner = _Planner(registry, parsed.config, reminders)
    planner.plan.issues.extend(parsed.issues)
    planner.positions = parsed.positions
    planner.unresolved.extend(parsed.left_out)
    return planner.run(external, remote)


def raise_for(plan: BuildPlan) -> None:
    """Raise the plan's problems as one :class:`~toolweave.ConfigError`, if any."""
    if plan.issues:
        raise ConfigError(plan.issues)
