"""Search of one documents index on the team store
(:meth:`~bli_memory.core.team.postgres.documents.PostgresDocuments.search`).

The memories' channels over the index's rows: pgvector's cosine (exact distance order
restored over the approximate index's candidates) and ``tsvector`` keyword matches requiring
every query term, then any, fused by :func:`bli_memory.core.documents.search.fused_hits`, the
embedded index's own fusion, so both stores rank alike.

Unlike the embedded index, the any-term channel here keeps the terms most chunks hold
(:data:`~bli_memory.core.documents.search.COMMON_SHARE` is not applied): SQLite's
``fts5vocab`` reads a term's chunk count from the index's own statistics, while Postgres keeps
none per term and would count by running a query about as costly as the channel itself.
``ts_rank`` gives such a term little weight, so the order changes little; a query with a very
common term costs more here than on the embedded index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bli_memory.core.memory.documents import DocumentChunk, DocumentHit
from bli_memory.core.team.postgres.base import PgCore, tsquery_text, vector_literal

if TYPE_CHECKING:
    import psycopg

__all__ = ["CURRENT", "search_index"]

#: A chunk counts only when it is of the file's recorded version (or is a commit message).
CURRENT = ("(c.kind = 'commit' OR EXISTS (SELECT 1 FROM memory_doc_files f WHERE f.index_id = c.index_id "
           "AND f.path = c.path AND f.sha256 = c.file_sha256))")


def search_index(pg: PgCore, conn: psycopg.Connection[Any], index_id: int, q: str, *, space: str, limit: int,
                 kinds: Sequence[str]) -> list[DocumentHit]:
    """The best ``limit`` chunks of ``kinds`` of the index ``index_id`` for the query text ``q``
    (already :func:`~bli_memory.core.memory.retrieval.query_text`), best first, each linked
    to its file and lines (or commit) on the repository's web host."""
    from bli_memory.core.documents.search import CANDIDATES, fused_hits, link_for
    from bli_memory.core.memory.retrieval import MAX_QUERY_TERMS
    from bli_memory.core.memory.terms import query_terms

    web, revision = conn.execute("SELECT web, revision FROM memory_doc_indexes WHERE id = %s",
                                 (index_id,)).fetchone() or (None, None)
    args: dict[str, Any] = {"i": index_id, "kinds": list(kinds), "n": CANDIDATES,
                            "q": vector_literal(pg._embed_one(q))}
    where = f"c.index_id = %(i)s AND c.kind = ANY(%(kinds)s) AND {CURRENT}"
    # The outer ORDER BY restores exact distance order whichever plan ran (as memories).
    rankings: dict[str, list[int]] = {"vector": [int(r[0]) for r in conn.execute(
        "SELECT seq FROM (SELECT c.seq, c.embedding <=> %(q)s::vector AS d FROM memory_doc_chunks c "
        f"WHERE {where} ORDER BY c.embedding <=> %(q)s::vector LIMIT %(n)s) AS knn ORDER BY d, seq",
        args)]}
    terms = query_terms(q)[:MAX_QUERY_TERMS]
    for channel, op in (("keyword_all", "&"), ("keyword_any", "|")):
        tsq = tsquery_text(terms, op)
        if tsq:
            rankings[channel] = [int(r[0]) for r in conn.execute(
                f"SELECT c.seq FROM memory_doc_chunks c WHERE {where} AND c.terms @@ %(t)s::tsquery "
                "ORDER BY ts_rank(c.terms, %(t)s::tsquery, 1) DESC, c.seq LIMIT %(n)s",
                {**args, "t": tsq})]

    def found(best: Sequence[int]) -> dict[int, tuple[DocumentChunk, float]]:
        return {int(r[0]): (DocumentChunk(int(r[0]), space, r[1], r[2], r[3], r[4], tuple(r[5] or ()),
                                          r[6], r[7], r[8]), float(r[9])) for r in conn.execute(
            "SELECT seq, kind, path, sha, date, heading, start_line, end_line, text, "
            "1 - (embedding <=> %(q)s::vector) FROM memory_doc_chunks WHERE index_id = %(i)s "
            "AND seq = ANY(%(seqs)s)", {**args, "seqs": list(best)})}

    return fused_hits(rankings, found, limit=limit, ranking=pg.ranking,
                      links=lambda c: link_for(c, root=None, web=web, revision=revision))
