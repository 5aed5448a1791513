"""Search a space's documents and commit messages: by meaning and by keyword at once.

The channels are the memory search's (:mod:`bli_memory.core.memory.retrieval`): exact cosine
over the chunks' vectors, and FTS5 over their terms requiring every query term, then any;
fused by the same weighted reciprocal-rank fusion
(:func:`~bli_memory.core.memory.ranking.reciprocal_rank_fusion`, in :func:`fused_hits`, which
the team store's document search calls too). A hit carries its true
cosine similarity (every chunk has a vector) and the fused score, which orders hits and is
never shown as a similarity. Each hit links to where it is: the file and its lines on the
repository's web host when the remote is a known one, else the file on disk; a commit to its
page on the host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bli_memory.core.documents.index_store import DocumentIndex
from bli_memory.core.memory.documents import DocumentChunk, DocumentHit
from bli_memory.core.memory.ranking import RankingConfig, reciprocal_rank_fusion
from bli_memory.core.memory.retrieval import query_text
from bli_memory.core.memory.terms import fts_all_query, fts_any_query, query_forms, query_terms

__all__ = ["CANDIDATES", "COMMON_MIN", "COMMON_SHARE", "fused_hits", "link_for", "search_documents"]

#: Candidates each channel gives the fusion.
CANDIDATES = 50

#: Share of the index's chunks above which a term is too common for the any-term channel
#: (see :func:`_telling`), and the count under which no term is too common (a small index).
COMMON_SHARE = 0.2
COMMON_MIN = 200


def link_for(chunk: DocumentChunk, *, root: str | None, web: str | None, revision: str | None) -> str | None:
    """Where a chunk opens.

    Args:
        root: The repository's folder on this machine.
        web: The repository's web address (``https://github.com/org/repo``), when known.
        revision: The commit the documents were read at, for a stable web link.
    """
    if chunk.kind == "commit":
        if web and chunk.sha:
            return f"{web}/commit/{chunk.sha}"
        return None
    lines = f"#L{chunk.start}-L{chunk.end}" if chunk.start else ""
    if web:
        marker = "/-/blob/" if "gitlab" in web else "/blob/"
        return f"{web}{marker}{revision or 'HEAD'}/{chunk.path}{lines}"
    if root:
        return Path(root, chunk.path).as_uri() + lines
    return None


def _telling(index: DocumentIndex, terms: list[str]) -> list[str]:
    """The query terms the any-term channel searches: those held by at most
    :data:`COMMON_SHARE` of the chunks. A term in a quarter of a project's documents ("model"
    in Django's) tells no chunk from another, adds next to nothing to a chunk's bm25 score, and
    costs a score for every chunk holding it: on 13k chunks the any-term query took 10-19 ms
    with such terms and under 8 without (``docs/benchmarks.md``, documents at scale). The
    every-term channel still requires them all."""
    forms = query_forms(terms)
    counts, total = index.term_chunks(sorted({f for fs in forms for f in fs}))
    bar = max(COMMON_MIN, COMMON_SHARE * total)
    return [t for t, fs in zip(terms, forms, strict=True) if max(counts.get(f, 0) for f in fs) <= bar]


def fused_hits(rankings: Mapping[str, Sequence[int]], found: Callable[[Sequence[int]], Mapping[int, Any]], *,
               limit: int, ranking: RankingConfig | None = None,
               links: Callable[[DocumentChunk], str | None] | None = None) -> list[DocumentHit]:
    """The best ``limit`` hits of the channels' ``rankings`` (``{channel: seqs, best first}``),
    fused by :func:`~bli_memory.core.memory.ranking.reciprocal_rank_fusion`: the one fusion
    of every store's document search (this index's, and the team store's,
    :mod:`bli_memory.core.team.postgres.documents`).

    Args:
        rankings: Seqs per channel (``vector``, ``keyword_all``, ``keyword_any``), best first.
        found: ``(seqs) -> {seq: (chunk, cosine similarity to the query)}``; a seq it does not
            answer (gone since the channels ran) is left out.
        limit: Most hits.
        ranking: The fusion weights (default :class:`RankingConfig`).
        links: ``(chunk) -> link`` (None: no links).

    Returns:
        Hits best first (fused score, then seq); ties keep the older chunk first.
    """
    fused = reciprocal_rank_fusion(rankings, ranking or RankingConfig())
    best = sorted(fused, key=lambda s: (-fused[s], s))[:limit]
    rows = found(best)
    return [DocumentHit(chunk=rows[s][0], score=fused[s], similarity=round(float(rows[s][1]), 4),
                        link=links(rows[s][0]) if links else None) for s in best if s in rows]


def search_documents(index: DocumentIndex, query: str, *, space: str, embed: Callable[[str], Any],
                     limit: int = 5, kinds: Sequence[str] = ("document", "commit"),
                     ranking: RankingConfig | None = None,
                     links: Callable[[DocumentChunk], str | None] | None = None) -> list[DocumentHit]:
    """The best ``limit`` chunks of ``kinds`` in the space for ``query``, best first
    (:func:`fused_hits` of the exact cosine over the index's vectors and its FTS5 channels).

    An empty query, or a space with nothing indexed, gives no hits (the model is not run).
    """
    import numpy as np

    q = query_text(query)
    if not q or limit < 1:
        return []
    seqs, matrix = index.vectors(space, kinds)
    if not seqs:
        return []
    wanted = np.asarray(embed(q), dtype=np.float32)
    sims = matrix @ wanted
    top = np.argpartition(-sims, CANDIDATES)[:CANDIDATES] if len(sims) > CANDIDATES else np.arange(len(sims))
    order = top[np.argsort(-sims[top])]
    rankings: dict[str, list[int]] = {"vector": [seqs[i] for i in order]}
    terms = query_terms(q)
    expressions = (("keyword_all", fts_all_query(terms)),
                   ("keyword_any", fts_any_query(_telling(index, terms))))
    for channel, expr in expressions:
        if expr:
            rankings[channel] = index.keyword(space, kinds, expr, limit=CANDIDATES)

    def found(best: Sequence[int]) -> dict[int, tuple[DocumentChunk, float]]:
        return {s: (c, float(sims[seqs.index(s)])) for s, c in index.chunks(best).items()}

    return fused_hits(rankings, found, limit=limit, ranking=ranking, links=links)
