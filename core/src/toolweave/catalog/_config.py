"""The client configuration of a tool set: which tools, how configured, how named.

A configuration is data (a dict, a JSON file or a TOML file)::

    mode = "read_only"
    external_prefix = "mcp__"

    [[tools]]
    id = "read_file"
    name = "Read"
    rename = { path = "file_path" }

    [[tools]]
    id = "shell:bash"
    params = { max_timeout_ms = 60000 }

:meth:`ToolSetBuilder.build(config) <toolweave.ToolSetBuilder.build>` checks it
against the registered tools and raises one :class:`~toolweave.ConfigError` listing
every problem; :func:`check` returns the problems instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolweave.authoring._tool import Kind
from toolweave.errors import ConfigError, ConfigIssue, describe_exception

__all__ = [
    "Mode",
    "ToolConfig",
    "ToolSetConfig",
    "did_you_mean",
    "read_config_file",
    "unreadable_issue",
]

Mode = Literal["default", "read_only"]
"""Capability filter of a set: ``read_only`` keeps only tools that change nothing."""

_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"


_COMPARISONS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
_CHOICE_ERRORS = frozenset({"enum", "literal_error"})
"""Errors whose message lists every allowed value (``Input should be 'read', ...``)."""


def did_you_mean(word: str, known: Iterable[str], n: int = 3) -> str:
    """``"; did you mean a, b?"`` with the names of ``known`` closest to ``word`` (at most
    ``n``), or ``""`` when none is close: the suggestion every unknown name gets, in a
    configuration's problems and on the command line alike."""
    import difflib

    close = difflib.get_close_matches(word, list(dict.fromkeys(known)), n=n)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _expected(err: Any, model: type[BaseModel] | None) -> Any:
    """What a pydantic error says was expected, as data (``None`` when it says nothing)."""
    kind = err.get("type", "")
    ctx = {k: v for k, v in (err.get("ctx") or {}).items() if k != "error"}
    if kind == "extra_forbidden" and model is not None and len(err.get("loc", ())) == 1:
        return sorted(model.model_fields)
    if "expected" in ctx:
        return ctx["expected"]
    for key, sign in _COMPARISONS.items():
        if key in ctx:
            return f"{sign} {ctx[key]}"
    if "pattern" in ctx:
        return f"matching {ctx['pattern']}"
    if len(ctx) == 1:
        return next(iter(ctx.values()))
    for suffix in ("_type", "_parsing"):
        if kind.endswith(suffix):
            return kind.removesuffix(suffix)
    return None


def _choices(err: Any, model: type[BaseModel] | None) -> list[Any] | None:
    """The allowed values of the enum or literal field ``err`` is about, as data."""
    loc = err.get("loc", ())
    if err.get("type") not in _CHOICE_ERRORS or model is None or len(loc) != 1:
        return None
    field = model.model_fields.get(str(loc[0]))
    if field is None:
        return None
    for arg in (field.annotation, *get_args(field.annotation)):
        if isinstance(arg, type) and issubclass(arg, Enum):
            return [member.value for member in arg]
        if get_origin(arg) is Literal:
            return list(get_args(arg))
    return None


def _config_issues(
    exc: ValidationError,
    root: str = "",
    *,
    tool_id: str = "",
    model: type[BaseModel] | None = None,
) -> list[ConfigIssue]:
    """One ``invalid_config`` issue per error of ``exc``, at paths below ``root``."""
    issues: list[ConfigIssue] = []
    for err in exc.errors(include_url=False):
        path = root
        for part in err.get("loc", ()):
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        message, expected = err.get("msg", "invalid value"), _expected(err, model)
        choices = _choices(err, model)
        if choices is not None:  # the message would list them, and "expected" again
            actual = err.get("input")
            message = "not one of the allowed values"
            if isinstance(actual, str):
                message += did_you_mean(actual, [str(c) for c in choices], n=1)
            expected = choices
        elif err.get("type") == "string_pattern_mismatch":
            message = "does not match the pattern"  # which one: in "expected"
        issues.append(
            ConfigIssue(
                tool_id,
                message,
                path=path,
                expected=expected,
                actual=err.get("input") if err.get("type") != "missing" else None,
                tag="invalid_config",
            )
        )
    return issues


@dataclass(frozen=True, slots=True)
class _ParsedConfig:
    """A configuration read leniently: what is valid, and what is not.

    Attributes:
        config: The configuration without its invalid parts (invalid set options left
            at their defaults, invalid tool entries left out).
        issues: One ``invalid_config`` issue per problem found.
        positions: For each entry of ``config.tools``, its index in the data.
        left_out: The ids of the tool entries left out (for those that have one).
    """

    config: ToolSetConfig
    issues: list[ConfigIssue] = field(default_factory=list)
    positions: tuple[int, ...] = ()
    left_out: tuple[str, ...] = ()


