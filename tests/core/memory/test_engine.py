"""The memory engine's reading half alone, over an in-memory store: search, profile, term
counts and the one background cache (:mod:`bli_memory.core.memory.engine`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from bli_memory.core.memory.engine import MemoryEngine
from bli_memory.core.memory.ranking import RankingConfig
from tests.core.memory.test_rules import FakeChannels, _memory


class FakeRead:
    def __init__(self, store: FakeReads, tag: str) -> None:
        self.canonical, self.spaces, self._store = tag, (tag,), store

    def channels(self, query: str, embed: Callable[[str], Any]) -> FakeChannels:
        embed(query)
        return self._store.channel_source

    def newest(self, *, kinds: Sequence[str] | None, limit: int) -> list[Any]:
        rows = sorted(self._store.channel_source.live.values(), key=lambda m: m.created_at, reverse=True)
        if kinds is not None:
            rows = [m for m in rows if str(m.metadata.get("kind", "")).lower() in kinds]
        return rows[:limit]

    def term_counts(self, terms: Sequence[str]) -> tuple[list[int], int]:
        live = self._store.channel_source.live.values()
        return [sum(t in m.content for m in live) for t in terms], len(live)

    def vector_sum(self) -> tuple[int, float]:
        self._store.sums += 1
        return self._store.n, self._store.squared

    def generation(self) -> Any:
        return self._store.generation

    def scope(self) -> Any:
        return self.spaces


class FakeReads:
    def __init__(self, source: FakeChannels) -> None:
        self.channel_source = source
        self.n, self.squared, self.generation, self.sums = 0, 0.0, 1, 0

    @contextmanager
    def reading(self, tag: str) -> Iterator[FakeRead]:
        yield FakeRead(self, tag)


def _engine() -> tuple[MemoryEngine, FakeReads, list[str]]:
    live = {1: _memory(1, "we deploy on fridays", days_ago=2),
            2: _memory(2, "prefer dark mode", days_ago=300)}
    live[2] = replace(live[2], metadata={"kind": "Preference"})
    reads = FakeReads(FakeChannels({"keyword_all": [1]}, live, {1: 0.7, 2: 0.1}))
    embedded: list[str] = []
    engine = MemoryEngine(reads, lambda text: embedded.append(text) or [1.0], RankingConfig(),  # type: ignore[arg-type]
                          embed_many=lambda texts: [[1.0] for _ in texts])
    return engine, reads, embedded


def test_search_embeds_the_stripped_query_once_and_an_empty_one_never() -> None:
    engine, _, embedded = _engine()
    res = engine.search("  fridays  ", space="s", include_profile=True)
    assert embedded == ["fridays"] and [h.memory.id for h in res.hits] == ["m1"]
    assert res.profile is not None and [m.id for m in res.profile.facts] == ["m2"]
    assert [m.id for m in res.profile.recent] == ["m1", "m2"]
    empty = engine.search("   ", space="s")
    assert empty.hits == () and embedded == ["fridays"]


def test_term_frequencies_pair_each_content_term_with_its_count() -> None:
    engine, _, _ = _engine()
    assert engine.term_frequencies("deploy on fridays, dark?", space="s") == (
        [("deploy", 1), ("fridays", 1), ("dark", 1)], 2)


def test_the_background_is_measured_once_per_generation_and_not_below_100() -> None:
    engine, reads, _ = _engine()
    reads.n, reads.squared = 99, 99 * 99 * 0.5
    assert engine.space_background(space="s") is None and engine.space_background(space="s") is None
    assert reads.sums == 2  # a small space is measured again: it may grow past the limit
    reads.n, reads.squared = 100, 100 + 0.25 * 100 * 99
    assert engine.space_background(space="s") == 0.25 and engine.space_background(space="s") == 0.25
    assert reads.sums == 3
    reads.generation, reads.squared = 2, 100 + 0.5 * 100 * 99
    assert engine.space_background(space="s") == 0.5 and reads.sums == 4
