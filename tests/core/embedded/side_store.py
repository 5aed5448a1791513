"""Stores of many rows for the side-index tests, written fast through the store's own insert.

Rows carry random unit vectors (no model run), so tests can ask the vector side index
directly with a row's own vector and expect that row first.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.models import Memory

SPACE = "side_store"
DIMENSIONS = 384


def unit_vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, DIMENSIONS)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def fill(path: Path, n: int, *, seed: int = 1, start: int = 0) -> list[tuple[str, np.ndarray]]:
    """Insert ``n`` rows ``"row <i>"`` into ``SPACE``; returns ``[(id, vector), ...]``."""
    backend = EmbeddedBackend(path)
    vectors = unit_vectors(n, seed)
    out = []
    with backend.store.writing(SPACE) as w:
        for i in range(n):
            m = Memory(id=str(uuid.uuid4()), space=SPACE, content=f"row {start + i} of the side store",
                       source="import", created_at=w.at, updated_at=w.at)
            w.insert(m, vectors[i])
            out.append((m.id, vectors[i]))
    backend.close()
    return out


def indexed(path: Path) -> EmbeddedBackend:
    """An engine with the vector side index on from 0 rows (keyword index off), built in the search."""
    backend = EmbeddedBackend(path, keyword_index_min_rows=10**9, vector_index_min_rows=0)
    backend.enable_side_indexes(background=False)
    return backend


def nearest(backend: EmbeddedBackend, vector: np.ndarray, k: int = 5) -> list[str]:
    """Ids of the ``k`` rows the vector side index finds nearest to ``vector``."""
    side: Any = backend.side_indexes
    vs = backend.store.vectors((SPACE,))
    seqs = side.vector_query((SPACE,), vs, vector, k)
    assert seqs is not None, "the vector side index did not answer"
    with backend.store._read() as conn:
        marks = ",".join("?" * len(seqs))
        by_seq = dict(conn.execute(f"SELECT seq, id FROM memories WHERE seq IN ({marks})", seqs).fetchall())
    return [by_seq[s] for s in seqs if s in by_seq]


def keyword_engine(path: Path) -> EmbeddedBackend:
    """An engine whose keyword side index answers from the first row (no vector index)."""
    backend = EmbeddedBackend(path, keyword_index_min_rows=0, vector_index_min_rows=10**9)
    backend.enable_side_indexes(background=False)
    return backend


def keyword_ids(backend: EmbeddedBackend, word: str) -> list[str]:
    """Ids the keyword side index itself answers for ``word`` (it must answer)."""
    from bli_memory.core.memory.terms import query_forms, query_terms

    vs = backend.store.vectors((SPACE,))
    seqs = backend.side_indexes.keyword_query(  # type: ignore[union-attr]
        (SPACE,), vs, query_forms(query_terms(word)), 10, every=True)
    assert seqs is not None, "the keyword side index did not answer"
    rows = backend.store.rows_by_seq(seqs)
    return [rows[s].id for s in seqs if s in rows]
