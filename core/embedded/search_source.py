"""The embedded store's retrieval channels for one search (a :class:`ChannelSource`).

Channels, as :mod:`bli_memory.core.memory.retrieval` asks for them:

- ``vector``: exact cosine similarity of the query embedding with every live vector
  of the spaces (numpy matrix product over the cached float32 matrix), or the HNSW
  side index in a large space of a long-lived process;
- ``keyword_all`` / ``keyword_any``: FTS5 bm25 over every / any content term of the
  query, or the keyword side index
  (:mod:`bli_memory.core.embedded.side_indexes`; the table stays the source of truth).

Every hit's similarity is the exact cosine with its cached vector (the stored
vectors are unit length, so the dot product is the cosine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bli_memory.core.memory.terms import fts_all_query, fts_any_query, query_forms

if TYPE_CHECKING:
    from bli_memory.core.embedded.side_indexes import SideIndexes
    from bli_memory.core.embedded.store import SQLiteStore, VectorSet
    from bli_memory.core.memory.ranking import RankingConfig
    from bli_memory.core.models import Memory

__all__ = ["EmbeddedChannels", "pair_similarity"]


class EmbeddedChannels:
    """One search's channels over a :class:`SQLiteStore` (not reused across searches).

    Args:
        store: The open store.
        spaces: The canonical space and its aliases.
        side: The side indexes when on (long-lived processes), else None.
        embed: ``(text) -> unit vector`` (the engine's embedder); called at most once,
            and only when the spaces hold vectors.
    """

    def __init__(self, store: SQLiteStore, spaces: tuple[str, ...], side: SideIndexes | None,
                 embed: Callable[[str], Any]) -> None:
        self._store = store
        self._spaces = spaces
        self._side = side
        self._embed = embed
        self._vs: VectorSet = store.vectors(spaces)
        self._qv: Any = None
        self._sims: Any = None

    def channel_rankings(
        self, query: str, terms: Sequence[str], n: int, config: RankingConfig
    ) -> dict[str, list[int]]:
        """Seqs per channel, best first (see :class:`~bli_memory.core.memory.retrieval.ChannelSource`)."""
        import numpy as np

        rankings: dict[str, list[int]] = {}
        vs = self._vs
        if vs.size:  # similarities are reported even when the vector channel is off
            self._qv = self._embed(query)
            side = self._side
            approx = None
            if side is not None and config.weight("vector") > 0:
                approx = side.vector_query(self._spaces, vs, self._qv, n)
            if approx is not None:
                rankings["vector"] = approx
            else:
                sims = self._sims = vs.similarities(self._qv)
                if config.weight("vector") > 0:
                    k = min(n, vs.size)
                    top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
                    top = top[np.argsort(-sims[top], kind="stable")]
                    rankings["vector"] = [int(vs.seqs[i]) for i in top]
        words = list(terms)
        if config.weight("keyword_all") > 0 and words:
            rankings["keyword_all"] = self._keyword(words, n, every=True)
        if config.weight("keyword_any") > 0 and len(words) > 1:
            rankings["keyword_any"] = self._keyword(words, n, every=False)
        return rankings

    def _keyword(self, terms: list[str], n: int, *, every: bool) -> list[int]:
        """The ``n`` best rows by bm25 for all (``every``) or any of ``terms``: side index or FTS5."""
        side = self._side
        if side is not None:
            found = side.keyword_query(self._spaces, self._vs, query_forms(terms), n, every=every)
            if found is not None:
                return list(found)
        expr = fts_all_query(terms) if every else fts_any_query(terms)
        return [s for s, _ in self._store.keyword_search(self._spaces, expr, limit=n)] if expr else []

    def neighbours(self, parents: Sequence[int]) -> Mapping[int, Sequence[int]]:
        """Session neighbours of ``parents`` within the spaces."""
        return self._store.neighbours(parents, self._spaces)

    def live_rows(self, items: Sequence[int]) -> Mapping[int, Memory]:
        """Live, unexpired rows by seq."""
        return self._store.rows_by_seq(items)

    def similarity(self, item: int) -> float | None:
        """Exact cosine of the query with the row's cached vector (None without one)."""
        vs = self._vs
        if self._qv is None:
            return None
        pos = vs.position(item)
        if pos is None:
            return None
        return float(self._sims[pos] if self._sims is not None else vs.matrix[pos] @ self._qv)

    def pair_similarity(self, hits: Sequence[tuple[str, int]]) -> dict[tuple[str, str], float]:
        """Cosine similarity of every pair of hits from the cached vectors."""
        return pair_similarity(hits, self._vs)


def pair_similarity(hits: Sequence[tuple[str, int]], vs: VectorSet) -> dict[tuple[str, str], float]:
    """Cosine similarity of every pair of hits (``(id, seq)``) with a vector in ``vs``.

    The stored vectors are unit length, so the dot product is the cosine.
    """
    if len(hits) < 2 or not vs.size:
        return {}
    ids, rows = [], []
    for memory_id, seq in hits:
        pos = vs.position(seq)
        if pos is not None:
            ids.append(memory_id)
            rows.append(pos)
    if len(rows) < 2:
        return {}
    matrix = vs.matrix[rows]
    gram = matrix @ matrix.T
    return {(ids[i], ids[j]): float(gram[i, j])
            for i in range(len(ids)) for j in range(i + 1, len(ids))}
