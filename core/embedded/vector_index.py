"""An approximate nearest-neighbour side index over a space's vectors (HNSW, usearch).

The memory table stays the source of truth: every vector lives in its row, and
exact numpy scoring over the cached matrix is the default. Past some tens of
thousands of rows per space that exact scan stops fitting a prompt hook's budget
(``docs/benchmarks.md``: p50 ~9 ms at 100k, ~80 ms at 1M on 2 cores), so this module
keeps an HNSW graph (Malkov & Yashunin, 2018) keyed by the row's ``seq`` beside it.

The index is derived data: :meth:`VectorIndex.sync` brings it level with the live
vector set the store hands out (:class:`bli_memory.core.embedded.store.VectorSet`), adding
rows it has not seen and dropping rows that left the live set, so it can be rebuilt
from SQLite at any time and is never trusted over it. Hits it returns are re-scored
exactly by the caller from the matrix it came from.

usearch (Apache-2.0) is imported on first use, always after onnxruntime (see
:func:`_usearch`); without it :func:`available` is False and callers keep the exact path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import StoreError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TOMBSTONES", "VectorIndex", "available"]

#: Removed rows kept as tombstones (skipped by :meth:`VectorIndex.query`) before they
#: leave the graph in one batch (see :meth:`VectorIndex.remove`).
TOMBSTONES = 64


def _usearch() -> Any:
    """Import and return ``usearch.index``, after onnxruntime.

    Measured here (usearch 2.26.6 with numkong 7.8.6, onnxruntime 1.32.0, x86-64):
    importing onnxruntime *after* usearch kills the process with a segmentation fault,
    while the other order works. The embedder needs onnxruntime in every process that
    searches, so it is imported first, always.

    Raises:
        ImportError: usearch is not installed.
    """
    try:
        import onnxruntime  # noqa: F401  (must precede usearch, see above)
    except ImportError:
        pass
    import usearch.index

    return usearch.index


def available() -> bool:
    """True when usearch can be imported."""
    try:
        _usearch()
    except ImportError:
        return False
    return True


class VectorIndex:
    """HNSW index of unit vectors keyed by row ``seq`` (cosine).

    Args:
        dimensions: Vector length (384 for the shipped model).
        quantisation: Scalar type of the stored vectors: ``"i8"`` (default; 4x smaller
            than float32, recall measured in ``docs/benchmarks.md``), ``"f16"`` or ``"f32"``.
        connectivity: HNSW ``M``, edges per node (usearch default 16).
        expansion_add: Candidate list size while inserting (``efConstruction``).
        expansion_search: Candidate list size while searching (``ef``); raise it for
            recall, lower it for speed.
        threads: Threads used by bulk adds (0 = all cores).

    Raises:
        StoreError: usearch is not installed or rejects the parameters.
    """

    def __init__(
        self,
        dimensions: int,
        *,
        quantisation: str = "i8",
        connectivity: int = 16,
        expansion_add: int = 64,
        expansion_search: int = 128,
        threads: int = 0,
    ) -> None:
        try:
            Index = _usearch().Index
        except ImportError as exc:
            hint = 'pip install "bli-memory-mcp[scale]"'
            raise StoreError(f"the vector side index needs usearch: {hint}") from exc
        try:
            self._index: Any = Index(
                ndim=dimensions, metric="cos", dtype=quantisation, connectivity=connectivity,
                expansion_add=expansion_add, expansion_search=expansion_search,
            )
        except (ValueError, RuntimeError) as exc:
            raise StoreError(f"usearch rejected the index parameters: {exc}") from exc
        self.dimensions = dimensions
        self.threads = threads
        #: Generation of the vector set last synced (see :meth:`sync`).
        self.generation: Any = None
        #: ``(epoch, write_seq)`` of the store this index is level with, or None
        #: (see :mod:`bli_memory.core.embedded.side_indexes`).
        self.mark: tuple[int, int] | None = None
        self._max_seq = 0
        self._dead: set[int] = set()

    def __len__(self) -> int:
        return int(len(self._index)) - len(self._dead)

    def _flush(self) -> None:
        """Remove tombstoned keys from the graph, then search once, so the work usearch
        does in the first search after a removal is done here, not in a prompt's search."""
        import numpy as np

        if self._dead:
            self._index.remove(np.fromiter(self._dead, dtype=np.uint64, count=len(self._dead)))
            self._dead.clear()
            if len(self._index):
                probe = np.full(self.dimensions, self.dimensions ** -0.5, dtype=np.float32)
                self._index.search(probe, 1)

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the graph and its vectors, as usearch reports them."""
        return int(self._index.memory_usage)

    def add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        """Insert rows (``seqs`` int64 (n,), ``vectors`` float32 (n, d)); existing seqs are skipped."""
        import numpy as np

        if not len(seqs):
            return
        keys = np.asarray(seqs, dtype=np.uint64)
        if self._dead and not self._dead.isdisjoint(int(k) for k in keys):
            self._flush()  # a tombstoned row comes back with a new vector
        present = np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)
        if present.any():
            keys, vectors = keys[~present], vectors[~present]
        for lo in range(0, len(keys), 50_000):  # bounded copies of a large (masked) matrix
            part = keys[lo : lo + 50_000]
            self._index.add(part, np.ascontiguousarray(vectors[lo : lo + 50_000], dtype=np.float32),
                            threads=self.threads)
        if len(keys):
            self._max_seq = max(self._max_seq, int(keys.max()))

    def apply(self, live: np.ndarray, vectors: np.ndarray, gone: np.ndarray) -> None:
        """Apply rows that moved: ``live`` seqs (int64 (n,), re-indexed with ``vectors``
        float32 (n, d): added, or replaced when already present) and ``gone`` seqs
        (removed). Cost: O(rows moved)."""
        import numpy as np

        moved = np.concatenate([np.asarray(live, dtype=np.int64), np.asarray(gone, dtype=np.int64)])
        if len(moved):
            keys = moved.astype(np.uint64)
            present = np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)
            self.remove(moved[present])
        self.add(np.asarray(live, dtype=np.int64), vectors)

    def save(self, path: str) -> None:
        """Write the graph and its vectors to ``path`` (usearch's own format; not atomic:
        write to a temporary name and rename, as
        :mod:`bli_memory.core.embedded.side_index_files` does).

        Raises:
            StoreError: usearch could not write the file.
        """
        self._flush()
        try:
            self._index.save(path)
        except (RuntimeError, ValueError, OSError) as exc:
            raise StoreError(f"cannot save the vector side index: {exc}") from exc

    def load(self, path: str) -> None:
        """Replace this index's content with the one saved at ``path``.

        Raises:
            StoreError: the file is missing, truncated or not a usearch index of these
                dimensions.
        """
        import numpy as np

        try:
            self._index.load(path)
        except (RuntimeError, ValueError, OSError) as exc:
            raise StoreError(f"cannot load the vector side index: {exc}") from exc
        if int(self._index.ndim) != self.dimensions:
            raise StoreError(f"the saved vector side index has {self._index.ndim} dimensions")
        keys = np.asarray(self._index.keys, dtype=np.int64)
        self._max_seq = int(keys.max()) if len(keys) else 0
        self._dead.clear()
        self.generation = None

    def remove(self, seqs: np.ndarray) -> None:
        """Drop rows by seq (unknown seqs are ignored).

        Rows are tombstoned: :meth:`query` skips them at once, and they leave the graph
        in one batch once :data:`TOMBSTONES` are pending. Measured here on a 200k-row
        index: a removal costs the next usearch search 10-28 ms whatever its size (the
        search itself takes 0.5 ms), so removing on every forget would put that cost on
        the search after each one; asking for ``k`` plus the pending tombstones costs
        nothing measurable at 64.
        """
        import numpy as np

        if not len(seqs):
            return
        keys = np.asarray(seqs, dtype=np.uint64)
        present = np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)
        self._dead.update(int(k) for k in keys[present])
        if len(self._dead) > TOMBSTONES:
            self._flush()

    def query(self, vector: np.ndarray, k: int) -> list[int]:
        """The ``k`` nearest seqs to a unit ``vector``, nearest first (approximate)."""
        k = min(int(k), len(self))
        if k <= 0:
            return []
        dead = self._dead
        matches = self._index.search(vector, min(k + len(dead), int(len(self._index))))
        return [int(s) for s in matches.keys if int(s) not in dead][:k]

    def sync(self, seqs: np.ndarray, matrix: np.ndarray, generation: Any = None) -> None:
        """Bring the index level with a live vector set (rows sorted by seq).

        New rows (seq above the last seen) are added; when the set lost rows (an
        update, forget or purge) the keys no longer live are removed. Cost: nothing
        when ``generation`` is unchanged, O(new rows) when rows were only added, one
        pass over the keys otherwise.

        Args:
            seqs: Live seqs, ascending (``VectorSet.seqs``).
            matrix: Their vectors (``VectorSet.matrix``).
            generation: The vector set's generation stamp, remembered to skip no-op syncs.
        """
        import numpy as np

        if generation is not None and generation == self.generation:
            return
        self._flush()
        start = int(np.searchsorted(seqs, self._max_seq, side="right"))
        if len(self) + (len(seqs) - start) != len(seqs):
            live = np.asarray(seqs, dtype=np.uint64)
            keys = np.asarray(self._index.keys, dtype=np.uint64)
            gone = np.setdiff1d(keys, live, assume_unique=True)
            self.remove(gone)
            missing = ~np.asarray(self._index.contains(live), dtype=bool).reshape(-1)
            self.add(seqs[missing], matrix[missing])
        else:
            self.add(seqs[start:], matrix[start:])
        self.generation = generation
