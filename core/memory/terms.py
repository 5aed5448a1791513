"""Lexical terms for the keyword index: code identifiers match as written.

SQLite FTS5's ``unicode61`` tokenizer splits on every punctuation character, so
``eu-west-1``, ``C++``, ``GB/s`` and ``memory:safe`` would lose their identity and
``snake_case``/``camelCase`` names would match only as loose parts. Instead of asking
FTS5 to tokenize, this module turns text into *terms* itself and hands FTS5 a string
in which each term is one token:

1. A raw token is a run of word characters joined by the connectors ``. - + / # : @ '``
   with ``+``/``#`` also allowed at the end (``C++``, ``C#``). Sentence punctuation at
   the ends is dropped (``done.`` -> ``done``).
2. Each raw token is lowercased and emitted whole; if it has connectors, its parts are
   emitted too; ``camelCase``/``PascalCase``/``HTTPServer`` boundaries split into parts;
   ``snake_case`` splits at ``_``. So ``getUserName`` finds ``get_user_name`` and
   ``user``, and ``BLI-3580`` finds exactly ``BLI-3580`` (and, weaker, ``bli``/``3580``).
3. A plain English word (letters only, not an identifier with camelCase parts) also
   emits its Snowball English stem when that differs (``researching`` -> ``research``,
   ``paintings`` -> ``paint``); a possessive emits the stem of its owner
   (``Caroline's`` -> ``carolin``). Identifiers are never stemmed.
4. Every character that is not alphanumeric is written as ``_xx`` (its hex code
   point), so the FTS5 tokenizer, told that ``_`` is a token character, sees one
   token per term and nothing a user typed can ever be parsed as FTS5 syntax.

Queries go through the same function; each query term becomes a double-quoted FTS5
string (``"..."`` with ``"`` doubled), which FTS5 never interprets as an operator. A
query word matches its exact form or its stem (``("researched" OR "research")``), so
rows indexed before stems existed still match by exact form, and an exact-form match
scores above a stem-only one (both phrases count in bm25).

Stemming is the classic recall step of lexical retrieval (Porter 1980; Snowball
English, Porter 2001); on LoCoMo it lifts the keyword channel's recall_any@5 from
0.57 to 0.62 (``docs/benchmarks.md``). Standard library plus the pure-Python
``snowballstemmer``, imported on first use.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = [
    "FTS_TOKENIZE",
    "STOPWORDS",
    "encode_term",
    "fts_all_query",
    "fts_any_query",
    "index_text",
    "query_forms",
    "query_terms",
    "raw_tokens",
    "stem",
    "terms",
]

#: FTS5 tokenizer declaration matching :func:`encode_term` (``_`` is a token character).
FTS_TOKENIZE = "unicode61 remove_diacritics 2 tokenchars '_'"

_CONNECTORS = ".-+/#:@'"
_RAW = re.compile(r"\w(?:[\w.\-+/#:@']*[\w+#])?", re.UNICODE)
_SPLIT = re.compile(r"[^\w]+|_+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

#: English function words dropped from queries and from the "any term" channel. A
#: small list (the classic SMART/Snowball core) rather than a large one: in code talk
#: words like "make", "test" or "run" carry meaning and must stay searchable.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she
    she'd she'll she's should shouldn't so some such than that that's the their theirs them
    themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's with won't would wouldn't
    you you'd you'll you're you've your yours yourself yourselves did does also just like get
    got""".split()
)


def raw_tokens(text: str) -> list[str]:
    """Split text into raw tokens (case kept), see the module docstring, rule 1."""
    return _RAW.findall(text)


def _parts(token: str) -> list[str]:
    parts: list[str] = []
    for piece in _SPLIT.split(token):
        if not piece:
            continue
        # camelCase boundaries only exist in ASCII identifiers; other scripts stay whole.
        sub = _CAMEL.findall(piece) if piece.isascii() else []
        if len(sub) > 1:
            parts.extend(sub)
        elif piece != token:
            parts.append(piece)
    return [p.lower() for p in parts if p]


_stemmer: Any = None
_STEM_LOCK = threading.Lock()
_POSSESSIVE = ("'s", "\u2019s")


def stem(word: str) -> str:
    """Snowball English stem of a lowercase ASCII word of 4+ letters; anything else as is.

    Args:
        word: One lowercase term.

    Returns:
        The stem (``"researching"`` -> ``"research"``), or ``word`` unchanged when it
        is short, not purely ASCII letters (identifiers, numbers, other scripts).
    """
    if len(word) < 4 or not word.isascii() or not word.isalpha():
        return word
    return _snowball(word)


