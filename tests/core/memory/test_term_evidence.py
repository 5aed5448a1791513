"""Term weights for the injection gate: idf from a real store, and what the two features say."""

from __future__ import annotations

import math
from pathlib import Path

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.memory.relevance import unseen_share
from bli_memory.core.memory.term_evidence import hit_coverage, idf
from bli_memory.core.models import Memory, SearchHit


def _hit(content: str) -> SearchHit:
    memory = Memory(
        id="00000000-0000-4000-8000-000000000001",
        space="s",
        content=content,
        created_at="2026-11-30T10:00:00.000000Z",
        updated_at="2026-11-30T10:00:00.000000Z",
    )
    return SearchHit(memory=memory, similarity=0.5, score=1.0, channels=("vector",))


def test_idf_is_near_zero_for_a_word_in_every_memory_and_largest_for_an_absent_one() -> None:
    assert idf(100, 100) < 0.01
    assert idf(0, 100) > idf(1, 100) > idf(50, 100) > idf(100, 100) >= 0
    assert math.isclose(idf(0, 0), math.log(2))


def test_an_absent_rare_word_outweighs_common_words_a_hit_shares() -> None:
    # "return" and "file" are in every memory; "struct" is in none.
    counts = [("return", 200), ("file", 200), ("struct", 0)]
    hit = [_hit("Return the file object.")]
    assert unseen_share([True, True, False], 200) < 0.34  # counted alike, it looks at home
    assert hit_coverage(counts, 200, hit) < 0.05  # weighed by rarity, it is not
    # a small space says little by what a hit lacks: the shortfall scales with size / 100
    small = hit_coverage(counts, 50, hit, small_space=100)
    assert math.isclose(1 - small, (1 - hit_coverage(counts, 50, hit)) / 2)
    assert hit_coverage(counts, 500, hit, small_space=100) == hit_coverage(counts, 500, hit)


def test_coverage_counts_the_telling_words_a_hit_shares_not_the_common_ones() -> None:
    counts = [("return", 200), ("parser", 3)]
    common_only = hit_coverage(counts, 200, [_hit("Return the file object.")])
    telling = hit_coverage(counts, 200, [_hit("Return the file object."), _hit("The parsers of the config.")])
    assert common_only < 0.05 and telling > 0.95  # "parsers" stems to the prompt's "parser"
    assert hit_coverage(counts, 200, []) == 0.0


def test_term_frequencies_count_live_memories_of_the_space_only(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "memory.sqlite3")
    try:
        ids = [backend.save(f"The parser reads config file {n}.", space="a").memory.id for n in range(4)]
        backend.save("The parser of another project.", space="b")
        backend.forget(id=ids[0], space="a")
        counts, size = backend.term_frequencies("parsers of the config, and Rome", space="a")
        assert size == 3
        assert counts == [("parsers", 3), ("config", 3), ("rome", 0)]
    finally:
        backend.close()
