"""The error types: kinds, messages, data, and the exception tree."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import toolweave
import toolweave.errors
from toolweave import (
    ConfigError,
    ConfigIssue,
    DuplicateToolError,
    ErrorKind,
    ExpressionError,
    MissingResourceError,
    PackLoadError,
    ToolError,
    ToolweaveError,
    UsageError,
)


def test_error_kinds_are_the_designed_set() -> None:
    """The kinds are exactly the eleven stable values hosts switch on."""
    assert {k.value for k in ErrorKind} == {
        "unimplemented",
        "invalid_params",
        "not_found",
        "permission_denied",
        "unauthorized",
        "timeout",
        "cancelled",
        "rate_limited",
        "execution_error",
        "unavailable",
        "custom",
    }


def test_tool_error_accepts_kind_as_string() -> None:
    """A kind given as its string value becomes the enum member."""
    err = ToolError("rate_limited", "slow down")
    assert err.kind is ErrorKind.RATE_LIMITED
    assert err.message == "slow down"
    assert str(err) == "rate_limited: slow down"
    assert repr(err) == "ToolError('rate_limited', 'slow down')"


def test_tool_error_rejects_unknown_kind() -> None:
    """An unknown kind string is a programming error, raised at once."""
    with pytest.raises(ValueError, match="oops"):
        ToolError("oops", "x")


def test_tool_error_to_dict_includes_data_only_when_given() -> None:
    """to_dict carries kind and message, plus data when there is any."""
    assert ToolError(ErrorKind.CUSTOM, "m").to_dict() == {"kind": "custom", "message": "m"}
    assert ToolError(ErrorKind.CUSTOM, "m", {"retry": 3}).to_dict() == {
        "kind": "custom",
        "message": "m",
        "data": {"retry": 3},
    }


def test_tool_error_equality_and_hash() -> None:
    """Errors with the same kind, message and data are equal and hash alike."""
    a = ToolError(ErrorKind.TIMEOUT, "late")
    b = ToolError("timeout", "late")
    assert a == b
    assert hash(a) == hash(b)
    assert a != ToolError(ErrorKind.TIMEOUT, "later")
    assert a != ToolError(ErrorKind.TIMEOUT, "late", data=1)
    assert a != "timeout: late"


def test_exception_tree() -> None:
    """Every toolweave exception derives from ToolweaveError, as drawn in errors.py."""
    assert issubclass(ToolError, ToolweaveError)
    assert issubclass(UsageError, ToolweaveError)
    assert issubclass(DuplicateToolError, UsageError)
    assert issubclass(MissingResourceError, UsageError)
    assert issubclass(ConfigError, ToolweaveError)
    assert issubclass(PackLoadError, ToolweaveError)
    assert issubclass(ExpressionError, UsageError)
    assert issubclass(ExpressionError, ValueError)
    assert issubclass(toolweave.errors.UnsupportedSchemaError, UsageError)


def _all_subclasses(cls: type[Exception]) -> set[type[Exception]]:
    found: set[type[Exception]] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_all_subclasses(sub)}
    return found


def test_every_exception_lives_in_the_errors_module_and_its_tree() -> None:
    """Every ToolweaveError subclass of the package is defined in toolweave.errors, listed
    in its __all__ and drawn in its docstring tree."""
    for info in pkgutil.walk_packages(toolweave.__path__, "toolweave."):
        if ".cli._demo_script" not in info.name and "pack_template" not in info.name:
            importlib.import_module(info.name)
    ours = {c for c in _all_subclasses(ToolweaveError) if c.__module__.startswith("toolweave")}
    assert {c.__module__ for c in ours} == {"toolweave.errors"}
    tree = toolweave.errors.__doc__ or ""
    for cls in ours | {ToolweaveError}:
        assert cls.__name__ in toolweave.errors.__all__
        assert f"── {cls.__name__} " in tree or f"    {cls.__name__}\n" in tree, cls.__name__


def test_moved_errors_are_importable_from_their_former_modules() -> None:
    """ExpressionError and UnsupportedSchemaError keep their old import paths."""
    from toolweave.catalog._expr import ExpressionError as from_expr
    from toolweave.formats import UnsupportedSchemaError as from_formats
    from toolweave.formats._schema import UnsupportedSchemaError as from_schema

    assert from_expr is ExpressionError is toolweave.errors.ExpressionError
    assert from_formats is from_schema is toolweave.errors.UnsupportedSchemaError


def test_duplicate_tool_error_names_both_origins() -> None:
    """The message and attributes name the id and both registrations."""
    err = DuplicateToolError("main:read_file", "pack fs (toolweave-fs 0.1.0)", "host")
    assert err.fqid == "main:read_file"
    assert (err.first, err.second) == ("pack fs (toolweave-fs 0.1.0)", "host")
    assert "main:read_file" in str(err)
    assert "pack fs (toolweave-fs 0.1.0)" in str(err)
    assert "host" in str(err)


def test_missing_resource_error_names_the_type_and_the_remedy() -> None:
    """The message names the type's module and qualified name and how to provide it."""

    class Terminal:
        pass

    err = MissingResourceError(Terminal)
    assert err.key is Terminal
    assert f"{__name__}." in str(err)
    assert "Terminal" in str(err)
    assert "provide_resources" in str(err)


