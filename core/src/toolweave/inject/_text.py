"""Words of tool documents and requests, as the lexical classifiers compare them:
identifiers split (``readFile``, ``read_file`` → ``read file``), lower case, stop words
dropped, English stems (Snowball, through PyStemmer when installed)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

__all__ = ["STOPWORDS", "split_identifier", "stem", "words"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "else",
        "few",
        "for",
        "from",
        "further",
        "get",
        "gets",
        "given",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "might",
        "more",
        "most",
        "must",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "one",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "please",
        "same",
        "shall",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "very",
        "via",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "want",
        "wants",
        "need",
        "needs",
        "like",
    ]
)
"""English function words and request filler ("please", "want", "need"), dropped from
documents and queries alike. Negations are dropped too: "not" carries no topic."""


def split_identifier(text: str) -> str:
    """``readFile`` and ``read_file`` → ``read File`` / ``read file`` (other text unchanged)."""
    return _CAMEL.sub(" ", text).replace("_", " ")


def _identity(word: str) -> str:
    return word


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    try:
        import Stemmer  # PyStemmer: Snowball in C
    except ImportError:  # pragma: no cover - the [inject] extra installs it
        try:
            import snowballstemmer  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            return _identity
        pure = snowballstemmer.stemmer("english")
        return lambda word: str(pure.stemWord(word))
    fast = Stemmer.Stemmer("english")
    fast.maxCacheSize = 100_000
    return lambda word: str(fast.stemWord(word))


def stem(word: str) -> str:
    """The English Snowball stem of a lower-case word (the word itself without a stemmer)."""
    return _stemmer()(word)


_normal: dict[str, str] = {}
"""Each raw word's stem ("" for a stop word), bounded by ``_NORMAL_MAX``."""
_NORMAL_MAX = 200_000


def words(text: str) -> list[str]:
    """The stemmed, lower-case content words of ``text``, in order (repeats kept)."""
    out: list[str] = []
    normal = _normal
    for raw in _WORD.findall(split_identifier(text)):
        word = normal.get(raw)
        if word is None:
            low = raw.lower()
            stop = low in STOPWORDS or (len(low) == 1 and not low.isdigit())
            word = "" if stop else _stemmer()(low)
            if len(normal) < _NORMAL_MAX:
                normal[raw] = word
        if word:
            out.append(word)
    return out
