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
    index = vector_index.VectorIndex(32, quantisation="f32", threads=1)
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
    index = vector_index.VectorIndex(32, threads=1)
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
    index = vector_index.VectorIndex(32, quantisation="f32", threads=1)
    index.add(seqs, vectors)
    index.remove(seqs[:10])
    assert len(index) == 390 and len(index._index) == 400  # tombstoned, still in the graph
    for i in range(10):
        assert int(seqs[i]) not in index.query(vectors[i], 5)
    # Asked for every live row, the tombstones do not eat into the answer. HNSW is
    # approximate, so a few rows may be out of reach; built on one thread (threads=1) the
    # graph, and so the answer, is the same on every run.
    every = index.query(vectors[20], 390)
    assert len(every) >= 385 and not set(every) & set(seqs[:10].tolist())
    index.add(seqs[:1], vectors[1:2])  # a tombstoned row comes back with a new vector
    assert len(index) == 391 and index.query(vectors[1], 1) == [1]
    index.remove(seqs[100 : 100 + vector_index.TOMBSTONES + 1])
    assert len(index._index) == len(index) == 391 - vector_index.TOMBSTONES - 1  # one batch


def _saved(tmp_path, n: int = 400, d: int = 32):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(6)
    vectors = _unit(rng, n, d)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    built = vector_index.VectorIndex(d, quantisation="f32", threads=1)
    built.add(seqs, vectors)
    path = str(tmp_path / "saved.usearch")
    built.save(path)
    return path, seqs, vectors, rng


def test_a_mapped_index_answers_and_keeps_changes_beside_the_graph(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path, seqs, vectors, rng = _saved(tmp_path)
    index = vector_index.VectorIndex(32, quantisation="f32", threads=1)
    index.view(path)
    assert index.viewed and len(index) == 400
    assert index.query(vectors[3], 1) == [4]
    # Removed rows are skipped at once; rows added (new, or a removed row's new vector)
    # are found by exact score beside the mapped graph, which never changes.
    index.apply(np.asarray([7], dtype=np.int64), vectors[100:101], np.asarray([1, 2, 999], dtype=np.int64))
    new = _unit(rng, 3)
    index.add(np.asarray([401, 402, 403], dtype=np.int64), new)
    index.add(np.asarray([5], dtype=np.int64), new[:1])  # a live row of the graph: skipped
    assert index.viewed and len(index) == 401
    assert 1 not in index.query(vectors[0], 10) and 2 not in index.query(vectors[1], 10)
    assert index.query(new[1], 1) == [402]
    assert set(index.query(vectors[100], 2)) == {7, 101}  # row 7 now has row 101's vector
    assert 7 not in index.query(vectors[6], 5)
    index.remove(np.asarray([402], dtype=np.int64))
    assert 402 not in index.query(new[1], 5) and len(index) == 400
    assert not index.unsettled

    # Copied into memory with its changes: the same answers, and a save holds them.
    before = [set(index.query(v, 5)) for v in vectors[:50]]  # sets: rows 7 and 101 tie
    index.materialise()
    assert not index.viewed and len(index) == len(index._index) == 400
    assert [set(index.query(v, 5)) for v in vectors[:50]] == before
    again = str(tmp_path / "again.usearch")
    index.save(again)
    reread = vector_index.VectorIndex(32, quantisation="f32", threads=1)
    reread.load(again)
    assert len(reread) == 400 and reread.query(new[0], 1) == [401] and 1 not in reread.query(vectors[0], 5)


def test_a_mapped_index_asks_to_be_copied_then_copies_itself(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path, seqs, vectors, _ = _saved(tmp_path)
    index = vector_index.VectorIndex(32, quantisation="f32", threads=1)
    index.view(path)
    index.remove(seqs[: vector_index.SETTLE_ROWS + 1] if vector_index.SETTLE_ROWS < 399 else seqs[:1])
    assert index.unsettled and index.viewed
    assert not set(index.query(vectors[0], 10)) & set(seqs[:10].tolist())
    extra = _unit(np.random.default_rng(8), vector_index.FRESH_ROWS)
    index.add(np.arange(10_000, 10_000 + len(extra), dtype=np.int64), extra)  # past FRESH_ROWS
    assert not index.viewed and not index.unsettled
    assert len(index) == len(index._index) == 400 - vector_index.SETTLE_ROWS - 1 + len(extra)
    assert index.query(extra[9], 1) == [10_009]


def test_a_save_put_in_place_of_the_mapped_file_does_not_disturb_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    path, seqs, vectors, _ = _saved(tmp_path)
    index = vector_index.VectorIndex(32, quantisation="f32", threads=1)
    index.view(path)
    os.unlink(path)  # another process's save swept the file this one maps
    assert index.query(vectors[10], 1) == [11]
    index.materialise()
    assert index.query(vectors[10], 1) == [11] and len(index) == 400


@pytest.mark.parametrize("damage", ["missing", "truncated", "zeros"])
def test_a_file_that_cannot_be_mapped_is_a_clear_error(tmp_path, damage: str) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from bli_memory.core.errors import StoreError

    path, _, _, _ = _saved(tmp_path)
    data = Path(path)
    if damage == "missing":
        data.unlink()
    elif damage == "truncated":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    else:
        data.write_bytes(b"\0" * data.stat().st_size)
    index = vector_index.VectorIndex(32, quantisation="f32", threads=1)
    with pytest.raises(StoreError, match="cannot map"):
        index.view(path)
    assert not index.viewed and len(index) == 0
