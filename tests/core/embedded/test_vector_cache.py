"""The vector cache follows writes in place: saves append, forgets and updates tombstone,
compaction drops tombstones; the matrix is never reloaded for a write."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bli_memory.core.embedded import vector_cache
from bli_memory.core.embedded.engine import EmbeddedBackend
from tests.core.embedded.rows import forget_row
from tests.core.embedded.side_store import SPACE, fill, unit_vectors


def test_saves_append_and_forgets_tombstone_without_a_reload(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 50)
    b = EmbeddedBackend(path)
    store = b.store
    first = store.vectors((SPACE,))
    assert first.size == 50 and first.alive is None

    fill(path, 3, seed=5, start=50)  # another process saves
    grown = store.vectors((SPACE,))
    assert grown.size == 53 and len(grown.seqs) == 53
    assert np.shares_memory(grown.matrix, first.matrix)  # appended into the same buffer
    assert np.array_equal(grown.matrix[:50], first.matrix)

    memory = store.get(rows[10][0])
    assert memory is not None
    forget_row(store, memory)
    after = store.vectors((SPACE,))
    assert np.shares_memory(after.matrix, first.matrix)
    assert after.size == 52 and after.alive is not None and not after.alive[10]
    assert after.position(int(after.seqs[10])) is None
    sims = after.similarities(rows[10][1])
    assert int(np.argmax(sims)) != 10 and sims[10] == -np.inf
    b.close()


def test_forgotten_rows_never_come_back_in_search(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    b = EmbeddedBackend(path)
    keep = b.save("The ledger backups run nightly at two.", space=SPACE).memory
    gone = b.save("The door code for the lab is zebra7731.", space=SPACE).memory
    assert b.search("lab door code", space=SPACE).hits[0].memory.id == gone.id
    b.forget(space=SPACE, id=gone.id)
    hits = b.search("lab door code", space=SPACE).hits
    assert gone.id not in [h.memory.id for h in hits]
    assert b.search("ledger backups", space=SPACE).hits[0].memory.id == keep.id
    b.close()


def test_compaction_drops_tombstones_and_a_reembedded_row_reloads(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 40)
    b = EmbeddedBackend(path)
    store = b.store
    store.vectors((SPACE,))
    share = vector_cache.COMPACT_SHARE
    for memory_id, _ in rows[: int(40 * share) + 1]:
        memory = store.get(memory_id)
        assert memory is not None
        forget_row(store, memory)
    compacted = store.vectors((SPACE,))
    assert compacted.alive is None and compacted.size == len(compacted.seqs) == 40 - int(40 * share) - 1
    live_ids = {m for m, _ in rows[int(40 * share) + 1 :]}
    assert set(store.rows_by_seq([int(s) for s in compacted.seqs]).keys()) == {int(s) for s in compacted.seqs}
    assert len(live_ids) == compacted.size

    # A cached row given a new vector (audit repair, reembed) cannot be patched by an
    # append: the set is read again, with the new vector.
    seq = int(compacted.seqs[0])
    new = unit_vectors(1, 99)[0]
    store.integrity.set_vector(seq, new)
    again = store.vectors((SPACE,))
    assert not np.shares_memory(again.matrix, compacted.matrix)
    assert np.allclose(again.matrix[again.position(seq)], new)
    b.close()
