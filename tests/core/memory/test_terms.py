"""Keyword terms: identifiers stay whole, English words also match by stem."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from bli_memory.core.memory.terms import (
    FTS_TOKENIZE,
    fts_all_query,
    fts_any_query,
    index_text,
    query_terms,
    stem,
    terms,
)


def test_words_get_stems_identifiers_do_not() -> None:
    assert "research" in terms("She is researching adoption agencies")
    assert "carolin" in terms("Caroline's painting")  # possessive: the owner's stem
    got = terms("getUserName BLI-3580 eu-west-1 C++")
    assert got == ["getusername", "get", "user", "name", "bli-3580", "bli", "3580", "eu-west-1", "eu",
                   "west", "1", "c++", "c"]
    assert stem("bli-3580") == "bli-3580" and stem("api") == "api"


def _search(docs: list[str], query: str, *, every: bool) -> list[int]:
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.execute(f'CREATE VIRTUAL TABLE f USING fts5 (terms, tokenize = "{FTS_TOKENIZE}")')
        conn.executemany("INSERT INTO f (rowid, terms) VALUES (?, ?)",
                         [(i, index_text(d)) for i, d in enumerate(docs)])
        expr = (fts_all_query if every else fts_any_query)(query_terms(query))
        return [r[0] for r in conn.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank", (expr,))]


def test_inflections_match_and_exact_form_ranks_first() -> None:
    docs = ["Gina researched the fashion market.", "Jon does research.", "Nothing related here."]
    assert set(_search(docs, "who was researching?", every=False)) == {0, 1}
    # The shorter row would win on the stem alone; the exact form lifts the other.
    assert _search(docs, "research", every=False)[0] == 1
    assert _search(docs, "researched", every=False) == [0, 1]
    assert _search(docs, "Gina's market research", every=True) == [0]


def test_identifier_queries_stay_exact() -> None:
    docs = ["Run `make release-billing` after BLI-3580.", "Release the billing service by hand.",
            "BLI-3581 is unrelated."]
    assert _search(docs, "BLI-3580", every=True) == [0]
    assert _search(docs, "release-billing", every=True) == [0]


def test_stemming_from_many_threads_at_once_gives_every_word_its_stem() -> None:
    import random
    import string
    import threading

    import snowballstemmer

    from bli_memory.core.memory.terms import stem

    rng = random.Random(7)
    words = list({"".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 14)))
                  for _ in range(40_000)})
    errors: list[BaseException] = []

    def work(part: list[str]) -> None:
        for w in part:
            try:
                stem(w)
            except Exception as exc:  # noqa: BLE001 - the stemmer's own IndexError when shared
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(words[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reference = snowballstemmer.stemmer("english")
    assert errors == []
    assert [w for w in words if stem(w) != reference.stemWord(w)] == []  # and no wrong stem was kept
