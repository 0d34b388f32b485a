"""Behaviour versions: default choice, explicit choice, deprecated and removed versions."""

from __future__ import annotations

import pytest
from toolweave import ConfigError, DeprecatedVersionWarning, Lifecycle, tool
from toolweave.plugins import check_config as check


def test_default_is_the_newest_active_version(builder):
    """Without a version the newest active one is chosen, not the last registered."""
    toolset = builder.build({"tools": ["grep"]})
    assert toolset["grep"].tool.version == "3"
    assert toolset["grep"].description == "Search file contents (behaviour 3)."


def test_versions_order_numerically(make_builder, samples):
    """Version 10 is newer than 3 even when registered first."""
    b = make_builder(samples.GREP_V10, samples.GREP_V3)
    assert b.build({"tools": ["grep"]})["grep"].tool.version == "10"


def test_explicit_active_version_is_chosen(make_builder, samples):
    """A configured active version wins over the newer default."""
    b = make_builder(samples.GREP_V3, samples.GREP_V10)
    assert b.build({"tools": [{"id": "grep", "version": "3"}]})["grep"].tool.version == "3"


@pytest.mark.anyio
async def test_chosen_version_is_the_one_that_runs(builder):
    """A call runs the behaviour of the chosen version."""
    with pytest.warns(DeprecatedVersionWarning):
        toolset = builder.build({"tools": [{"id": "grep", "version": "2"}]})
    result = await toolset.session().call("grep", {"pattern": "x"})
    assert result.output == "grep v2: x"


def test_deprecated_version_warns_naming_the_replacement(builder):
    """Choosing a deprecated version builds, with a warning naming the replacement."""
    with pytest.warns(DeprecatedVersionWarning, match="version 2 is deprecated; use 3") as rec:
        toolset = builder.build({"tools": [{"id": "grep", "version": "2"}]})
    assert toolset["grep"].tool.version == "2"
    warning = rec[0].message
    assert isinstance(warning, DeprecatedVersionWarning)
    assert (warning.tool_id, warning.version, warning.replacement) == ("search:grep", "2", "3")


def test_removed_version_cannot_be_chosen(builder):
    """A removed version is an unknown_version issue that names the replacement."""
    with pytest.raises(ConfigError) as info:
        builder.build({"tools": [{"id": "grep", "version": "1"}]})
    [issue] = info.value.issues
    assert issue.tag == "unknown_version"
    assert issue.path == "tools[0].version"
    assert "was removed; use 3" in issue.message
    assert issue.expected == ["2", "3"]


def test_missing_version_lists_the_available_ones(builder):
    """A version that was never registered is reported with the versions that exist."""
    with pytest.raises(ConfigError) as info:
        builder.build({"tools": [{"id": "grep", "version": "9"}]})
    [issue] = info.value.issues
    assert issue.tag == "unknown_version"
    assert issue.actual == "9"
    assert issue.expected == ["2", "3"]


def test_only_deprecated_versions_left_picks_the_newest_with_a_warning(make_builder, samples):
    """With no active version, the default is the newest deprecated one, with a warning."""
    b = make_builder(samples.GREP_V1, samples.GREP_V2)
    with pytest.warns(DeprecatedVersionWarning):
        assert b.build({"tools": ["grep"]})["grep"].tool.version == "2"


def test_all_versions_removed(make_builder, samples):
    """An explicit entry whose versions were all removed fails; the implicit set omits it."""
    b = make_builder(samples.GREP_V1, samples.WriteFile)
    with pytest.raises(ConfigError, match="every version of search:grep was removed"):
        b.build({"tools": ["grep"]})
    toolset = b.build()
    assert toolset.names == ["write_file"]
    assert [s.reason for s in toolset.report.skipped] == ["removed"]


def test_function_tools_declare_versions():
    """@tool takes version, lifecycle and replacement like a Tool class."""

    @tool(id="now", version="2", lifecycle=Lifecycle.DEPRECATED, replacement="3", blocking=False)
    def now_v2() -> str:
        """Tell the time."""
        return "noon"

    assert (now_v2.version, now_v2.lifecycle, now_v2.replacement) == ("2", "deprecated", "3")


def test_check_does_not_count_deprecation_as_a_problem(builder, tmp_path):
    """check() returns no problem for a deprecated version, only the warning."""
    path = tmp_path / "tools.toml"
    path.write_text('[[tools]]\nid = "grep"\nversion = "2"\n')
    with pytest.warns(DeprecatedVersionWarning):
        assert check(path, builder) == []
