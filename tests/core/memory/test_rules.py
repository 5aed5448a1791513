"""The rules of the memory contract, alone: ranking, the injection gate, dedup, expiry and
the forget policy, against an in-memory channel source and a fixed clock.

Every store runs these rules (:mod:`bli_memory.core.memory.retrieval`,
:mod:`bli_memory.core.memory.relevance`, :mod:`bli_memory.core.memory.retrieval_writes`,
:mod:`bli_memory.core.memory.expiry`); the contract suite (``tests/contract``) runs them
through real stores and the real model. Here each rule is pinned with numbers chosen by
hand, in milliseconds, so a change to one shows which rule moved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.memory import relevance
from bli_memory.core.memory.expiry import parse_expiry
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.memory.relevance import decide
from bli_memory.core.memory.retrieval import rank
from bli_memory.core.memory.retrieval_writes import (
    FORGET_MIN_SIMILARITY,
    content_hash,
    first_version,
    forget_selector,
    is_same_upsert,
    is_unchanged,
    require_forget_similarity,
    upserted_version,
)
from bli_memory.core.models import Memory, SearchHit

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _at(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _memory(n: int, text: str, *, days_ago: float = 1.0, session: str | None = None) -> Memory:
    return Memory(id=f"m{n}", space="s", content=text, session_id=session, created_at=_at(days_ago),
                  updated_at=_at(days_ago))


@dataclass
class FakeChannels:
    """A :class:`~bli_memory.core.memory.retrieval.ChannelSource` over fixed rankings.

    ``live`` is what the store still holds (an item ranked but not live is expired or
    retired); ``sims`` the cosine of each item with the query; ``sessions`` the items of
    one session in order (their neighbours).
    """

    rankings: dict[str, list[int]]
    live: dict[int, Memory]
    sims: dict[int, float | None] = field(default_factory=dict)
    sessions: list[list[int]] = field(default_factory=list)
    pairs: dict[tuple[str, str], float] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def channel_rankings(self, query: str, terms: Sequence[str], n: int,
                         config: RankingConfig) -> dict[str, list[int]]:
        self.asked.append(query)
        return {c: list(items[:n]) for c, items in self.rankings.items() if config.weight(c) > 0}

    def neighbours(self, parents: Sequence[int]) -> Mapping[int, Sequence[int]]:
        out: dict[int, list[int]] = {}
        for run in self.sessions:
            for i, item in enumerate(run):
                if item in parents:
                    around = (run[i - 1] if i else None, run[i + 1] if i + 1 < len(run) else None)
                    out[item] = [x for x in around if x is not None and x in self.live]
        return out

    def live_rows(self, items: Sequence[int]) -> Mapping[int, Memory]:
        return {i: self.live[i] for i in items if i in self.live}

    def similarity(self, item: int) -> float | None:
        return self.sims.get(item)

    def pair_similarity(self, hits: Sequence[tuple[str, int]]) -> dict[tuple[str, str], float]:
        return dict(self.pairs)


# --- rank -----------------------------------------------------------------------------------


def test_fusion_ranks_an_item_found_by_both_channels_above_either_alone() -> None:
    live = {1: _memory(1, "deploys run at noon"), 2: _memory(2, "billing queue"), 3: _memory(3, "noon")}
    source = FakeChannels({"vector": [2, 1], "keyword_all": [3, 1]}, live, {1: 0.6, 2: 0.7, 3: 0.3})
    ranked = rank(source, "deploy noon", limit=3, config=RankingConfig(), now=NOW)
    assert [h.memory.id for h in ranked.hits][0] == "m1"
    assert ranked.hits[0].channels == ("vector", "keyword_all")


def test_a_one_term_query_counts_its_keyword_ranking_as_any_too() -> None:
    live = {1: _memory(1, "noon")}
    ranked = rank(FakeChannels({"keyword_all": [1]}, live, {1: 0.1}), "noon", limit=5,
                  config=RankingConfig(), now=NOW)
    assert ranked.hits[0].channels == ("keyword_all", "keyword_any")


def test_recency_breaks_a_tie_for_the_newer_memory_on_the_fixed_clock() -> None:
    # Item 2 is the higher row number (ties go to it) but the older memory.
    new, old = _memory(1, "port 8443", days_ago=1), _memory(2, "port 8443", days_ago=300)
    weights = {"vector": 1.0, "keyword_all": 1.0, "keyword_any": 0.0}
    source = FakeChannels({"vector": [1, 2], "keyword_all": [2, 1]}, {1: new, 2: old}, {1: 0.9, 2: 0.9})

    def order(now: datetime, **kw: float) -> list[str]:
        config = RankingConfig(weights=weights, near_duplicate_cosine=2.0, **kw)
        return [h.memory.id for h in rank(source, "port", limit=2, config=config, now=now).hits]

    assert order(NOW) == ["m1", "m2"]  # equal fused scores: the newer memory first
    assert order(NOW, recency_weight=0.0) == ["m2", "m1"]  # no prior: the higher row number
    assert order(NOW - timedelta(days=400)) == ["m2", "m1"]  # both "written later": no age to tell


def test_a_weak_hit_found_only_by_meaning_is_dropped_and_a_keyword_hit_never_is() -> None:
    config = RankingConfig()
    live = {1: _memory(1, "lunch"), 2: _memory(2, "wifi"), 3: _memory(3, "kafka")}
    sims = {1: config.min_similarity - 0.01, 2: config.min_similarity + 0.01, 3: 0.05}
    source = FakeChannels({"vector": [2, 1], "keyword_all": [3]}, live, sims)
    ids = {h.memory.id for h in rank(source, "kafka", limit=5, config=config, now=NOW).hits}
    assert ids == {"m2", "m3"}


def test_an_item_that_is_no_longer_live_is_never_a_hit() -> None:
    source = FakeChannels({"vector": [1, 2]}, {2: _memory(2, "live")}, {1: 0.9, 2: 0.8})
    assert [h.memory.id for h in rank(source, "q", limit=5, config=RankingConfig(), now=NOW).hits] == ["m2"]


def test_session_neighbours_of_a_keyword_hit_come_in_through_context() -> None:
    live = {1: _memory(1, "we ship on fridays", session="a"), 2: _memory(2, "friday it is", session="a"),
            9: _memory(9, "unrelated")}
    source = FakeChannels({"keyword_all": [1], "vector": [9]}, live, {1: 0.5, 2: 0.1, 9: 0.3},
                          sessions=[[1, 2]])
    hits = rank(source, "ship", limit=5, config=RankingConfig(), now=NOW).hits
    assert {h.memory.id: h.channels for h in hits}["m2"] == ("context",)
    off = rank(source, "ship", limit=5, config=RankingConfig(context_weight=0.0), now=NOW).hits
    assert "m2" not in {h.memory.id for h in off}


def test_near_duplicates_are_flagged_and_the_newer_one_comes_first() -> None:
    old, new = _memory(1, "the API port is 8443", days_ago=30), _memory(2, "the API port is 9443", days_ago=1)
    source = FakeChannels({"vector": [1, 2]}, {1: old, 2: new}, {1: 0.9, 2: 0.85}, pairs={("m1", "m2"): 0.95})
    ranked = rank(source, "api port", limit=5, config=RankingConfig(), now=NOW)
    assert [h.memory.id for h in ranked.hits] == ["m2", "m1"]
    assert [(c.newer, c.older) for c in ranked.conflicts] == [("m2", "m1")]


def test_the_limit_and_the_candidate_depth() -> None:
    live = {i: _memory(i, f"fact {i}") for i in range(1, 200)}
    source = FakeChannels({"vector": list(range(1, 200))}, live, dict.fromkeys(range(1, 200), 0.5))
    ranked = rank(source, "fact", limit=7, config=RankingConfig(candidates=50), now=NOW)
    assert len(ranked.hits) == 7


# --- the injection gate ------------------------------------------------------------------------


def _hit(n: int, similarity: float | None, channels: tuple[str, ...] = ("vector",), *,
         session: str | None = None, text: str = "a fact") -> SearchHit:
    return SearchHit(memory=_memory(n, text, session=session), similarity=similarity, score=1.0 / n,
                     channels=channels)


def test_the_gate_weighs_the_best_cosine_and_the_coverage() -> None:
    hits = [_hit(1, 0.62), _hit(2, 0.55), _hit(3, 0.2)]
    # z = -7.103 + 9.323 * 0.62 + 8.162 * coverage: 0.31 at 0.2, -1.08 at 0.03 (the bar is 0.1).
    assert decide(hits, coverage=0.2, limit=5).reason == "relevant"
    shut = decide(hits, coverage=0.03, limit=5)
    assert shut.reason == "below_threshold" and shut.inject == ()
    assert shut.score == pytest.approx(relevance.gate_score(0.62, 0.03))


def test_the_gate_keeps_the_hits_near_the_best_one() -> None:
    drop = relevance.TAIL_DROP
    hits = [_hit(1, 0.8), _hit(2, 0.8 - drop + 0.01), _hit(3, 0.8 - drop - 0.01)]
    assert [h.memory.id for h in decide(hits, coverage=0.5, limit=5).inject] == ["m1", "m2"]
    assert [h.memory.id for h in decide(hits, coverage=0.5, limit=1).inject] == ["m1"]


def test_a_space_of_unlike_texts_raises_the_bar() -> None:
    hits = [_hit(1, 0.7)]
    coverage = 0.1  # z = -7.103 + 6.526 + 0.816 = 0.24: above the usual bar, below the diverse one
    assert decide(hits, coverage=coverage, limit=3, background=None).reason == "relevant"
    alike = decide(hits, coverage=coverage, limit=3, background=relevance.DIVERSE_BACKGROUND + 0.01)
    assert alike.reason == "relevant"
    diverse = decide(hits, coverage=coverage, limit=3, background=relevance.DIVERSE_BACKGROUND - 0.01)
    assert diverse.reason == "below_threshold" and diverse.threshold == relevance.DIVERSE_THRESHOLD


def test_an_exact_keyword_hit_passes_whatever_its_cosine_and_the_floor() -> None:
    hits = [_hit(1, 0.4, ("vector", "keyword_all")), _hit(2, 0.3), _hit(3, 0.4 - relevance.TAIL_DROP - 0.01)]
    d = decide(hits, coverage=0.0, limit=3, floor=0.9)
    assert d.reason == "exact_keyword" and [h.memory.id for h in d.inject] == ["m1", "m2"]


def test_the_floor_and_no_hits() -> None:
    hits = [_hit(1, 0.8)]
    assert decide(hits, coverage=0.5, limit=3, floor=0.81).reason == "below_threshold"
    assert decide([], coverage=0.0, limit=3).reason == "no_hits"
    assert decide([_hit(1, None, ("keyword_any",))], coverage=0.0, limit=3).reason == "no_hits"


def test_memories_given_earlier_or_captured_in_this_session_are_never_injected() -> None:
    hits = [_hit(1, 0.8), _hit(2, 0.79, session="now"), _hit(3, 0.78)]
    d = decide(hits, coverage=0.5, limit=5, skip_ids={"m1"}, skip_session="now")
    assert d.reason == "relevant" and [h.memory.id for h in d.inject] == ["m3"]
    assert d.top == 0.8  # the skipped hits still show the space is on the subject


# --- dedup, update and expiry ---------------------------------------------------------------


def test_identical_content_is_one_memory_after_stripping_and_nfc() -> None:
    assert content_hash("  Café opens at 9.\n") == content_hash("Cafe\u0301 opens at 9.")
    assert content_hash("Café opens at 9.") != content_hash("café opens at 9.")
    assert is_unchanged("We deploy on Fridays.", " We deploy on Fridays. ")


def test_a_custom_id_save_is_a_duplicate_only_with_the_same_text_and_no_new_metadata() -> None:
    live = first_version(space="s", content="Port 8443.", custom_id="port", metadata={"kind": "decision"},
                         source="mcp", session_id=None, at=_at(1), expires_at=None)
    assert is_same_upsert(live, content_hash("Port 8443."), None)
    assert is_same_upsert(live, content_hash("Port 8443."), {"kind": "decision"})
    assert not is_same_upsert(live, content_hash("Port 8443."), {"kind": "note"})
    assert not is_same_upsert(live, content_hash("Port 9443."), None)
    nxt = upserted_version(live, content="Port 9443.", custom_id="port", metadata=None, source="cli",
                           session_id="s-2", at=_at(0), expires_at=None)
    assert (nxt.version, nxt.supersedes, nxt.metadata, nxt.space) == (2, live.id, {"kind": "decision"}, "s")
    assert nxt.id != live.id


def test_an_expiry_must_be_after_now_on_the_fixed_clock() -> None:
    assert parse_expiry("2026-06-02", future=True, now=NOW) == "2026-06-02T00:00:00.000000Z"
    with pytest.raises(InvalidInputError, match="in the past"):
        parse_expiry("2026-06-01T11:59:59Z", future=True, now=NOW)
    with pytest.raises(InvalidInputError, match="in the past"):
        parse_expiry("2026-06-01T14:00:00+02:00", future=True, now=NOW)  # exactly now
    assert parse_expiry("2026-06-01T14:00:01+02:00", future=True, now=NOW) == "2026-06-01T12:00:01.000000Z"
    assert parse_expiry("2001-01-01", now=NOW) == "2001-01-01T00:00:00.000000Z"  # kept as stored
    assert parse_expiry("  ", future=True, now=NOW) is None


# --- the forget policy ----------------------------------------------------------------------


def test_a_forget_takes_exactly_one_selector() -> None:
    assert forget_selector("m1", None, None) == "id"
    assert forget_selector(None, "text", " ") == "content"
    assert forget_selector(None, None, "the port") == "query"
    for given in ((None, None, None), ("m1", "text", None), (" ", "", None)):
        with pytest.raises(InvalidInputError, match="exactly one"):
            forget_selector(*given)


def test_a_forget_by_query_needs_cosine_085() -> None:
    require_forget_similarity(FORGET_MIN_SIMILARITY)
    with pytest.raises(NotFoundError, match="similarity 0.84, below the 0.85"):
        require_forget_similarity(0.8449)
    with pytest.raises(NotFoundError, match="similarity 0.00"):
        require_forget_similarity(-1.0)
