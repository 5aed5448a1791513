"""The FTS5 keyword index: bm25 search, term presence and counts, indexed terms.
"""

from __future__ import annotations

from collections.abc import Sequence

from bli_memory.core.embedded.store_base import StoreBase

__all__ = [
    "KeywordReads",
]


class KeywordReads(StoreBase):
    """Reads of the FTS5 keyword index."""

    def keyword_search(
        self, spaces: Sequence[str], match: str, *, limit: int
    ) -> list[tuple[int, float]]:
        """Live rows matching an FTS5 expression built by :mod:`bli_memory.core.memory.terms`.

        Returns:
            ``[(seq, bm25), ...]`` best first (lower bm25 is better in SQLite).
        """
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            return [
                (int(r[0]), float(r[1]))
                for r in conn.execute(
                    "SELECT f.rowid, bm25(memory_fts) AS rank FROM memory_fts AS f "
                    "JOIN memories AS m ON m.seq = f.rowid "
                    f"WHERE memory_fts MATCH ? AND m.space IN ({marks}) AND m.state = 'active' "
                    "ORDER BY rank LIMIT ?",
                    (match, *spaces, int(limit)),
                )
            ]

    def match_count(self, spaces: Sequence[str], match: str) -> int:
        """How many live rows of these spaces match the FTS5 expression (document frequency)."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            # The match runs once, as a subquery: joined, SQLite may probe the FTS5 query
            # once per row of the space (700 ms for an absent term in 700 rows).
            return int(conn.execute(
                "SELECT count(*) FROM memories WHERE seq IN (SELECT rowid FROM memory_fts WHERE memory_fts "
                f"MATCH ?) AND space IN ({marks}) AND state = 'active'",
                (match, *spaces),
            ).fetchone()[0])

    def keyword_terms(self, seqs: Sequence[int]) -> list[tuple[int, str]]:
        """``[(seq, terms), ...]``: the keyword-index term strings of these rows.

        Read in chunks so a side-index build of a large space never holds the store
        for long (:mod:`bli_memory.core.embedded.side_indexes`). Seqs without an entry are skipped.
        """
        out: list[tuple[int, str]] = []
        chunk = 5000
        for start in range(0, len(seqs), chunk):
            part = [int(s) for s in seqs[start : start + chunk]]
            marks = ",".join("?" * len(part))
            with self._read() as conn:
                out.extend(
                    (int(r[0]), str(r[1]))
                    for r in conn.execute(
                        f"SELECT rowid, terms FROM memory_fts WHERE rowid IN ({marks})", part
                    )
                )
        return out