def test_config_issue_renders_every_part() -> None:
    """A ConfigIssue shows tag, tool, message, path and expected/actual values."""
    issue = ConfigIssue(
        "bash", "must be positive", "tools[1].params.timeout", expected=">0", actual=-1, tag="x"
    )
    assert str(issue) == (
        "[x] bash: must be positive at tools[1].params.timeout (expected '>0', got -1)"
    )
    assert str(ConfigIssue("", "empty set")) == "[invalid] empty set"


def test_config_issue_shows_only_the_values_it_has() -> None:
    """Only the expected or only the actual value is printed when the other is unknown."""
    assert str(ConfigIssue("t", "bad", actual="x")) == "[invalid] t: bad (got 'x')"
    assert str(ConfigIssue("t", "bad", expected=["a", "b"])) == (
        "[invalid] t: bad (expected ['a', 'b'])"
    )
    assert str(ConfigIssue("t", "bad", expected=0, actual=False)) == (
        "[invalid] t: bad (expected 0, got False)"
    )


def test_config_error_lists_every_issue() -> None:
    """ConfigError keeps all issues and its message counts and lists them."""
    issues = [ConfigIssue("a", "first"), ConfigIssue("b", "second")]
    err = ConfigError(issues)
    assert err.issues == tuple(issues)
    text = str(err)
    assert text.startswith("2 configuration problems:")
    assert "a: first" in text
    assert "b: second" in text
    assert str(ConfigError([issues[0]])).startswith("1 configuration problem:")


def test_pack_load_error_carries_pack_dist_stage_and_cause() -> None:
    """PackLoadError names the pack, distribution, stage and the cause."""
    cause = RuntimeError("boom")
    err = PackLoadError("fs", "toolweave-fs 0.1.0", cause, "register_tools")
    assert (err.pack, err.dist, err.cause, err.stage) == (
        "fs",
        "toolweave-fs 0.1.0",
        cause,
        "register_tools",
    )
    assert str(err) == (
        "pack 'fs' (from toolweave-fs 0.1.0) failed during register_tools: RuntimeError: boom"
    )
    assert "from" not in str(PackLoadError("local", None, cause, "import"))


class _Unprintable(Exception):
    """Its ``__str__`` and ``__repr__`` fail."""

    def __str__(self) -> str:
        raise TypeError("no str")

    def __repr__(self) -> str:
        raise TypeError("no repr")


def test_config_issue_shows_values_too_deep_or_odd_to_print() -> None:
    """A value nested 100,000 lists deep made str(issue) (and so ConfigError(...)) raise
    RecursionError; it is shown bounded. One whose repr raises is shown by its type."""
    deep: list[object] = []
    inner = deep
    for _ in range(100_000):
        nested: list[object] = []
        inner.append(nested)
        inner = nested
    text = str(ConfigIssue("t", "bad", actual=deep))
    assert text.startswith("[invalid] t: bad (got [[[")
    assert len(text) < 200
    odd = str(ConfigIssue("t", "bad", expected=_Unprintable()))
    assert odd.startswith("[invalid] t: bad (expected <_Unprintable")
    assert "got [[[" in str(ConfigError([ConfigIssue("t", "bad", actual=deep)]))


def test_pack_load_error_of_a_cause_that_cannot_be_printed() -> None:
    """A pack failing with an exception whose ``__str__`` raises is still reported."""
    err = PackLoadError("fs", None, _Unprintable(), "import")
    assert str(err) == (
        "pack 'fs' failed during import: _Unprintable (its message could not be read)"
    )
