"""Heuristics on tool descriptions: what the tool must not be used for, and parameters
named literally.

A model picks among the few tools a turn injects by their descriptions; one that only
says what a tool does invites it for jobs that look alike ("read a directory with
read_file"). Every description should also draw the line: ``Do not use it for ...``,
``not for ...``, ``use X instead``. :func:`says_what_not` is the heuristic that
``toolweave check``, the conformance kit (:mod:`toolweave.testing`) and the injector
(warning once per tool it indexes) apply.

A description that names one of the tool's own parameters should write it as
``{param:<name>}`` (see :mod:`toolweave.catalog._templates`), so that a configuration
renaming the parameter renames it in the description too; one that writes the name
itself in backticks (`` `offset` `` or `` `offset=10` ``) goes on naming the old name.
:func:`literal_parameters` finds those names; ``toolweave check`` and the conformance
kit warn about them (a ``ToolweaveWarning`` in the kit; neither fails).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["NOT_FOR_HINT", "literal_parameters", "literal_parameters_hint", "says_what_not"]

_LIMITS = re.compile(
    r"""
    \b(?:do|does|must|should|can|could|will)\s*(?:not|n't)\b   # do not / don't / must not
    | \bnot\s+(?:for|to|meant|intended|suited|suitable|a\s+substitute|needed|when|if)\b
    | \bnever\b
    | \binstead\b                                             # use X instead / instead use
    | \brather\s+than\b
    | \bavoid\b
    | \b(?:use|call|run)\s+(?:it|this(?:\s+tool)?)?\s*only\b  # use it only when ...
    | \bonly\s+(?:for|when|if|to|after|before)\b
    | \b(?:it|tool)\s+only\b                                  # this tool only reads ...
    | \bno\s+(?:use|substitute)\s+for\b
    """,
    re.IGNORECASE | re.VERBOSE,
)

NOT_FOR_HINT = (
    "the description does not say what the tool must not be used for; add a sentence "
    "such as 'Do not use it for ...; use <other tool> instead.'"
)
"""What ``toolweave check``, the conformance kit and the injector say about such a tool."""


def says_what_not(description: str) -> bool:
    """Whether ``description`` states what the tool must not be used for (``not for``,
    ``do not use``, ``don't use``, ``never``, ``instead``, ``rather than``, ``avoid``,
    ``only when`` ...).

    Example:
        >>> says_what_not("Read a text file. Do not use it for directories.")
        True
        >>> says_what_not("Read a text file.")
        False
    """
    return _LIMITS.search(description) is not None


# A Markdown code span: a run of backticks, its content, the same run again.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
# What a code span naming a parameter holds: the name alone, or ``name=value``.
_NAMED = re.compile(r"\s*([A-Za-z_]\w*)\s*(?:=.*)?", re.DOTALL)


def literal_parameters(description: str, names: Iterable[str]) -> list[str]:
    """The parameters among ``names`` that ``description`` writes literally in
    backticks (`` `offset` `` or `` `offset=10` ``) instead of as ``{param:offset}``, in
    order of first appearance, each once.

    Only code spans count: a name in plain prose ("the path") is not a parameter name
    for certain, and `` `{param:offset}` `` is the placeholder, not the name. Check the
    description as registered (or configured), before its placeholders are rendered.

    Example:
        >>> literal_parameters("Read `offset` lines from `path`.", ["path", "offset"])
        ['offset', 'path']
        >>> literal_parameters("Skip `{param:offset}` lines of the path.", ["path", "offset"])
        []
    """
    wanted = set(names)
    found: dict[str, None] = {}
    for span in _CODE_SPAN.finditer(description):
        named = _NAMED.fullmatch(span.group(2))
        if named is not None and named.group(1) in wanted:
            found.setdefault(named.group(1))
    return list(found)


def literal_parameters_hint(names: Sequence[str]) -> str:
    """What ``toolweave check`` and the conformance kit say about a description that
    writes the parameters ``names`` literally (see :func:`literal_parameters`).

    Example:
        >>> literal_parameters_hint(["offset"]).startswith(
        ...     "the description names its parameter `offset` literally; write `{param:offset}`"
        ... )
        True
    """
    listed = ", ".join(f"`{n}`" for n in names)
    placeholders = ", ".join(f"`{{param:{n}}}`" for n in names)
    s = "s" if len(names) != 1 else ""
    return (
        f"the description names its parameter{s} {listed} literally; write {placeholders} "
        "so that a renamed parameter is named as the model sees it"
    )
