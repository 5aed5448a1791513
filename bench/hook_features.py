"""Candidate features of the injection gate, measured beside the shipped ones (bench only).

Each is a general signal of whether the space holds something on the prompt's subject,
computed from what the prompt hook already has (the search hits, the prompt terms'
document frequencies) or, for the background features, from the prompt's cosine to
every memory of the space. ``bench/hook.py --calibrate`` fits feature sets of them on
the calibration split side by side (``docs/benchmarks.md``, hook section).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["candidates"]


def candidates(
    backend: Any, space: str, text: str, hits: Sequence[Any], counts: Sequence[tuple[str, int]], size: int
) -> dict[str, float]:
    """Candidate gate features for one prompt, for the side-by-side fits (bench only)."""
    import numpy as np

    import bli_memory.core.memory.relevance as rel
    from bli_memory.core.memory.term_evidence import hit_coverage, idf
    from bli_memory.core.memory.terms import index_text, query_forms

    out: dict[str, float] = {}
    vec = [h for h in hits if h.similarity is not None]
    by_cos = sorted(vec, key=lambda h: -(h.similarity or 0.0))
    out["top_cover"] = hit_coverage(counts, size, by_cos[:1], small_space=rel.SMALL_SPACE) if by_cos else 0.0
    forms = query_forms([t for t, _ in counts])
    weights = [idf(df, size) for _, df in counts]
    top_idf = idf(1, size) or 1.0
    rare = 0.0
    nrare = 0.0
    for h in hits[:5]:
        held = set(index_text(h.memory.content).split())
        got = [w for w, f in zip(weights, forms, strict=True) if any(x in held for x in f)]
        if got:
            rare = max(rare, max(got) / top_idf)
            nrare = max(nrare, float(sum(1 for w in got if w >= 0.5 * top_idf)))
    out["rare"] = rare
    out["nrare"] = nrare
    out["prompt_rare"] = (max(weights) / top_idf) if weights else 0.0
    cos = [h.similarity or 0.0 for h in by_cos]
    out["gap5"] = (cos[0] - sum(cos[1:5]) / len(cos[1:5])) if len(cos) > 1 else 0.0
    out["second"] = cos[1] if len(cos) > 1 else 0.0
    # the prompt's cosines to every memory of the space: the background it stands out of
    _, spaces = backend.store.resolve_space(space)
    vs = backend.store.vectors(spaces)
    if len(vs.seqs) and cos:
        qv = backend._embed_one(text[:2000])
        all_cos = vs.matrix @ qv
        out["z_space"] = float((cos[0] - all_cos.mean()) / (all_cos.std() + 1e-6))
        out["q99"] = float(cos[0] - np.quantile(all_cos, 0.99))
        out["q90"] = float(cos[0] - np.quantile(all_cos, 0.90))
        out["mean_space"] = float(all_cos.mean())
    return out
