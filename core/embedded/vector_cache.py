"""The in-process cache of a space's live vectors, refreshed when its write generation moves.
"""

from __future__ import annotations

from collections.abc import Sequence

from bli_memory.core.embedded.store_base import StoreBase
from bli_memory.core.embedded.vector_codec import VectorSet

__all__ = [
    "VectorCache",
]


class VectorCache(StoreBase):
    """The live vectors of spaces, cached per process."""

    def vectors(self, spaces: Sequence[str]) -> VectorSet:
        """Live vectors of these spaces, from the in-process cache when still current.

        The cache is checked against ``space_generation`` (one indexed read); new rows
        are appended incrementally, and a removal reloads the set.
        """
        import numpy as np

        key = tuple(sorted(spaces))
        marks = ",".join("?" * len(key))
        with self._read() as conn:
            self.require_model(conn)
            gens = dict(
                (r[0], (int(r[1]), int(r[2])))
                for r in conn.execute(
                    f"SELECT space, generation, removals FROM space_generation WHERE space IN ({marks})",
                    key,
                )
            )
            generation = tuple(gens.get(s, (0, 0)) for s in key)
            cached = self._vector_cache.get(key)
            if cached is not None and cached.generation == generation:
                return cached
            removals_same = cached is not None and all(
                a[1] == b[1] for a, b in zip(cached.generation, generation, strict=True)
            )
            since = cached.max_seq if (cached is not None and removals_same) else 0
            rows = conn.execute(
                f"SELECT seq, embedding FROM memories WHERE state = 'active' AND space IN ({marks}) "
                "AND seq > ? AND embedding IS NOT NULL AND embedding_model IS ? ORDER BY seq",
                (*key, since, self.model_name),
            ).fetchall()
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(
                len(rows), self.dimensions
            )
        else:
            matrix = np.zeros((0, self.dimensions), dtype=np.float32)
        if since and cached is not None:
            seqs = np.concatenate([cached.seqs, seqs])
            matrix = np.concatenate([cached.matrix, matrix]) if len(rows) else cached.matrix
        max_seq = int(seqs[-1]) if len(seqs) else 0
        vs = VectorSet(seqs=seqs, matrix=matrix, generation=generation, max_seq=max_seq)
        self._vector_cache[key] = vs
        return vs
