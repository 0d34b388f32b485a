"""Whether a tool description says what the tool must not be used for.

A model picks among the few tools a turn injects by their descriptions; one that only
says what a tool does invites it for jobs that look alike ("read a directory with
read_file"). Every description should also draw the line: ``Do not use it for ...``,
``not for ...``, ``use X instead``. :func:`says_what_not` is the heuristic that
``toolweave check``, the conformance kit (:mod:`toolweave.testing`) and the injector
(warning once per tool it indexes) apply.
"""

from __future__ import annotations

import re

__all__ = ["NOT_FOR_HINT", "says_what_not"]

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