@lru_cache(maxsize=1 << 16)
def _snowball(word: str) -> str:
    """The Snowball stem, kept: a project's vocabulary repeats, and the pure-Python stemmer
    cost about 8 ms per 1.5 KB chunk before (``docs/benchmarks.md``, documents at scale).

    The stemmer keeps its word in its own fields while it works, so two threads stemming at
    once (the service's workers, the daemon's) corrupt each other (``IndexError``, or a wrong
    stem): one thread at a time, under :data:`_STEM_LOCK`.
    """
    global _stemmer
    with _STEM_LOCK:
        if _stemmer is None:
            import snowballstemmer

            _stemmer = snowballstemmer.stemmer("english")
        return str(_stemmer.stemWord(word))


def _word_base(whole: str) -> str | None:
    """The plain word a lowercase token stands for (possessive dropped), or None."""
    for suffix in _POSSESSIVE:
        if whole.endswith(suffix):
            whole = whole[: -len(suffix)]
            break
    return whole if whole.isalpha() else None


def terms(text: str) -> list[str]:
    """Lowercased terms of ``text``: every whole token followed by its parts and stem.

    Args:
        text: Any string (prose, code, paths).

    Returns:
        Terms in text order, duplicates kept (term frequency matters to bm25).
    """
    out: list[str] = []
    for token in raw_tokens(text):
        whole = token.lower()
        out.append(whole)
        parts = _parts(token)
        for part in parts:
            if part != whole:
                out.append(part)
        base = _word_base(whole)
        # Plain words and possessives only: a camelCase identifier has parts and no stem.
        if base is not None and (not parts or base != whole):
            s = stem(base)
            if s != whole and s not in parts:
                out.append(s)
    return out


def encode_term(term: str) -> str:
    """Encode a term as one FTS5 token: non-alphanumerics become ``_xx`` hex codes."""
    return "".join(ch if ch.isalnum() else f"_{ord(ch):x}_" for ch in term)


def index_text(text: str) -> str:
    """The string stored in the FTS5 column for ``text`` (encoded terms, space-joined)."""
    return " ".join(encode_term(t) for t in terms(text))


def query_terms(query: str) -> list[str]:
    """Distinct whole-token query terms, stopwords dropped, in query order.

    Only whole tokens are used (their parts are implied: a document containing
    ``eu-west-1`` also indexes ``eu``, ``west``, ``1``). If every token is a stopword
    the stopwords are kept, so "what is it" still searches something.
    """
    seen: dict[str, None] = {}
    for token in raw_tokens(query):
        seen.setdefault(token.lower(), None)
    tokens = list(seen)
    content = [t for t in tokens if t not in STOPWORDS and t.replace("'", "") not in STOPWORDS]
    return content or tokens


def query_forms(terms_: Iterable[str]) -> list[tuple[str, ...]]:
    """Encoded index tokens each query term matches: its exact form, then its stem if different.

    Args:
        terms_: Query terms (:func:`query_terms`).

    Returns:
        One tuple per term, e.g. ``[("researched", "research"), ("bli_2d_3580",)]``; the
        keyword side index (:mod:`bli_memory.core.embedded.keyword_index`) queries these, and the
        FTS5 expressions below are built from them.
    """
    out: list[tuple[str, ...]] = []
    for term in terms_:
        base = _word_base(term)
        s = stem(base) if base is not None else term
        out.append((encode_term(term),) if s == term else (encode_term(term), encode_term(s)))
    return out


def _quote(encoded: str) -> str:
    return '"' + encoded.replace('"', '""') + '"'


def _forms(forms: tuple[str, ...]) -> str:
    """One query term as an FTS5 expression: its exact form, or its stem too."""
    if len(forms) == 1:
        return _quote(forms[0])
    return "(" + " OR ".join(_quote(f) for f in forms) + ")"


def fts_all_query(terms_: Iterable[str]) -> str | None:
    """FTS5 MATCH expression requiring every term (exact form or stem), or None if empty."""
    quoted = [_forms(f) for f in query_forms(terms_)]
    return " AND ".join(quoted) if quoted else None


def fts_any_query(terms_: Iterable[str]) -> str | None:
    """FTS5 MATCH expression matching any term (exact form or stem), or None if empty."""
    quoted = [_forms(f) for f in query_forms(terms_)]
    return " OR ".join(quoted) if quoted else None
