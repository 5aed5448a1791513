"""Near-duplicate live memories in one search result, flagged so the agent can resolve them.

Two saves on one subject that disagree ("User loves Chinese food", later "User hates
Chinese food") both stay live: nothing in a save can tell a correction from a second
fact. A search therefore looks at the hits it returns: two whose embeddings are at
least :data:`NEAR_DUPLICATE_MIN_COSINE` alike are one subject, and each (newer, older)
pair is reported so the agent can resolve it (``update_memory`` or ``forget_memory``).

When such a pair stands next to each other in the ranking, the newer is put first
(``RankingConfig.near_duplicate_newer_first``, on), so a correction is read before
what it corrects. Wider reorderings were measured and rejected: in conversations a
later turn often restates an earlier one that holds the answer, and on LoCoMo each
group newest first cost recall_any@5 0.029 and only pairs equally relevant to the
query 0.023, while the neighbour swap costs 0.003 (docs/benchmarks.md,
"Near-duplicates").

Every store calls :func:`newer_first` with the pairwise cosine similarities of its hits
(the embedded engine from its vectors, Postgres with pgvector's ``<=>``), so the
stores agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bli_memory.core.models import Conflict, SearchHit

__all__ = ["NEAR_DUPLICATE_MIN_COSINE", "Conflict", "newer_first"]

#: Cosine similarity from which two memories are one subject. Calibrated with the
#: shipped all-MiniLM-L6-v2 on pairs in docs/benchmarks.md ("Near-duplicates"):
#: restated facts with one value changed score 0.87-0.97 ("loves"/"hates Chinese
#: food" 0.866, Postgres 15/16 0.957, port 8443/9443 0.950), while different subjects
#: of one topic stay under 0.71 ("loves Chinese"/"loves Italian food" 0.702).
NEAR_DUPLICATE_MIN_COSINE = 0.80


def _age_key(hit: SearchHit) -> tuple[str, str]:
    # ISO 8601 UTC strings order as times; the id only breaks exact ties.
    return (hit.memory.created_at, hit.memory.id)


def newer_first(
    hits: Sequence[SearchHit],
    similarity: Mapping[tuple[str, str], float],
    *,
    min_cosine: float = NEAR_DUPLICATE_MIN_COSINE,
    reorder: bool = True,
) -> tuple[tuple[SearchHit, ...], tuple[Conflict, ...]]:
    """Reorder near-duplicate hits newest first within their positions; list the pairs.

    Args:
        hits: The result, best first.
        similarity: Cosine similarity by ``(id_a, id_b)`` for pairs of hit ids (either
            order; missing pairs count as unrelated).
        min_cosine: Threshold (default :data:`NEAR_DUPLICATE_MIN_COSINE`).
        reorder: Swap a pair standing next to each other, older first (the stores
            pass ``RankingConfig.near_duplicate_newer_first``, on by default).

    Returns:
        ``(hits, conflicts)``: the same hits, where a near-duplicate pair stands next
        to each other the newer first; one :class:`Conflict` per near-duplicate pair
        anywhere in the result, newest pairs first.
    """
    ids = [h.memory.id for h in hits]
    by_age = {h.memory.id: _age_key(h) for h in hits}
    pairs: set[frozenset[str]] = set()
    conflicts: list[Conflict] = []
    for i in range(len(hits)):
        for j in range(i + 1, len(hits)):
            cos = similarity.get((ids[i], ids[j]), similarity.get((ids[j], ids[i])))
            if cos is None or cos < min_cosine or hits[i].memory.content == hits[j].memory.content:
                continue
            new, old = sorted((hits[i], hits[j]), key=_age_key, reverse=True)
            pairs.add(frozenset((ids[i], ids[j])))
            conflicts.append(Conflict(new.memory.id, old.memory.id, round(float(cos), 4)))
    if not conflicts or not reorder:
        return tuple(hits), tuple(sorted(conflicts, key=lambda c: by_age[c.newer], reverse=True))
    out = list(hits)
    for i in range(len(out) - 1):  # recency breaks the tie between neighbours only
        a, b = out[i], out[i + 1]
        if frozenset((a.memory.id, b.memory.id)) in pairs and _age_key(a) < _age_key(b):
            out[i], out[i + 1] = b, a
    conflicts.sort(key=lambda c: by_age[c.newer], reverse=True)
    return tuple(out), tuple(conflicts)
