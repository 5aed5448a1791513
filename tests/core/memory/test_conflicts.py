"""Near-duplicate hits: flagged always, and the newer first where the pair stands side by side."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.paths import store_path


def test_the_newer_of_two_contradictory_saves_ranks_first(project: Path) -> None:
    backend = EmbeddedBackend(store_path())
    try:
        older = backend.save("User loves Chinese food", space="s1").memory
        time.sleep(0.01)
        newer = backend.save("User hates Chinese food", space="s1").memory
        backend.save("The frontend uses pnpm workspaces.", space="s1")
        query = "what does the user think of Chinese food?"
        default = backend.search(query, space="s1")
        flag_only = backend.search(query, space="s1",
                                   ranking=replace(RankingConfig(), near_duplicate_newer_first=False))
        off = backend.search(query, space="s1", ranking=replace(RankingConfig(), near_duplicate_cosine=2.0))
    finally:
        backend.close()
    assert [h.memory.id for h in default.hits[:2]] == [newer.id, older.id]
    assert [h.memory.id for h in flag_only.hits] == [h.memory.id for h in off.hits]
    assert [h.memory.id for h in flag_only.hits[:2]] == [older.id, newer.id]  # what the swap fixes
    assert [(c.newer, c.older) for c in default.conflicts] == [(newer.id, older.id)]
    assert off.conflicts == ()
