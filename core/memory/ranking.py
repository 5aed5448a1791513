"""Fusion of the retrieval channels into one ranking.

Channels (answered by each store, ranked by :mod:`bli_memory.core.memory.retrieval`):
``vector`` (exact cosine k-NN), ``keyword_all`` (match of every query term:
identifiers, exact phrases) and ``keyword_any`` (bm25 over any query term). They are fused with weighted
reciprocal-rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009: ``sum w / (k + rank)``)
plus a recency prior ``recency_weight * 0.5 ** (age_days / half_life_days)``; the
``context`` channel (:func:`context_bonus`) then lets the best keyword-anchored hits pass
part of their fused score to their neighbours in the same session.

The weights are measured, not guessed: ``bench/run`` reports every ablation side by
side on LoCoMo and ``docs/benchmarks.md`` records why the defaults are what they are.
In short: the paper's k = 60 was tuned for fusing many deep TREC runs; here two
complementary channels each put their few best answers at the very top, and k = 60
flattens that so that a row found lukewarm by both beats a row found first by one
(LoCoMo recall_any@5: 0.58 at k = 60, 0.65 at k = 3-5, flat from 1 to 5). The keyword
channels weigh as much as the vector channel in total (``keyword_any`` 1,
``keyword_all`` 0.5 on top for rows matching every term, identifiers above all).
The recency prior (at most 0.002 against a top RRF contribution of 0.2) only breaks
near ties. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["RankingConfig", "context_bonus", "recency_prior", "reciprocal_rank_fusion"]


@dataclass(frozen=True)
class RankingConfig:
    """Weights and sizes of the hybrid ranking.

    Attributes:
        weights: RRF weight per channel; a channel with weight 0 is not queried.
        rrf_k: RRF constant k (60 in the original paper; 4 measured here, see above).
        candidates: How many candidates each channel contributes.
        recency_weight: Weight of the recency prior (0 turns it off).
        recency_half_life_days: Age at which the prior has halved.
        min_similarity: A hit found only by the vector channel needs at least this cosine
            similarity; keyword hits always pass. Unrelated text scores about 0 with
            all-MiniLM-L6-v2 and loosely related text 0.3+, so 0.2 keeps a search of an
            unrelated question silent without hiding paraphrases (docs/benchmarks.md).
        context_weight: Share of a top hit's fused score given to the rows just before
            and after it in the same session (the ``context`` channel; 0 turns it off).
            In a conversation the answer is often the reply to the turn that matches
            the question; on LoCoMo 0.4 lifts recall_any@5 by about 0.04
            (docs/benchmarks.md). See :func:`context_bonus`.
        context_top: How many of the best fused hits share their score that way.
        near_duplicate_cosine: Two hits at least this alike are one subject: flagged
            as a possible conflict (:mod:`bli_memory.core.memory.conflicts`; above 1 turns it off).
        near_duplicate_newer_first: Also swap such a pair when they stand next to each
            other with the older first, so a correction is read before what it corrects.
            On: on LoCoMo it costs recall_any@5 0.003 and mrr@10 0.005, about three of
            883 questions, within run-to-run noise; the wider variants cost 0.023-0.029
            and stay off (docs/benchmarks.md, "Near-duplicates").
    """

    weights: Mapping[str, float] = field(
        default_factory=lambda: {"vector": 1.0, "keyword_all": 0.5, "keyword_any": 1.0}
    )
    rrf_k: float = 4.0
    candidates: int = 50
    recency_weight: float = 0.002
    recency_half_life_days: float = 30.0
    min_similarity: float = 0.2
    context_weight: float = 0.4
    context_top: int = 5
    near_duplicate_cosine: float = 0.80  # calibrated: core/memory/conflicts.py NEAR_DUPLICATE_MIN_COSINE
    near_duplicate_newer_first: bool = True

    def weight(self, channel: str) -> float:
        """Weight of ``channel`` (0 when absent)."""
        return float(self.weights.get(channel, 0.0))


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[int]], config: RankingConfig
) -> dict[int, float]:
    """Weighted RRF over channel rankings.

    Args:
        rankings: Channel name -> item ids, best first.
        config: Weights and k.

    Returns:
        Item id -> fused score (higher is better).
    """
    scores: dict[int, float] = {}
    for channel, items in rankings.items():
        w = config.weight(channel)
        if w == 0:
            continue
        for rank, item in enumerate(items, start=1):
            scores[item] = scores.get(item, 0.0) + w / (config.rrf_k + rank)
    return scores


def recency_prior(age_days: float, config: RankingConfig) -> float:
    """The recency bonus for a memory ``age_days`` old (never negative ages)."""
    if config.recency_weight == 0:
        return 0.0
    return float(config.recency_weight * 0.5 ** (max(age_days, 0.0) / config.recency_half_life_days))


def context_bonus(
    fused: Mapping[int, float],
    rankings: Mapping[str, Sequence[int]],
    neighbours: Callable[[Sequence[int]], Mapping[int, Sequence[int]]],
    config: RankingConfig,
) -> dict[int, float]:
    """Score the best keyword-anchored hits pass to their session neighbours (``context``).

    The ``config.context_top`` best fused items found by a keyword channel each give
    ``config.context_weight`` times their fused score to their neighbours; an item next
    to two such hits keeps the larger share. Only keyword-anchored items pass context
    on, so a weak vector-only match never pulls its neighbours in (on LoCoMo, admitting
    vector hits as parents gave the same recall; docs/benchmarks.md: +0.036 recall_any@5).

    Args:
        fused: Item -> fused score.
        rankings: Channel -> items, best first (``keyword_all`` / ``keyword_any`` read).
        neighbours: ``(parents) -> {parent: [neighbour, ...]}``, the items just before
            and after each parent in its session (the store answers it).
        config: ``context_weight`` and ``context_top``.

    Returns:
        Neighbour -> bonus (possibly items already in ``fused``); empty when off.
    """
    if config.context_weight <= 0 or not fused:
        return {}
    keyword = set(rankings.get("keyword_all", ())) | set(rankings.get("keyword_any", ()))
    ranked = sorted((s for s in fused if s in keyword), key=lambda s: (-fused[s], -s))
    bonus: dict[int, float] = {}
    for parent, kids in neighbours(ranked[: config.context_top]).items():
        for kid in kids:
            bonus[kid] = max(bonus.get(kid, 0.0), config.context_weight * fused[parent])
    return bonus