def _parse_config(data: Any, *, source: str = "") -> _ParsedConfig:
    """Read configuration data, collecting every schema problem instead of stopping.

    Set options and each tool entry are validated on their own, so that the valid ones
    can still be checked against the registered tools (see
    :meth:`ToolSetBuilder.build <toolweave.ToolSetBuilder.build>`).
    """
    if not isinstance(data, Mapping):
        issue = ConfigIssue(
            "",
            f"a configuration must be a table/object, got {type(data).__name__}",
            path=source,
            tag="invalid_config",
        )
        return _ParsedConfig(ToolSetConfig(tools=[]), [issue])
    issues: list[ConfigIssue] = [
        ConfigIssue(
            "",
            f"a configuration's keys are names (strings), got {_key_shown(key)}",
            path=source,
            expected="string",
            actual=key,
            tag="invalid_config",
        )
        for key in data
        if not isinstance(key, str)
    ]
    options = {k: v for k, v in data.items() if isinstance(k, str) and k != "tools"}
    # Each round drops at least one option, so this ends after len(options) rounds at
    # most (an error that names no option drops them all).
    while options:
        try:
            ToolSetConfig.model_validate(options)
            break
        except ValidationError as exc:
            issues += _config_issues(exc, model=ToolSetConfig)
            bad = {str(e["loc"][0]) for e in exc.errors(include_url=False) if e.get("loc")}
        except Exception:  # pydantic could not even describe it (nested too deeply)
            bad = set()
            for key, value in options.items():
                try:
                    ToolSetConfig.model_validate({key: value})
                except ValidationError:
                    pass  # reported by the next round
                except Exception as exc:
                    issues.append(unreadable_issue(exc, key))
                    bad.add(key)
        kept = {k: v for k, v in options.items() if k not in bad}
        options = kept if len(kept) < len(options) else {}
    raw_tools = data.get("tools")
    tools: list[ToolConfig] | None = None
    positions: list[int] = []
    left_out: list[str] = []
    if isinstance(raw_tools, list):
        tools = []
        for i, raw in enumerate(raw_tools):
            entry = {"id": raw} if isinstance(raw, str) else raw
            try:
                tools.append(ToolConfig.model_validate(entry))
                positions.append(i)
            except ValidationError as exc:
                raw_id = entry.get("id") if isinstance(entry, Mapping) else None
                tool_id = raw_id if isinstance(raw_id, str) and raw_id else ""
                issues += _config_issues(
                    exc, f"tools[{i}]", tool_id=tool_id or f"tools[{i}]", model=ToolConfig
                )
                if tool_id:  # what it stands for is uncertain: no follow-on issues
                    left_out.append(tool_id)
                rest = _valid_rest(entry, exc)
                if rest is not None:  # its id, params and renames are still checked
                    tools.append(rest)
                    positions.append(i)
            except Exception as exc:  # pydantic could not even describe it
                raw_id = entry.get("id") if isinstance(entry, Mapping) else None
                tool_id = raw_id if isinstance(raw_id, str) and raw_id else ""
                issues.append(unreadable_issue(exc, f"tools[{i}]", tool_id or f"tools[{i}]"))
                if tool_id:
                    left_out.append(tool_id)
    elif raw_tools is not None:
        tools = []
        issues.append(
            ConfigIssue(
                "",
                "tools must be a list of tool ids or tables",
                path="tools",
                expected="list",
                actual=raw_tools,
                tag="invalid_config",
            )
        )
    config = ToolSetConfig.model_validate({**options, "tools": tools})
    return _ParsedConfig(config, issues, tuple(positions), tuple(left_out))


def unreadable_issue(exc: Exception, path: str, tool_id: str = "") -> ConfigIssue:
    """The issue of a configuration value that could not even be validated: nested too
    deeply for the interpreter (a ``RecursionError``), or raising when read."""
    if isinstance(exc, RecursionError):
        reason = "it is nested too deeply"
    else:
        reason = describe_exception(exc)
    return ConfigIssue(tool_id, f"cannot be read: {reason}", path=path, tag="invalid_config")


def _key_shown(key: Any) -> str:
    """A configuration key that is not a string, as a message shows it (never raises)."""
    try:
        shown = repr(key)
    except Exception:
        return f"a {type(key).__name__}"
    return shown if len(shown) <= 60 else f"a {type(key).__name__}"


def _valid_rest(entry: Any, exc: ValidationError) -> ToolConfig | None:
    """The entry without the fields ``exc`` found invalid (a bad ``kind`` or ``name``
    then hides none of the entry's other problems: its id, params and renames are still
    checked against the registered tools); ``None`` when its id itself is invalid."""
    if not isinstance(entry, Mapping):
        return None
    bad = {str(e["loc"][0]) for e in exc.errors(include_url=False) if e.get("loc")}
    if not bad or "id" in bad:
        return None
    try:
        return ToolConfig.model_validate({k: v for k, v in entry.items() if k not in bad})
    except Exception:
        return None


