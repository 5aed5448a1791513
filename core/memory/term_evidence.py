"""Term weights for the injection gate: which of a prompt's words say what it is about.

The gate's first lexical feature (:func:`bli_memory.core.memory.relevance.unseen_share`, the
share of the prompt's terms found nowhere in the space) counted every content term
alike. In code, generic words ("return", "file", "module", "value") occur in every
codebase, so a prompt about another codebase finds most of its terms in
the space and looks at home (``docs/benchmarks.md``, hook section: near misses in code
kept a block on 58 % of prompts). Weighing each term by its rarity in the space fixes
the arithmetic, for any user's memories: a word in every memory tells nothing about the
subject, a word in none tells the most.

The weight is the BM25 inverse document frequency (Robertson and Zaragoza, "The
Probabilistic Relevance Framework: BM25 and Beyond", 2009, eq. 3.3, the form Lucene
uses): ``idf = ln(1 + (n - df + 0.5) / (df + 0.5))`` for a term found in ``df`` of the
space's ``n`` live memories. The gate's feature is :func:`hit_coverage`: the
idf-weighted share of the prompt's terms that the best of the first hits contains
itself. A real hit shares the prompt's telling words; a near miss shares only the common
ones, and a word the space never holds weighs the most against it. (An idf-weighted
share of unseen terms was fitted beside it on the calibration split and added nothing
once coverage was in: weight -0.33 against 7.86 for coverage, calibration near misses
0.425 with it and 0.401 without, ``bench/hook.py --calibrate`` run of 2026-12-01.)

Document frequencies come from the keyword index
(:meth:`bli_memory.core.embedded.engine.EmbeddedBackend.term_frequencies`). Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bli_memory.core.memory.terms import index_text, query_forms
from bli_memory.core.models import SearchHit

__all__ = ["COVERAGE_HITS", "hit_coverage", "idf"]

#: How many of the first fused hits :func:`hit_coverage` looks at: the block holds at
#: most ``recall_limit`` (5 by default, ``core/settings.py``) hits.
COVERAGE_HITS = 5


def idf(df: int, n: int) -> float:
    """BM25 inverse document frequency of a term in ``df`` of ``n`` memories (>= 0)."""
    n = max(n, df, 0)
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def hit_coverage(
    counts: Sequence[tuple[str, int]],
    space_size: int,
    hits: Sequence[SearchHit],
    *,
    small_space: int = 0,
    k: int = COVERAGE_HITS,
) -> float:
    """Largest idf-weighted share of the prompt's terms that one of the first ``k`` hits holds.

    Args:
        counts: ``(term, document frequency)`` per content term of the prompt.
        space_size: Live memories in the space.
        hits: Search hits, best fused first.
        small_space: Below this many live memories what a hit lacks counts for
            ``size / small_space`` of itself (``1 - (1 - share) * size / small_space``):
            in a space of a few memories few words were ever written
            (:data:`bli_memory.core.memory.relevance.SMALL_SPACE`).
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
    scale = min(1.0, max(space_size, 0) / small_space) if small_space > 0 else 1.0
    return 1.0 - (1.0 - best) * scale
