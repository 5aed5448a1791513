"""The retrieval channels of the team store (Postgres + pgvector).

The store answers the retrieval channels (:class:`PostgresChannels`); fusion, the
``context`` channel, recency, the tail drop and conflict flags are the shared
retrieval of every store (:mod:`bli_memory.core.memory.retrieval`), so a search of
the service ranks exactly as one of the embedded engine. Channels:

- ``vector``: the HNSW index (with the iterative scan set on every pooled connection)
  or an exact scan, as the planner decides; re-ordered by exact distance;
- ``keyword_all`` / ``keyword_any``: ``tsvector @@ tsquery`` over every / any query
  term, ranked by ``ts_rank`` (length normalised, the nearest Postgres has to bm25),
  both in one round trip.

Every query filters by space and owner first (design §7).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bli_memory.core.models import Memory
from bli_memory.core.team.postgres.base import (
    MEMORY_COLUMNS,
    SpaceView,
    row_to_memory,
    tsquery_text,
)

if TYPE_CHECKING:
    import psycopg

    from bli_memory.core.memory.ranking import RankingConfig

__all__ = ["LIVE", "PostgresChannels"]

#: The live rows of a view (``%(spaces)s``, ``%(owners)s``).
LIVE = "space = ANY(%(spaces)s) AND owner_id = ANY(%(owners)s) AND state = 'active'"


class PostgresChannels:
    """One search's channels over one connection and one person's view.

    Args:
        conn: An open connection (held for the whole search).
        view: The person's view of the searched tag.
        query_vector: The query embedding as a pgvector literal.
    """

    def __init__(self, conn: psycopg.Connection[Any], view: SpaceView, query_vector: str) -> None:
        self._conn = conn
        self._args: dict[str, Any] = {"spaces": list(view.spaces), "owners": list(view.readers),
                                      "q": query_vector}
        self._similarity: dict[int, float | None] = {}

    def channel_rankings(
        self, query: str, terms: Sequence[str], n: int, config: RankingConfig
    ) -> dict[str, list[int]]:
        """Seqs per channel, best first (see :class:`~bli_memory.core.memory.retrieval.ChannelSource`)."""
        args = {**self._args, "n": n}
        rankings: dict[str, list[int]] = {}
        if config.weight("vector") > 0:
            # The outer ORDER BY restores exact distance order whichever plan ran.
            rankings["vector"] = [
                int(r[0]) for r in self._conn.execute(
                    "SELECT seq FROM (SELECT seq, embedding <=> %(q)s::vector AS d FROM memories "
                    f"WHERE {LIVE} AND embedding IS NOT NULL "
                    "ORDER BY embedding <=> %(q)s::vector LIMIT %(n)s) AS knn ORDER BY d, seq DESC",
                    args,
                )
            ]
        channels: dict[str, str] = {}
        if config.weight("keyword_all") > 0 and (tsq := tsquery_text(terms, "&")):
            channels["keyword_all"] = tsq
        if config.weight("keyword_any") > 0 and len(terms) > 1 and (tsq := tsquery_text(terms, "|")):
            channels["keyword_any"] = tsq
        if channels:
            parts = [
                f"(SELECT %(c{i})s AS channel, seq, row_number() OVER "
                f"(ORDER BY ts_rank(terms, %(t{i})s::tsquery, 1) DESC, seq DESC) AS rank FROM memories "
                f"WHERE {LIVE} AND terms @@ %(t{i})s::tsquery "
                f"ORDER BY ts_rank(terms, %(t{i})s::tsquery, 1) DESC, seq DESC LIMIT %(n)s)"
                for i in range(len(channels))
            ]
            for i, (name, tsq) in enumerate(channels.items()):
                args[f"c{i}"], args[f"t{i}"] = name, tsq
            found: dict[str, list[tuple[int, int]]] = {name: [] for name in channels}
            for channel, seq, position in self._conn.execute(" UNION ALL ".join(parts), args):
                found[channel].append((int(position), int(seq)))
            for name, pairs in found.items():
                rankings[name] = [seq for _, seq in sorted(pairs)]
        return rankings

    def neighbours(self, parents: Sequence[int]) -> Mapping[int, Sequence[int]]:
        """The live rows just before and after each parent in its session (same space and owner).

        Parents come from the caller's view, so their neighbours are in it too. Uses the
        ``memories_session`` index (revision 0002).
        """
        if not parents:
            return {}
        side = (
            "(SELECT m.seq FROM memories AS m WHERE m.space = p.space AND m.owner_id = p.owner_id "
            "AND m.session_id = p.session_id AND m.state = 'active' AND m.seq {op} p.seq "
            "ORDER BY m.seq {order} LIMIT 1)"
        )
        out: dict[int, list[int]] = {}
        for parent, kid in self._conn.execute(
            "SELECT p.seq, n.seq FROM memories AS p CROSS JOIN LATERAL ("
            f"{side.format(op='<', order='DESC')} UNION ALL {side.format(op='>', order='ASC')}"
            ") AS n WHERE p.seq = ANY(%s) AND p.session_id IS NOT NULL",
            (list(parents),),
        ):
            out.setdefault(int(parent), []).append(int(kid))
        return out

    def live_rows(self, items: Sequence[int]) -> Mapping[int, Memory]:
        """Live, unexpired rows of the view by seq, with their cosine to the query."""
        rows: dict[int, Memory] = {}
        for r in self._conn.execute(
            f"SELECT {MEMORY_COLUMNS}, 1 - (embedding <=> %(q)s::vector) FROM memories "
            f"WHERE {LIVE} AND seq = ANY(%(seqs)s) AND (expires_at IS NULL OR expires_at > now())",
            {**self._args, "seqs": list(items)},
        ):
            rows[int(r[0])] = row_to_memory(r)
            self._similarity[int(r[0])] = None if r[-1] is None else float(r[-1])
        return rows

    def similarity(self, item: int) -> float | None:
        """Cosine read with the row (NaN for a zero vector, which ranking treats as none)."""
        return self._similarity.get(item)

    def pair_similarity(self, hits: Sequence[tuple[str, int]]) -> dict[tuple[str, str], float]:
        """Cosine similarity of every pair of hits, by pgvector."""
        if len(hits) < 2:
            return {}
        found = self._conn.execute(
            "SELECT a.id::text, b.id::text, 1 - (a.embedding <=> b.embedding) FROM memories AS a "
            "JOIN memories AS b ON a.id < b.id WHERE a.id = ANY(%(ids)s::uuid[]) "
            "AND b.id = ANY(%(ids)s::uuid[]) AND a.embedding IS NOT NULL AND b.embedding IS NOT NULL",
            {"ids": [memory_id for memory_id, _ in hits]},
        ).fetchall()
        return {(a, b): float(cos) for a, b, cos in found if cos is not None and not math.isnan(cos)}