class ToolConfig(BaseModel):
    """One configured tool: which tool, with which params, as the model sees it.

    In files an entry may also be a plain string, the tool id.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    """The tool id: ``bash`` when unique across namespaces, else ``namespace:bash``."""

    name: str | None = Field(default=None, pattern=_NAME_PATTERN)
    """The client-visible name (default: the bare id, or ``namespace__id`` when the bare
    id is registered in several namespaces)."""

    params: dict[str, Any] = Field(default_factory=dict)
    """Overrides of the tool's params; merged over its defaults (overrides win) and
    validated by its params model."""

    rename: dict[str, str] = Field(default_factory=dict)
    """Parameter renames, canonical name → client-visible name."""

    description: str | None = None
    """Replaces the tool's description; rendered as a template like the original."""

    version: str | None = None
    """The behaviour version (default: the newest active one)."""

    kind: Kind | None = None
    """Overrides the tool's kind (for templates, read-only inference and expressions)."""

    timeout: float | None = Field(default=None, gt=0)
    """Seconds a call may run (default: the tool's own, else the set's ``timeout``)."""

    @field_validator("rename")
    @classmethod
    def _client_param_names(cls, value: dict[str, str]) -> dict[str, str]:
        for client in value.values():
            if not re.match(_NAME_PATTERN, client):
                raise ValueError(f"client parameter name {client!r} must match {_NAME_PATTERN}")
        return value


class ToolSetConfig(BaseModel):
    """Which tools a set holds and the options that apply to all of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: list[ToolConfig] | None = None
    """The configured tools, in listing order; ``None`` means every registered tool with
    its defaults (then tools whose dependencies do not hold, or that conflict with an
    earlier one, are left out and reported instead of failing the build)."""

    mode: Mode = "default"
    """``read_only`` keeps only tools that change nothing (declared, or derived from
    their kind), then drops tools whose dependencies no longer hold; every dropped tool
    is listed in ``ToolSet.report``. Validation and description templates see the
    configured set before the mode applies, so descriptions read the same in every
    mode."""

    reminders: bool = True
    """Whether reminders run after calls."""

    external_prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{0,32}$")
    """Put once before the client-visible name of every external tool, unless its
    source sets its own (an MCP server's or pool's ``prefix``). Unset (``None``): MCP
    tools get ``mcp__``, other external tools no prefix; ``""``: no prefix at all."""

    timeout: float | None = Field(default=None, gt=0)
    """Default seconds a local tool may run when neither the entry nor the tool sets one
    (``None``: the session's default)."""

    external_timeout: float | None = Field(default=None, gt=0)
    """Default seconds an external tool may run when its source sets none."""

    @field_validator("tools", mode="before")
    @classmethod
    def _bare_ids(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"id": v} if isinstance(v, str) else v for v in value]
        return value

    # -- loading ------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "") -> ToolSetConfig:
        """Validate a configuration given as data.

        Raises:
            ConfigError: The data does not describe a configuration; one
                ``invalid_config`` issue per problem.
        """
        parsed = _parse_config(data, source=source)
        if parsed.issues:
            raise ConfigError(parsed.issues)
        return parsed.config

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "") -> ToolSetConfig:
        """Parse and validate JSON text.

        Raises:
            ConfigError: The text is not JSON or not a valid configuration.
        """
        return cls.from_dict(_parse_json(text, source), source=source)

    @classmethod
    def from_toml(cls, text: str, *, source: str = "") -> ToolSetConfig:
        """Parse and validate TOML text.

        Raises:
            ConfigError: The text is not TOML or not a valid configuration.
        """
        return cls.from_dict(_parse_toml(text, source), source=source)

    @classmethod
    def load(cls, path: str | Path) -> ToolSetConfig:
        """Read a ``.json`` or ``.toml`` file.

        Raises:
            ConfigError: The file cannot be read, has another suffix, does not parse,
                or is not a valid configuration.
        """
        return cls.from_dict(read_config_file(path), source=str(path))


def _parse_json(text: str | bytes, source: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(
            [ConfigIssue("", f"not valid JSON: {exc}", path=source, tag="invalid_config")]
        ) from None


def _parse_toml(text: str, source: str) -> Any:
    import tomllib  # only a TOML file needs it: not imported with toolweave

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(
            [ConfigIssue("", f"not valid TOML: {exc}", path=source, tag="invalid_config")]
        ) from None


def read_config_file(path: str | Path) -> Any:
    """The data of a ``.json`` or ``.toml`` configuration file, not yet validated.

    Raises:
        ConfigError: The file cannot be read, has another suffix or does not parse.
    """
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ConfigError(
            [
                ConfigIssue(
                    "",
                    "configuration files must end in .json or .toml",
                    path=str(file),
                    actual=file.suffix,
                    tag="invalid_config",
                )
            ]
        )
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            [
                ConfigIssue(
                    "",
                    f"cannot read the configuration: {exc}",
                    path=str(file),
                    tag="invalid_config",
                )
            ]
        ) from None
    if suffix == ".json":
        return _parse_json(text, str(file))
    return _parse_toml(text, str(file))
