"""The space background and the injection gate's two bars, on a real store file."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.memory import relevance
from bli_memory.core.memory.relevance import DIVERSE_BACKGROUND, DIVERSE_THRESHOLD, GATE_THRESHOLD, decide
from bli_memory.core.models import Memory, SearchHit

UNLIKE_TEXTS = Path(__file__).resolve().parents[2] / "data" / "unlike_texts.txt"


def _texts(n: int, *, alike: bool) -> list[str]:
    if alike:  # conversation turns of two people on the same few subjects
        return [f"[2023-05-{1 + i % 28:02d}] Caroline: I went hiking with Melanie again, day {i}."
                for i in range(n)]
    # Short texts on many subjects, the same on every CPython (tests/data/unlike_texts.txt).
    lines = UNLIKE_TEXTS.read_text(encoding="utf-8").splitlines()
    out = [line for line in lines if line and not line.startswith("#")]
    assert len(out) >= n
    return out[:n]


def test_background_is_the_mean_pairwise_cosine_and_follows_writes(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "memory.sqlite3")
    try:
        ids = [backend.save(t, space="s").memory.id for t in _texts(relevance.SMALL_SPACE, alike=False)]
        vectors = backend.store.vectors(backend.store.resolve_space("s")[1])
        m = vectors.matrix[: vectors.size]
        pairs = [float(m[i] @ m[j]) for i, j in itertools.combinations(range(len(m)), 2)]
        background = backend.space_background(space="s")
        assert background is not None and abs(background - float(np.mean(pairs))) < 1e-5
        backend.forget(id=ids[0], space="s")
        assert backend.space_background(space="s") is None  # below SMALL_SPACE once a row left
        assert backend.space_background(space="empty") is None
    finally:
        backend.close()


def test_chat_turns_and_project_notes_fall_on_either_side_of_the_cut(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "memory.sqlite3")
    try:
        for t in _texts(120, alike=True):
            backend.save(t, space="chat")
        for t in _texts(120, alike=False):
            backend.save(t, space="notes")
        chat, notes = backend.space_background(space="chat"), backend.space_background(space="notes")
        assert chat is not None and notes is not None
        assert chat > DIVERSE_BACKGROUND > notes, (chat, notes)
    finally:
        backend.close()


def _hit(similarity: float) -> SearchHit:
    memory = Memory(id="00000000-0000-4000-8000-000000000001", space="s", content="We deploy on Fridays.",
                    created_at="2026-11-30T10:00:00.000000Z", updated_at="2026-11-30T10:00:00.000000Z")
    return SearchHit(memory=memory, similarity=similarity, score=1.0, channels=("vector",))


def test_a_space_of_unlike_texts_needs_the_higher_bar() -> None:
    # z between the two bars: passes in a conversation space, not in a space of unlike texts.
    b, w_top, w_cover = relevance.GATE_WEIGHTS
    coverage = 0.5
    top = ((GATE_THRESHOLD + DIVERSE_THRESHOLD) / 2 - b - w_cover * coverage) / w_top
    hits = [_hit(top)]
    dense = decide(hits, coverage=coverage, limit=5, background=DIVERSE_BACKGROUND + 0.2)
    diverse = decide(hits, coverage=coverage, limit=5, background=DIVERSE_BACKGROUND - 0.2)
    unknown = decide(hits, coverage=coverage, limit=5, background=None)
    assert dense.reason == "relevant" and dense.threshold == GATE_THRESHOLD
    assert unknown.reason == "relevant"
    assert diverse.reason == "below_threshold" and not diverse.inject
    assert diverse.threshold == DIVERSE_THRESHOLD
    # Higher still, it passes there too.
    top_high = (DIVERSE_THRESHOLD + 0.5 - b - w_cover * coverage) / w_top
    assert decide([_hit(top_high)], coverage=coverage, limit=5,
                  background=DIVERSE_BACKGROUND - 0.2).reason == "relevant"


def test_a_replaced_store_file_is_measured_again(tmp_path: Path) -> None:
    """The background is kept until the space changes; a file replaced under a running
    backend (a restore) is another space, even with as many memories and writes."""
    import os

    first, second = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"
    alike, unlike = EmbeddedBackend(first), EmbeddedBackend(second)
    try:
        for a, b in zip(_texts(relevance.SMALL_SPACE, alike=True), _texts(relevance.SMALL_SPACE, alike=False),
                        strict=True):
            alike.save(a, space="s")
            unlike.save(b, space="s")
        before, other = alike.space_background(space="s"), unlike.space_background(space="s")
        assert before is not None and other is not None and abs(before - other) > 0.1
        unlike.close()
        alike.store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the old file's log emptied
        os.replace(second, first)
        after = alike.space_background(space="s")
        assert after is not None and abs(after - other) < 1e-9
    finally:
        alike.close()
