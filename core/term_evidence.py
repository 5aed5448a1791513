"""Term weights for the injection gate: which of a prompt's words say what it is about.

The gate's first lexical feature (:func:`bli_memory.core.relevance.unseen_share`) counts
every content term alike. In code, generic words ("return", "file", "module", "value")
occur in every codebase, so a prompt about another codebase finds most of its terms in
the space and looks at home (``docs/benchmarks.md``, hook section: near misses in code
kept a block on 58 % of prompts). Weighing each term by its rarity in the space fixes
the arithmetic, for any user's memories: a word in every memory tells nothing about the
subject, a word in none tells the most.

The weight is the BM25 inverse document frequency (Robertson and Zaragoza, "The
Probabilistic Relevance Framework: BM25 and Beyond", 2009, eq. 3.3, the form Lucene
uses): ``idf = ln(1 + (n - df + 0.5) / (df + 0.5))`` for a term found in ``df`` of the
space's ``n`` live memories. Two features come from it:

- :func:`weighted_unseen`: the idf-weighted share of the prompt's terms that occur
  nowhere in the space;
- :func:`hit_coverage`: the idf-weighted share of the prompt's terms that the best of
  the first hits contains itself. A real hit shares the prompt's telling words; a near
  miss shares only the common ones.

Document frequencies come from the keyword index
(:meth:`bli_memory.core.engine.EmbeddedBackend.term_frequencies`). Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bli_memory.core.models import SearchHit
from bli_memory.core.terms import index_text, query_forms

__all__ = ["COVERAGE_HITS", "hit_coverage", "idf", "weighted_unseen"]

#: How many of the first fused hits :func:`hit_coverage` looks at: the block holds at
#: most ``recall_limit`` (5 by default, ``core/settings.py``) hits.
COVERAGE_HITS = 5


def idf(df: int, n: int) -> float:
    """BM25 inverse document frequency of a term in ``df`` of ``n`` memories (>= 0)."""
    n = max(n, df, 0)
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def weighted_unseen(counts: Sequence[tuple[str, int]], space_size: int, *, small_space: int) -> float:
    """Idf-weighted share of the terms found in no memory of the space.

    Args:
        counts: ``(term, document frequency)`` per content term of the prompt.
        space_size: Live memories in the space.
        small_space: Below this size the share is scaled by ``size / small_space``, as
            :func:`bli_memory.core.relevance.unseen_share` does (few memories, few words).

    Returns:
        0.0..1.0; 0.0 for no terms.
    """
    weights = [(idf(df, space_size), df) for _, df in counts]
    total = sum(w for w, _ in weights)
    if total <= 0:
        return 0.0
    share = sum(w for w, df in weights if df == 0) / total
    return share * min(1.0, max(space_size, 0) / small_space)


def hit_coverage(
    counts: Sequence[tuple[str, int]], space_size: int, hits: Sequence[SearchHit], *, k: int = COVERAGE_HITS
) -> float:
    """Largest idf-weighted share of the prompt's terms that one of the first ``k`` hits holds.

    Args:
        counts: ``(term, document frequency)`` per content term of the prompt.
        space_size: Live memories in the space.
        hits: Search hits, best fused first.
        k: Hits looked at.

    Returns:
        0.0..1.0 (a term counts when the hit holds its exact form or its stem); 0.0 for
        no terms or no hits.
    """
    if not counts or not hits:
        return 0.0
    forms = query_forms([t for t, _ in counts])
    weights = [idf(df, space_size) for _, df in counts]
    total = sum(weights)
    if total <= 0:
        return 0.0
    best = 0.0
    for h in hits[:k]:
        held = set(index_text(h.memory.content).split())
        got = sum(w for w, f in zip(weights, forms, strict=True) if any(x in held for x in f))
        best = max(best, got / total)
    return best
