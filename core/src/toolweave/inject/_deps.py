"""Prerequisites learned from the catalogue itself: the tools a tool is usually called
after, so that a turn that needs a tool also sees the ones that must run first.

Within each group (a server's, a pack's or a class's tools; groups of at most
``max_group`` tools), tool ``A`` is a prerequisite of tool ``B`` when:

- ``A`` signs in (its name says authenticate, authorize, log in, sign in, and it is no
  status check): every other tool of the group needs a session;
- ``A`` sets a current thing (its description: "change the current working directory",
  "select the active project") and ``B`` works on the current (active, working, local)
  one;
- ``A`` looks something up (its name starts with get, list, find, search, ...) and what
  it looks up (a word of its name that names few tools of the group) is in ``B``'s
  parameters (``get_zipcode_based_on_city`` gives the zipcode that ``estimate_distance``
  takes), and not in ``B``'s own name.

Built once at index time (:func:`prerequisites`); a turn only reads the map.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from toolweave.inject._classify import ToolDoc
from toolweave.inject._text import STOPWORDS, raw_words, split_identifier, words

__all__ = ["group_members", "prerequisites", "with_prerequisites"]

_LOOKUP = frozenset(
    [
        "get",
        "gets",
        "list",
        "lists",
        "find",
        "finds",
        "search",
        "searches",
        "fetch",
        "fetches",
        "retrieve",
        "retrieves",
        "lookup",
        "look",
        "query",
        "read",
        "reads",
        "show",
        "shows",
        "display",
        "displays",
        "check",
        "checks",
        "view",
        "views",
        "resolve",
        "resolves",
        "locate",
        "locates",
        "obtain",
        "obtains",
    ]
)
"""First words of a tool name that look something up."""
_SIGN_IN = frozenset(["authenticate", "authentication", "authorize", "login", "logon", "signin"])
_SETS_CURRENT = re.compile(
    r"\b(?:change|set|switch|select|enter)s?\s+(?:the\s+|a\s+)?"
    r"(?:current|active|working|selected|default)\s+(\w+)(?:\s+(\w+))?",
    re.IGNORECASE,
)
_CURRENT = r"\b(?:current|active|working|selected|local)\s+(?:\w+\s+)?{}"
_LOG_IN = re.compile(r"\b(?:log|sign) ?(?:in|on)\b")


def _signs_in(raw: list[str]) -> bool:
    """Whether a tool whose name has these (lower-case) words signs in (and is no status
    check nor look-up)."""
    if "status" in raw or not _LOOKUP.isdisjoint(raw):
        return False
    return not _SIGN_IN.isdisjoint(raw) or bool(_LOG_IN.search(" ".join(raw)))


def _thing(match: re.Match[str]) -> str:
    """The thing a "set the current ..." phrase sets: its second word unless that is a
    function word ("the current working directory", "the current user to ...")."""
    second = match.group(2)
    return second if second and second.lower() not in STOPWORDS else match.group(1)


def group_members(docs: Sequence[ToolDoc]) -> dict[str, list[ToolDoc]]:
    """``{group: [its tools' documents, in catalogue order]}``."""
    members: dict[str, list[ToolDoc]] = {}
    for doc in docs:
        for group in doc.groups:
            members.setdefault(group, []).append(doc)
    return members


def prerequisites(docs: Sequence[ToolDoc], *, max_group: int = 40) -> dict[str, tuple[str, ...]]:
    """``{tool: (its prerequisites, ...)}`` for the tools of ``docs`` (see the module's
    rules); tools without any are absent."""
    members = group_members(docs)
    found: dict[str, dict[str, None]] = {}
    raws: dict[str, list[str]] = {}
    for tools in members.values():
        if not 2 <= len(tools) <= max_group:
            continue
        for d in tools:
            if d.name not in raws:
                raws[d.name] = [w.lower() for w in raw_words(split_identifier(d.name))]
        names = [frozenset(words(d.name)) for d in tools]
        spread = Counter(w for name in names for w in name)
        signs_in = [_signs_in(raws[d.name]) for d in tools]
        texts: list[str] = []
        lowered: list[str] = []
        params: dict[int, frozenset[str]] = {}
        for i, first in enumerate(tools):
            raw = raws[first.name]
            gives: list[str] = []
            if raw and raw[0] in _LOOKUP:
                gives = [w for w in words(" ".join(raw[1:])) if spread[w] <= 2]
            sets = [
                re.compile(_CURRENT.format(re.escape(_thing(m))), re.IGNORECASE)
                for m in _SETS_CURRENT.finditer(first.description)
            ]
            if not (signs_in[i] or gives or sets):
                continue
            if not texts:
                texts = [" ".join((d.description, *d.parameters)) for d in tools]
                lowered = [" ".join(d.parameters).lower() for d in tools]
            for j, then in enumerate(tools):
                if j == i:
                    continue
                if signs_in[i] and not signs_in[j]:
                    found.setdefault(then.name, {})[first.name] = None
                    continue
                takes = False
                for w in gives:
                    if w in names[j] or w[: max(3, len(w) - 1)] not in lowered[j]:
                        continue  # a stem, less its last letter, starts its words
                    if j not in params:
                        params[j] = frozenset(words(" ".join(then.parameters)))
                    if w in params[j]:
                        takes = True
                        break
                if takes or any(p.search(texts[j]) for p in sets):
                    found.setdefault(then.name, {})[first.name] = None
    return {name: tuple(before) for name, before in found.items()}


def with_prerequisites(
    key: dict[str, float],
    requires: Mapping[str, Sequence[str]],
    *,
    leaders: int,
    share: float,
) -> dict[str, str]:
    """Raise each prerequisite of the ``leaders`` best tools of ``key`` to ``share`` of
    that tool's score (in place); the raised tools and the tool that raised each."""
    raised: dict[str, str] = {}
    if share <= 0.0 or not requires:
        return raised
    top = sorted(key, key=lambda n: -key[n])[:leaders]
    for name in top:
        for before in requires.get(name, ()):
            score = share * key[name]
            if key.get(before, 0.0) < score:
                key[before] = score
                raised[before] = name
    return raised
