"""One hybrid retrieval for every store: channels in, ranked hits out.

A store answers *candidate rankings per channel* through :class:`ChannelSource`
(its SQL, its indexes); everything that decides what a person sees is here, once,
so the embedded SQLite engine and the Postgres team store cannot disagree:

1. ``vector``, ``keyword_all``, ``keyword_any``: the store's rankings (item ids, best
   first); a one-term query has no "any" that differs from "all", so ``keyword_any``
   repeats ``keyword_all`` then;
2. weighted reciprocal-rank fusion (:func:`~bli_memory.core.memory.ranking.reciprocal_rank_fusion`);
3. ``context``: the best keyword-anchored hits pass part of their fused score to their
   session neighbours (:func:`~bli_memory.core.memory.ranking.context_bonus`);
4. the recency prior (:func:`~bli_memory.core.memory.ranking.recency_prior`) on the
   fused score of each still-live candidate;
5. the tail drop: a hit found only by ``vector`` below
   :attr:`RankingConfig.min_similarity <bli_memory.core.memory.ranking.RankingConfig>`
   is left out (keyword hits always pass);
6. hit assembly (true cosine similarity, channels in :data:`CHANNELS` order) and the
   near-duplicate conflict flags (:func:`~bli_memory.core.memory.conflicts.newer_first`).

Item ids are the stores' row sequence numbers (``seq``): newer rows have larger ones,
which breaks every tie newest first. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.conflicts import newer_first
from bli_memory.core.memory.ranking import RankingConfig, context_bonus, recency_prior, reciprocal_rank_fusion
from bli_memory.core.memory.terms import query_terms
from bli_memory.core.models import Conflict, Memory, SearchHit

__all__ = [
    "CHANNELS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "ChannelSource",
    "Ranked",
    "clamped_limit",
    "matched_in_words",
    "query_text",
    "rank",
]

#: Longest query text searched, in characters, and most keyword terms taken from it
#: (every store; the rest is ignored, not refused). A query is a question: the model
#: reads its first 256 tokens anyway, and each distinct term adds a branch to the
#: keyword query (thousands of them exceed Postgres' stack depth when it plans one).
MAX_QUERY_CHARS = 8000
MAX_QUERY_TERMS = 64

#: Retrieval channels in the order a hit lists the ones that found it.
CHANNELS = ("vector", "keyword_all", "keyword_any", "context")
#: What each channel means to a reader.
_CHANNEL_WORDS = {"vector": "meaning", "keyword_all": "all the words", "keyword_any": "some words",
                  "context": "nearby context"}


def matched_in_words(channels: object) -> str:
    """How a hit matched, as people say it: ``all the words + meaning``; the words first,
    "some words" left out beside "all the words"; ``recency`` for a hit no channel found
    (the memory browser and ``memory search`` show it)."""
    words = [_CHANNEL_WORDS.get(str(c), str(c)) for c in (channels or ())]  # type: ignore[attr-defined]
    if "all the words" in words:
        words = [w for w in words if w != "some words"]
    ordered = [w for w in words if w != "meaning"] + [w for w in words if w == "meaning"]
    return " + ".join(ordered) or "recency"


def query_text(query: str | None) -> str:
    """The part of ``query`` that is searched: stripped, at most :data:`MAX_QUERY_CHARS`."""
    return (query or "").strip()[:MAX_QUERY_CHARS]


def clamped_limit(limit: int) -> int:
    """A search's hit count clamped to 1..100 (the ``search_memory`` tool's range).

    Raises:
        InvalidInputError: ``limit`` is not a whole number.
    """
    if isinstance(limit, bool) or not isinstance(limit, int | float | str):
        raise InvalidInputError("limit must be a whole number")
    try:
        return max(1, min(int(limit), 100))
    except (ValueError, OverflowError):
        raise InvalidInputError("limit must be a whole number") from None


class ChannelSource(Protocol):
    """What a store answers so that :func:`rank` can rank one search.

    Implementations: :class:`bli_memory.core.embedded.search_source.EmbeddedChannels`
    and :class:`bli_memory.core.team.postgres.search.PostgresChannels`.
    """

    def channel_rankings(
        self, query: str, terms: Sequence[str], n: int, config: RankingConfig
    ) -> dict[str, list[int]]:
        """Up to ``n`` item ids per channel, best first, for every channel whose weight
        in ``config`` is above 0 (``vector``, ``keyword_all``; ``keyword_any`` only
        when ``terms`` has more than one term). ``terms`` are the query's content terms."""
        ...

    def neighbours(self, parents: Sequence[int]) -> Mapping[int, Sequence[int]]:
        """``{parent: [item, ...]}``: the live items just before and after each parent
        in its session (same space)."""
        ...

    def live_rows(self, items: Sequence[int]) -> Mapping[int, Memory]:
        """The live, unexpired memories of ``items`` (others are left out)."""
        ...

    def similarity(self, item: int) -> float | None:
        """Cosine similarity of the query with ``item``'s vector; ``None`` when it has
        no (usable) vector. Asked only for items :meth:`live_rows` returned."""
        ...

    def pair_similarity(self, hits: Sequence[tuple[str, int]]) -> dict[tuple[str, str], float]:
        """Cosine similarity of pairs of hits given as ``(memory id, item)``, keyed by
        ``(id, id)`` in either order; pairs without vectors are left out."""
        ...


