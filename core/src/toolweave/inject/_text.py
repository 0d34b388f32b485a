"""Words of tool documents and requests, as the lexical classifiers compare them:
identifiers split (``readFile``, ``read_file`` → ``read file``), lower case, stop words
dropped, English stems (Snowball, through PyStemmer when installed)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

__all__ = [
    "STOPWORDS",
    "VALUE_PREFIX",
    "grams",
    "parameter_types",
    "raw_words",
    "split_identifier",
    "stem",
    "value_types",
    "words",
]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TOKEN = re.compile(r"[A-Za-z][a-z0-9]*(?:(?<=[A-Z])[A-Z](?![a-z])[a-z0-9]*)*|[0-9]+")
"""A word of ``split_identifier(text)`` in one pass: a letter, then lower-case letters and
digits, or capitals that neither follow a lower-case letter or digit nor start a
capitalised word (``HTTPServer`` → ``HTTP``, ``Server``); or a run of digits. The same
words as splitting identifiers first and then taking ``[A-Za-z][A-Za-z0-9]*|[0-9]+``
(checked by the tests), without the second pass."""

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
    uncached = Stemmer.Stemmer("english")
    uncached.maxCacheSize = 0  # long words: PyStemmer's cache would keep them whole

    def stem_word(word: str) -> str:
        if len(word) > CACHED_WORD:
            return str(uncached.stemWord(word))
        return str(fast.stemWord(word))

    return stem_word


def stem(word: str) -> str:
    """The English Snowball stem of a lower-case word (the word itself without a stemmer)."""
    return _stemmer()(word)


CACHED_WORD = 40
"""The longest word whose stem and n-grams are cached (real words are shorter; a longer
one, such as a hostile message's run of 8,000 letters, is worked out each time, so no
cache holds more than a few characters per entry)."""

_normal: dict[str, str] = {}
"""Each raw word's stem ("" for a stop word), bounded by ``_NORMAL_MAX`` words of at
most :data:`CACHED_WORD` characters."""
_NORMAL_MAX = 200_000


def _normalise(raw: str) -> str:
    low = raw.lower()
    if low in STOPWORDS or (len(low) == 1 and not low.isdigit()):
        return ""
    return _stemmer()(low)


def raw_words(text: str) -> list[str]:
    """The words of ``text`` before stemming (identifiers split, case kept)."""
    return _TOKEN.findall(text)


def words(text: str) -> list[str]:
    """The stemmed, lower-case content words of ``text``, in order (repeats kept)."""
    raws = _TOKEN.findall(text)
    normal = _normal
    try:
        return [w for w in map(normal.__getitem__, raws) if w]
    except KeyError:
        pass
    out: list[str] = []
    for raw in raws:
        word = normal.get(raw)
        if word is None:
            word = _normalise(raw)
            if len(normal) < _NORMAL_MAX and len(raw) <= CACHED_WORD:
                normal[raw] = word
        if word:
            out.append(word)
    return out


_grams: dict[str, tuple[str, ...]] = {}
"""Each raw word's character n-grams (``()`` for a stop word), bounded by ``_NORMAL_MAX``
words of at most :data:`CACHED_WORD` characters and ``_GRAMS_MAX`` n-grams in all."""
GRAM = 4
_GRAMS_MAX = 1_000_000
_grams_held = 0


def _word_grams(raw: str) -> tuple[str, ...]:
    low = raw.lower()
    if low in STOPWORDS or (len(low) == 1 and not low.isdigit()):
        return ()
    padded = f"#{low}#"
    if len(padded) <= GRAM:
        return (padded,)
    return tuple(padded[i : i + GRAM] for i in range(len(padded) - GRAM + 1))


def grams(text: str) -> list[str]:
    """The character 4-grams of the content words of ``text`` (lower case, word edges
    marked with ``#``: ``#rea``, ``read``, ``ead#``): matches across inflections the
    stemmer keeps apart (``multiply``/``multiplication``), typos and related languages
    (``stok``/``stock``)."""
    global _grams_held
    cache = _grams
    out: list[str] = []
    for raw in _TOKEN.findall(text):
        found = cache.get(raw)
        if found is None:
            found = _word_grams(raw)
            if (
                len(raw) <= CACHED_WORD
                and len(cache) < _NORMAL_MAX
                and _grams_held + len(found) <= _GRAMS_MAX
            ):
                cache[raw] = found
                _grams_held += len(found)
        out.extend(found)
    return out


_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_STATED: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "date",
        re.compile(
            r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b"
            rf"|\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
            rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b"
            rf"|\b(?:tomorrow|yesterday|tonight|{_WEEKDAY}"
            rf"|(?:next|this|last|coming|upcoming)\s+(?:week|month|year|weekend|{_WEEKDAY}))\b",
            re.IGNORECASE,
        ),
    ),
    ("time", re.compile(r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?[ap]\.?m\b", re.IGNORECASE)),
    # Linear forms: a local part (or a file's name, an amount) is matched once, from
    # the start of its run of characters, not again from every character of the run
    # (``"a." * 4000`` took a second). Each finds a match in the same texts as the plain
    # form: ``\b[\w.+-]+@...`` matches where the run before an ``@`` holds a word
    # character; ``\b[\w-]+\.(?:txt|...)`` likewise before a dot; ``\b\d[\d,.]*``
    # where the run of digits, commas and dots holds a digit at a word start.
    ("email", re.compile(r"(?<![\w.+-])[.+-]*+\w[\w.+-]*+@[\w-]+\.\w[\w.]*\b")),
    ("url", re.compile(r"\bhttps?://\S+|\bwww\.\S+", re.IGNORECASE)),
    (
        "path",
        re.compile(
            r"(?:\b[A-Za-z]:)?(?:[\\/][\w.-]+){2,}"
            r"|(?<![\w-])-*+\w[\w-]*+\.(?:txt|csv|json|md|pdf|py|log|xml|ya?ml|docx?|xlsx?)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "money",
        re.compile(
            r"[$€£¥]\s?\d"
            r"|(?<![\d,.])(?=[\d,.]*?\b\d)[\d,.]++\s?(?:dollars?|euros?|usd|eur|gbp)\b",
            re.IGNORECASE,
        ),
    ),
)
"""What a request states, by kind: dates (ISO or written, weekdays, "tomorrow"), times,
e-mail addresses, URLs, file paths, amounts of money."""

_TAKES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("date", ("date", "dates", "day", "birthday", "yyyy")),
    ("time", ("time", "hour", "hours", "hh")),
    ("email", ("email", "mail")),
    ("url", ("url", "urls", "link", "links", "endpoint", "website")),
    ("path", ("path", "file", "filename", "directory", "directories", "folder")),
    ("money", ("price", "cost", "amount", "budget", "currency", "fare", "salary", "payment")),
)
"""What a parameter takes, by the same kinds: words of its name and description."""


@lru_cache(maxsize=1)
def _takes() -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((kind, frozenset(stem(w) for w in marks)) for kind, marks in _TAKES)


VALUE_PREFIX = "__value_"


def value_types(text: str) -> list[str]:
    """The kinds of values ``text`` states (a date, a time, an e-mail address, a URL, a
    file path, an amount of money) as terms (``__value_date``), each once: a request's
    arguments, matched with the parameters that take them (:func:`parameter_types`)."""
    found: list[str] = []
    for kind, pattern in _STATED:
        if pattern.search(text):
            found.append(VALUE_PREFIX + kind)
            if kind == "url":  # a URL's path is no file path
                text = pattern.sub(" ", text)
    return found


def parameter_types(terms: Iterable[str]) -> list[str]:
    """The kinds of values that parameters take, as terms, each once, from their words
    (``words("start_date: ... 'YYYY-MM-DD'")`` → ``__value_date``)."""
    present = set(terms)
    return [VALUE_PREFIX + kind for kind, marks in _takes() if not marks.isdisjoint(present)]
