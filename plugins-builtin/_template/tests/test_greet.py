"""Unit tests of the ``greet`` tool."""

from __future__ import annotations

from toolweave import ErrorKind, PackManager
from toolweave_NAME import pack


def test_greet_through_the_pack() -> None:
    """The pack registers ``greet``, and a call returns the greeting as model text."""
    packs = PackManager(strict=True)
    packs.add("NAME", pack)
    with packs.build().session().sync() as session:
        result = session.call("greet", {"name": "Ada", "excited": True})
        assert result.error is None
        assert result.text == "Hello, Ada!"
        assert result.output == {"text": "Hello, Ada!"}


def test_greet_rejects_an_empty_name() -> None:
    """An empty name is ``invalid_params`` naming the field, not a crash."""
    packs = PackManager(strict=True)
    packs.add("NAME", pack)
    with packs.build().session().sync() as session:
        result = session.call("greet", {"name": ""})
        assert result.error is not None
        assert result.error.kind is ErrorKind.INVALID_PARAMS
        assert "name" in result.text
