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

A saved index can be mapped instead of read (:meth:`VectorIndex.view`): the first
search after a restart then reads the few pages of the graph it visits, not the whole
file (about 0.5 GB at 1M rows, ``docs/benchmarks.md``). A mapped graph cannot change, so
rows that move after it are kept beside it until it is copied into memory
(:meth:`VectorIndex.materialise`): rows removed are tombstoned (skipped by
:meth:`VectorIndex.query`), rows added are held as float32 vectors and scored exactly.

usearch (Apache-2.0) is imported on first use, always after onnxruntime (see
:func:`_usearch`); without it :func:`available` is False and callers keep the exact path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import StoreError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FRESH_ROWS", "SETTLE_ROWS", "TOMBSTONES", "VectorIndex", "available"]

#: Removed rows kept as tombstones (skipped by :meth:`VectorIndex.query`) before they
#: leave the graph in one batch (see :meth:`VectorIndex.remove`).
TOMBSTONES = 64
#: Rows that moved since a mapped graph was saved (added rows scored exactly beside it,
#: removed rows tombstoned) past which :attr:`VectorIndex.unsettled` asks its owner to
#: copy it into memory (:meth:`VectorIndex.materialise`) away from a search. The copy
#: costs about a load of the file and holds the GIL, so it waits for this many changes:
#: a restarted daemon that sees a few forgets and saves never pays it.
SETTLE_ROWS = 256
#: Rows that moved since a mapped graph was saved past which the change that crosses it
#: materialises the index itself (when the owner's copy did not come first). This bounds
#: the extra work of a search meanwhile: asking the graph for ``k`` plus up to this many
#: tombstones, and an exact scan of up to this many rows (under 1 ms at 384 dimensions).
FRESH_ROWS = 1024


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
        from bli_memory.core.memory.onnx_runtime import import_onnxruntime

        import_onnxruntime()  # must precede usearch, see above
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
        self._params: dict[str, Any] = {
            "ndim": dimensions, "metric": "cos", "dtype": quantisation, "connectivity": connectivity,
            "expansion_add": expansion_add, "expansion_search": expansion_search,
        }
        try:
            self._index: Any = Index(**self._params)
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
        # While a saved file is mapped (see view()): the mapped graph, its tombstones, and
        # the rows added since (seq -> float32 vector), stacked for scoring on demand.
        self._view: Any = None
        self._view_dead: set[int] = set()
        self._fresh: dict[int, np.ndarray] = {}
        self._fresh_rows: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        if self._view is not None:
            return int(len(self._view)) - len(self._view_dead) + len(self._fresh)
        return int(len(self._index)) - len(self._dead)

    @property
    def viewed(self) -> bool:
        """True while the index answers from a mapped saved file (see :meth:`view`)."""
        return self._view is not None

    @property
    def unsettled(self) -> bool:
        """True when a mapped index holds more than :data:`SETTLE_ROWS` rows that moved
        since it was saved: time to :meth:`materialise` it, away from a search."""
        return self._view is not None and len(self._view_dead) + len(self._fresh) > SETTLE_ROWS

    def _contains(self, keys: np.ndarray) -> np.ndarray:
        """Bool array: which ``keys`` (uint64) the index holds (tombstoned rows of an
        in-memory graph included until they leave it; a mapped graph's excluded)."""
        import numpy as np

        if self._view is None:
            return np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)
        held = np.asarray(self._view.contains(keys), dtype=bool).reshape(-1)
        dead, fresh = self._view_dead, self._fresh
        pairs = zip(keys.tolist(), held.tolist(), strict=True)
        return np.fromiter(((h and k not in dead) or k in fresh for k, h in pairs), dtype=bool,
                           count=len(keys))

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
        """Bytes held by the graph and its vectors, as usearch reports them (a mapped
        file's pages are counted by usearch as it maps them, and live in the page cache)."""
        if self._view is not None:
            return int(self._view.memory_usage) + len(self._fresh) * self.dimensions * 4
        return int(self._index.memory_usage)

    def add(self, seqs: np.ndarray, vectors: np.ndarray) -> None:
        """Insert rows (``seqs`` int64 (n,), ``vectors`` float32 (n, d)); existing seqs are skipped."""
        import numpy as np

        if not len(seqs):
            return
        keys = np.asarray(seqs, dtype=np.uint64)
        if self._view is not None:
            self._add_fresh(keys, vectors)
            return
        if self._dead and not self._dead.isdisjoint(int(k) for k in keys):
            self._flush()  # a tombstoned row comes back with a new vector
        present = self._contains(keys)
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
            self.remove(moved[self._contains(moved.astype(np.uint64))])
        self.add(np.asarray(live, dtype=np.int64), vectors)

    def _add_fresh(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Hold rows added to a mapped index beside it (rows it holds live are skipped)."""
        import numpy as np

        present = self._contains(keys)
        for key, vector in zip(keys[~present], np.asarray(vectors, dtype=np.float32)[~present], strict=True):
            self._fresh[int(key)] = vector.copy()
        self._fresh_rows = None
        if len(self._fresh) + len(self._view_dead) > FRESH_ROWS:
            self.materialise()

    def save(self, path: str) -> None:
        """Write the graph and its vectors to ``path`` (usearch's own format; not atomic:
        write to a temporary name and rename, as
        :mod:`bli_memory.core.embedded.side_index_files` does).

        A mapped index is copied into memory first (:meth:`materialise`).

        Raises:
            StoreError: usearch could not write the file.
        """
        self.materialise()
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
        self._drop_view()
        self.generation = None

    def view(self, path: str) -> None:
        """Answer from the index saved at ``path``, mapped read-only instead of read.

        Mapping costs what reading the header does; searches then read only the pages of
        the graph they visit (measured in ``docs/benchmarks.md``: at 1M rows the first
        search after a restart). Changes are kept beside the mapped graph until
        :meth:`materialise`. The file must not be changed in place while mapped: saved
        files are only ever replaced by renaming (a removed file stays readable while
        mapped).

        Raises:
            StoreError: the file is missing, truncated or not a usearch index of these
                dimensions.
        """
        try:
            mapped = _usearch().Index(**self._params)
            mapped.view(path)
        except (RuntimeError, ValueError, OSError) as exc:
            raise StoreError(f"cannot map the vector side index: {exc}") from exc
        if int(mapped.ndim) != self.dimensions:
            raise StoreError(f"the saved vector side index has {mapped.ndim} dimensions")
        self._index = _usearch().Index(**self._params)  # empty until materialise()
        self._dead.clear()
        self._drop_view()
        self._view = mapped
        self.generation = None

    def _drop_view(self) -> None:
        self._view = None
        self._view_dead = set()
        self._fresh = {}
        self._fresh_rows = None

    def materialise(self) -> None:
        """Copy a mapped index into memory and apply the rows that moved since it was
        saved, so it can change in place again (nothing to do when it is not mapped).

        Costs about what reading the file does (usearch holds the GIL meanwhile: do it
        away from a search, as :mod:`bli_memory.core.embedded.side_indexes` does).

        Raises:
            StoreError: usearch could not copy the mapped graph.
        """
        import numpy as np

        if self._view is None:
            return
        try:
            full = self._view.copy()
        except (RuntimeError, ValueError, MemoryError) as exc:
            raise StoreError(f"cannot copy the mapped vector side index: {exc}") from exc
        if self._view_dead:
            full.remove(np.fromiter(self._view_dead, dtype=np.uint64, count=len(self._view_dead)))
        fresh = self._fresh
        self._index, self._dead = full, set()
        self._drop_view()
        keys = np.asarray(full.keys, dtype=np.int64)
        self._max_seq = int(keys.max()) if len(keys) else 0
        if fresh:
            seqs = np.fromiter(fresh, dtype=np.int64, count=len(fresh))
            self.add(seqs, np.stack([fresh[int(s)] for s in seqs]))
        if len(full):
            probe = np.full(self.dimensions, self.dimensions ** -0.5, dtype=np.float32)
            full.search(probe, 1)  # absorbs the cost of the removals (see _flush)

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
        present = self._contains(keys)
        if self._view is not None:  # a mapped graph cannot change: tombstone, or drop a fresh row
            for key in (int(k) for k in keys[present]):
                if self._fresh.pop(key, None) is None:
                    self._view_dead.add(key)
            self._fresh_rows = None
            if len(self._fresh) + len(self._view_dead) > FRESH_ROWS:
                self.materialise()
            return
        self._dead.update(int(k) for k in keys[present])
        if len(self._dead) > TOMBSTONES:
            self._flush()

    def query(self, vector: np.ndarray, k: int) -> list[int]:
        """The ``k`` nearest seqs to a unit ``vector``, nearest first (approximate)."""
        k = min(int(k), len(self))
        if k <= 0:
            return []
        if self._view is not None:
            return self._query_view(vector, k)
        dead = self._dead
        matches = self._index.search(vector, min(k + len(dead), int(len(self._index))))
        return [int(s) for s in matches.keys if int(s) not in dead][:k]

    def _query_view(self, vector: np.ndarray, k: int) -> list[int]:
        """:meth:`query` of a mapped index: the graph's hits without its tombstones,
        merged by cosine distance with the fresh rows scored exactly."""
        import numpy as np

        dead, hits = self._view_dead, []
        if len(self._view) > len(dead):
            matches = self._view.search(vector, min(k + len(dead), int(len(self._view))))
            hits = [(float(d), int(s)) for s, d in zip(matches.keys, matches.distances, strict=True)
                    if int(s) not in dead]
        if self._fresh:
            if self._fresh_rows is None:
                seqs = np.fromiter(self._fresh, dtype=np.int64, count=len(self._fresh))
                self._fresh_rows = seqs, np.stack([self._fresh[int(s)] for s in seqs])
            seqs, rows = self._fresh_rows
            distances = 1.0 - rows @ np.asarray(vector, dtype=np.float32).reshape(-1)
            top = np.argsort(distances, kind="stable")[:k]
            hits.extend((float(distances[i]), int(seqs[i])) for i in top)
        hits.sort(key=lambda hit: hit[0])
        return [s for _, s in hits[:k]]

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
        self.materialise()
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
