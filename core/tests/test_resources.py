"""Resources: the thread-safe, type-keyed container tools read through their context."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from toolweave import Environment, MissingResourceError, Resources, UsageError, Workspace


class Base:
    """A resource type with a subclass, to check explicit keys."""


class Derived(Base):
    """A subclass stored under its base type."""


def test_insert_and_get_by_type() -> None:
    """A value is found under its exact type, not a base; a missing type gives None."""
    res = Resources()
    res.insert(Derived())
    res.insert("text")
    assert isinstance(res.get(Derived), Derived)
    assert res.get(Base) is None
    assert res.get(str) == "text"
    assert res.get(int) is None


def test_insert_with_key_and_replace() -> None:
    """An explicit key stores a subclass under its base; inserting again replaces."""
    res = Resources()
    first, second = Derived(), Derived()
    res.insert(first, Base)
    assert res.get(Base) is first
    assert res.get(Derived) is None
    res.insert(second, Base)
    assert res.get(Base) is second


def test_falsy_values_are_values() -> None:
    """Zero and empty strings are stored values, not absences."""
    res = Resources()
    res.insert(0)
    res.insert("")
    assert res.get(int) == 0
    assert res.require(str) == ""
    assert res.get_or_default(int, lambda: 5) == 0


def test_require_names_the_missing_type() -> None:
    """require() of a missing type raises an error whose message names the type."""
    res = Resources()
    with pytest.raises(MissingResourceError) as info:
        res.require(Workspace)
    assert info.value.key is Workspace
    assert "toolweave.resources.Workspace" in str(info.value)
    assert isinstance(info.value, UsageError)
    assert isinstance(info.value, LookupError)


def test_get_or_default_stores_once() -> None:
    """get_or_default builds the value on first use, stores it, then returns the same."""
    res = Resources()
    calls: list[int] = []

    def build() -> Derived:
        calls.append(1)
        return Derived()

    first = res.get_or_default(Derived, build)
    second = res.get_or_default(Derived, build)
    assert first is second
    assert res.get(Derived) is first
    assert calls == [1]


def test_get_or_default_runs_default_once_under_threads() -> None:
    """Many threads racing on one key all get one value; the default runs once."""
    res = Resources()
    calls: list[int] = []
    barrier = threading.Barrier(16)
    results: list[Derived] = []
    lock = threading.Lock()

    def build() -> Derived:
        calls.append(1)
        time.sleep(0.02)  # widen the race window
        return Derived()

    def worker() -> None:
        barrier.wait()
        value = res.get_or_default(Derived, build)
        with lock:
            results.append(value)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 16
    assert all(r is results[0] for r in results)


def test_concurrent_inserts_of_distinct_keys_all_land() -> None:
    """Writers on different keys from many threads lose nothing."""
    res = Resources()
    types = [type(f"T{i}", (), {}) for i in range(200)]

    def worker(chunk: list[type]) -> None:
        for t in chunk:
            res.insert(t(), t)

    threads = [threading.Thread(target=worker, args=(types[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(res.get(t) is not None for t in types)


def test_child_layers_over_parent() -> None:
    """A child sees its parent's values, shadows them with its own, never writes up."""
    parent = Resources()
    parent.insert("shared")
    parent.insert(1)
    child = parent.child()
    assert child.get(str) == "shared"
    child.insert("mine")
    assert child.get(str) == "mine"
    assert parent.get(str) == "shared"
    child.remove(str)
    assert child.get(str) == "shared"
    child.remove(int)  # only removes from the child: the parent keeps it
    assert child.require(int) == 1
    assert str in child
    assert float not in child
    assert sorted(t.__name__ for t in child) == ["int", "str"]


def test_get_or_default_on_child_uses_parent_value() -> None:
    """A value the parent holds is returned as is; nothing is stored in the child."""
    parent = Resources()
    shared = Derived()
    parent.insert(shared)
    child = parent.child()
    assert child.get_or_default(Derived, Derived) is shared
    child.remove(Derived)
    assert parent.get(Derived) is shared


def test_require_searches_parents() -> None:
    """require() finds a value two layers up and fails naming the type when absent."""
    grand = Resources()
    grand.insert(Workspace(Path(".")))
    leaf = grand.child().child()
    assert leaf.require(Workspace).root == Path(".").resolve()
    with pytest.raises(MissingResourceError, match="Environment"):
        leaf.require(Environment)


def test_workspace_root_is_absolute_and_resolved(tmp_path: Path) -> None:
    """Workspace resolves its root, following links."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert Workspace(link).root == real.resolve()
    assert Workspace(Path("relative")).root.is_absolute()


def test_environment_defaults_to_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """Environment() holds the allow-listed variables, captured when made, and never the
    host's secrets; everything() is the explicit opt-in to all of them."""
    monkeypatch.setenv("LANG", "one")
    monkeypatch.setenv("OPENAI_API_KEY", "secret")
    env = Environment()
    monkeypatch.setenv("LANG", "two")
    assert env.variables["LANG"] == "one"
    assert os.environ["LANG"] == "two"
    assert "OPENAI_API_KEY" not in env.variables
    assert Environment.everything().variables["OPENAI_API_KEY"] == "secret"


def test_repr_names_the_types() -> None:
    """The repr lists the stored types, for debugging."""
    res = Resources()
    res.insert(Derived())
    assert repr(res) == "Resources(Derived)"
