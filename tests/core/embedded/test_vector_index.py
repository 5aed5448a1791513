"""The HNSW side index: kept level with a live vector set, close to exact search."""

from __future__ import annotations

import numpy as np
import pytest

from bli_memory.core.embedded import vector_index

pytestmark = pytest.mark.skipif(not vector_index.available(), reason="usearch is not installed")


def _unit(rng: np.random.Generator, n: int, d: int = 32) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_sync_adds_new_rows_and_drops_rows_that_left() -> None:
    rng = np.random.default_rng(3)
    vectors = _unit(rng, 300)
    seqs = np.arange(1, 301, dtype=np.int64) * 2
    index = vector_index.VectorIndex(32, quantisation="f32")
    index.sync(seqs[:200], vectors[:200], generation=(1,))
    assert len(index) == 200
    index.sync(seqs, vectors, generation=(2,))  # rows appended
    assert len(index) == 300
    keep = np.ones(300, dtype=bool)
    keep[[5, 50, 250]] = False  # rows forgotten or superseded
    index.sync(seqs[keep], vectors[keep], generation=(3,))
    assert len(index) == 297
    for gone in seqs[~keep]:
        found = index.query(vectors[int(np.flatnonzero(seqs == gone)[0])], 5)
        assert int(gone) not in found
    # Live rows find themselves among their nearest (HNSW is approximate: demand 95%).
    live = np.flatnonzero(keep)
    found = sum(int(seqs[i]) in index.query(vectors[i], 3) for i in live[:100])
    assert found >= 95


def test_same_generation_is_a_no_op_and_recall_is_close_to_exact() -> None:
    rng = np.random.default_rng(4)
    vectors = _unit(rng, 2000)
    seqs = np.arange(10, 2010, dtype=np.int64)
    index = vector_index.VectorIndex(32)
    index.sync(seqs, vectors, generation=(7,))
    index.sync(seqs[:10], vectors[:10], generation=(7,))  # unchanged generation: ignored
    assert len(index) == 2000
    queries = _unit(rng, 50)
    overlap = []
    for q in queries:
        exact = set(seqs[np.argsort(-(vectors @ q))[:10]].tolist())
        overlap.append(len(exact & set(index.query(q, 10))) / 10)
    assert np.mean(overlap) > 0.8
    assert index.query(queries[0], 0) == []


def test_removed_rows_are_skipped_at_once_and_leave_the_graph_in_batches() -> None:
    rng = np.random.default_rng(5)
    vectors = _unit(rng, 400)
    seqs = np.arange(1, 401, dtype=np.int64)
    index = vector_index.VectorIndex(32, quantisation="f32")
    index.add(seqs, vectors)
    index.remove(seqs[:10])
    assert len(index) == 390 and len(index._index) == 400  # tombstoned, still in the graph
    for i in range(10):
        assert int(seqs[i]) not in index.query(vectors[i], 5)
    # Asked for every live row, the tombstones do not eat into the answer (HNSW is
    # approximate and its build is threaded, so a few rows may be out of reach).
    every = index.query(vectors[20], 390)
    assert len(every) >= 385 and not set(every) & set(seqs[:10].tolist())
    index.add(seqs[:1], vectors[1:2])  # a tombstoned row comes back with a new vector
    assert len(index) == 391 and index.query(vectors[1], 1) == [1]
    index.remove(seqs[100 : 100 + vector_index.TOMBSTONES + 1])
    assert len(index._index) == len(index) == 391 - vector_index.TOMBSTONES - 1  # one batch