@dataclass(frozen=True)
class Ranked:
    """The outcome of :func:`rank`: hits best first and the conflicts among them."""

    hits: tuple[SearchHit, ...] = ()
    conflicts: tuple[Conflict, ...] = ()


def _age_days(memory: Memory, now: datetime) -> float:
    # Stored times are always ...Z ISO 8601, which fromisoformat reads 10x faster than strptime.
    return (now - datetime.fromisoformat(memory.created_at)).total_seconds() / 86400


def rank(source: ChannelSource, query: str, *, limit: int, config: RankingConfig,
         now: datetime | None = None) -> Ranked:
    """Rank one search of the store behind ``source``.

    Args:
        source: The store's channels for this query and view.
        query: The searched text (:func:`query_text`; must not be empty).
        limit: Most hits, already clamped (:func:`clamped_limit`).
        config: Fusion weights and sizes.
        now: The current time, aware, that ages are counted to (default the clock's;
            tests fix it).

    Returns:
        :class:`Ranked`; no hits is a normal answer.
    """
    n = max(config.candidates, limit * 3)
    terms = query_terms(query)[:MAX_QUERY_TERMS]
    rankings = source.channel_rankings(query, terms, n, config)
    if config.weight("keyword_any") > 0 and len(terms) <= 1 and "keyword_all" in rankings:
        rankings["keyword_any"] = list(rankings["keyword_all"])

    fused = reciprocal_rank_fusion(rankings, config)
    bonus = context_bonus(fused, rankings, source.neighbours, config)
    for item, extra in bonus.items():
        fused[item] = fused.get(item, 0.0) + extra
    if bonus:
        rankings["context"] = list(bonus)
    if not fused:
        return Ranked()
    rows = source.live_rows(list(fused))
    now = now or datetime.now(UTC)
    scored = sorted(
        ((score + recency_prior(_age_days(rows[item], now), config), item)
         for item, score in fused.items() if item in rows),  # expired or retired: gone
        key=lambda t: (-t[0], -t[1]),
    )
    channel_sets = {c: set(items) for c, items in rankings.items()}
    hits: list[SearchHit] = []
    kept: list[tuple[str, int]] = []
    for score, item in scored:
        if len(hits) == limit:
            break
        exact = source.similarity(item)
        # A zero vector (imported before vectors were checked) has no direction: its
        # cosine is NaN, which is "no similarity", never a failure.
        similarity = round(exact, 4) if exact is not None and math.isfinite(exact) else None
        channels = tuple(c for c in CHANNELS if item in channel_sets.get(c, ()))
        if channels == ("vector",) and (similarity is None or similarity < config.min_similarity):
            continue
        hits.append(SearchHit(memory=rows[item], similarity=similarity, score=score, channels=channels))
        kept.append((rows[item].id, item))
    pairs = source.pair_similarity(kept) if config.near_duplicate_cosine <= 1 and len(kept) > 1 else {}
    ordered, conflicts = newer_first(hits, pairs, min_cosine=config.near_duplicate_cosine,
                                     reorder=config.near_duplicate_newer_first)
    return Ranked(ordered, conflicts)
