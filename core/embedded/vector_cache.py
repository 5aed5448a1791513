"""The in-process cache of a space's live vectors, kept level with the store's write sequence.

A write never reloads the cached matrix: rows saved since the cache was read are
appended into spare capacity, rows that left the live set (update, forget) are
tombstoned in place (a False in :attr:`VectorSet.alive`), and the matrix is compacted
once tombstones pass a quarter of it. A purge reads the set again from the table, so no
copy of the purged vector (in memory or in a mapped saved matrix) is kept. Which rows
moved is read from the write sequence (``memories.write_seq``, ``memory_removals``; see
:func:`bli_memory.core.embedded.migrations.m008_write_sequence`). At 1M rows a reload
read 1.5 GB of blobs (4-11 s, ``docs/benchmarks.md``); an in-place update reads the rows
that moved.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from bli_memory.core.embedded.store_base import StoreBase
from bli_memory.core.embedded.vector_codec import VectorSet

__all__ = [
    "COMPACT_SHARE",
    "VectorCache",
]

#: Share of tombstoned rows past which the cached matrix is compacted (one copy of the
#: live rows). A quarter keeps the scan's wasted work and memory below a third.
COMPACT_SHARE = 0.25
#: Changes since the cache was read past which a full reload is cheaper than applying
#: them one by one (share of the cached rows, at least 10,000 rows).
_RELOAD_SHARE = 0.25


#: Rows that moved are found by the write sequence, never by a scan of the space: left to
#: itself SQLite picks the (space, state, seq) index, which reads every row of the space.
_BY_WRITE_SEQ = "INDEXED BY memories_write_seq"


class _Growing:
    """Append-only buffers of one set of spaces: seqs, vectors, live mask, with spare rows."""

    def __init__(self, seqs: Any, matrix: Any, n: int, write_seq: int, epoch: int) -> None:
        import numpy as np

        self.n = n
        self.seqs = seqs
        self.matrix = matrix
        self.alive = np.ones(len(seqs), dtype=bool)
        self.dead = 0
        self.write_seq = write_seq
        self.epoch = epoch

    def snapshot(self) -> VectorSet:
        n = self.n
        max_seq = int(self.seqs[n - 1]) if n else 0
        return VectorSet(seqs=self.seqs[:n], matrix=self.matrix[:n], write_seq=self.write_seq,
                         max_seq=max_seq, alive=self.alive[:n] if self.dead else None,
                         epoch=self.epoch, size=n - self.dead)

    def append(self, seqs: Any, matrix: Any) -> None:
        """Add rows (seqs above every cached seq), growing capacity by an eighth when full."""
        import numpy as np

        k = len(seqs)
        if not k:
            return
        if self.n + k > len(self.seqs):
            cap = self.n + k + max(1024, (self.n + k) // 8)
            grown = np.empty((cap, matrix.shape[1]), dtype=np.float32)
            grown[: self.n] = self.matrix[: self.n]
            self.matrix = grown
            self.seqs = np.concatenate([self.seqs[: self.n], np.empty(cap - self.n, dtype=np.int64)])
            self.alive = np.concatenate([self.alive[: self.n], np.ones(cap - self.n, dtype=bool)])
        self.seqs[self.n : self.n + k] = seqs
        self.matrix[self.n : self.n + k] = matrix
        self.alive[self.n : self.n + k] = True
        self.n += k

    def tombstone(self, seqs: Sequence[int]) -> None:
        """Mark cached rows as gone (unknown seqs are ignored)."""
        import numpy as np

        if not seqs or not self.n:
            return
        want = np.asarray(sorted(seqs), dtype=np.int64)
        pos = np.searchsorted(self.seqs[: self.n], want)
        pos = pos[pos < self.n]
        pos = pos[np.isin(self.seqs[pos], want) & self.alive[pos]]
        self.alive[pos] = False
        self.dead += len(pos)

    def compact(self) -> None:
        """Drop tombstoned rows (one copy of the live rows into new buffers)."""
        keep = self.alive[: self.n]
        self.seqs = self.seqs[: self.n][keep]
        self.matrix = self.matrix[: self.n][keep]
        self.n = len(self.seqs)
        self.alive = keep[keep].copy()  # all True; the next append grows every buffer
        self.dead = 0


class VectorCache(StoreBase):
    """The live vectors of spaces, cached per process."""

    #: ``(spaces, write_seq, epoch) -> (seqs, matrix, rows, saved write_seq) | None``: the
    #: saved matrix of long-lived processes
    #: (:meth:`~bli_memory.core.embedded.side_indexes.SideIndexes.load_matrix`), or None.
    saved_vectors: Any = None

    @staticmethod
    def _sequence(conn: sqlite3.Connection) -> tuple[int, int]:
        """``(write_seq, side_index_epoch)`` of the store."""
        row = conn.execute(
            "SELECT (SELECT value FROM write_sequence WHERE id = 1), "
            "(SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'side_index_epoch')"
        ).fetchone()
        return int(row[0] or 0), int(row[1] or 0)

    def write_sequence(self) -> tuple[int, int]:
        """``(write_seq, epoch)``: the store's write sequence and its side-index epoch.

        ``write_seq`` grows with every row change (see
        :func:`~bli_memory.core.embedded.migrations.m008_write_sequence`); derived data
        stamped with both is current when both are unchanged.
        """
        with self._read() as conn:
            return self._sequence(conn)

    def changes(self, spaces: Sequence[str], since: int) -> tuple[list[int], list[int]]:
        """Rows of ``spaces`` changed after write sequence ``since``.

        Returns:
            ``(live, gone)``: seqs now live with a vector of this store's model (added,
            or changed and still live: re-index them), and seqs that left the live set
            or were deleted. Both ascending; a seq is in at most one.
        """
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = sorted(conn.execute(
                "SELECT seq, state = 'active' AND embedding IS NOT NULL AND embedding_model IS ? "
                f"FROM memories {_BY_WRITE_SEQ} WHERE write_seq > ? AND space IN ({marks})",
                (self.model_name, since, *spaces),
            ).fetchall())
            purged = conn.execute(
                f"SELECT seq FROM memory_removals WHERE write_seq > ? AND space IN ({marks})",
                (since, *spaces),
            ).fetchall()
        live = [int(s) for s, ok in rows if ok]
        gone = sorted({int(s) for s, ok in rows if not ok} | {int(r[0]) for r in purged})
        return live, gone

    def purged_since(self, spaces: Sequence[str], since: int) -> bool:
        """True when a row of ``spaces`` was purged after write sequence ``since``.

        Data derived before a purge may hold the purged text or vector: it is rebuilt
        from the table, never patched (:mod:`bli_memory.core.embedded.side_indexes`).
        """
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            return conn.execute(
                f"SELECT 1 FROM memory_removals WHERE write_seq > ? AND space IN ({marks}) LIMIT 1",
                (since, *spaces),
            ).fetchone() is not None

    def vectors(self, spaces: Sequence[str]) -> VectorSet:
        """Live vectors of these spaces, from the in-process cache when still current.

        The cache is checked against the write sequence (one read); rows that moved since
        are appended or tombstoned in place, and a full reload happens only on a first
        read, an epoch change, or when more rows moved than a reload costs.

        Raises:
            ModelMismatchError: the store holds vectors of another model.
            StoreError: the store cannot be read.
        """
        key = tuple(sorted(spaces))
        with self._read() as conn:
            self.require_model(conn)
            # Read the sequence before the rows: rows written meanwhile are applied twice
            # at worst, and appends and tombstones are idempotent.
            write_seq, epoch = self._sequence(conn)
            cached: _Growing | None = self._vector_cache.get(key)
            if cached is not None and cached.epoch == epoch and cached.write_seq == write_seq:
                return cached.snapshot()
            if cached is None or cached.epoch != epoch or write_seq < cached.write_seq \
                    or not self._catch_up(conn, key, cached, write_seq):
                cached = self._load(conn, key, write_seq, epoch)
                self._vector_cache[key] = cached
            return cached.snapshot()

    def _rows(self, conn: sqlite3.Connection, sql: str, args: Sequence[Any], *,
              spare: bool = False) -> tuple[Any, Any, int]:
        """``(seqs, matrix, rows read)`` of ``(seq, embedding)`` rows; with ``spare``, buffers with room
        for an eighth more rows (see :meth:`_Growing.append`), of which only the rows read
        are filled."""
        import numpy as np

        rows = conn.execute(sql, args).fetchall()
        n = len(rows)
        cap = n + max(1024, n // 8) if spare else n
        seqs = np.empty(cap, dtype=np.int64)
        seqs[:n] = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        matrix = np.empty((cap, self.dimensions), dtype=np.float32)
        if rows:
            matrix[:n] = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(n, self.dimensions)
        return seqs, matrix, n

    def _load(self, conn: sqlite3.Connection, key: tuple[str, ...], write_seq: int, epoch: int) -> _Growing:
        """Every live vector of ``key``: the saved matrix caught up when one matches
        (:attr:`saved_vectors`), else read from the table."""
        loader = self.saved_vectors
        saved = loader(key, write_seq, epoch) if loader is not None else None
        if saved is not None:
            seqs, matrix, n, since = saved
            cached = _Growing(seqs, matrix, n, since, epoch)
            if self._catch_up(conn, key, cached, write_seq):
                return cached
        marks = ",".join("?" * len(key))
        seqs, matrix, n = self._rows(
            conn,
            f"SELECT seq, embedding FROM memories WHERE state = 'active' AND space IN ({marks}) "
            "AND embedding IS NOT NULL AND embedding_model IS ? ORDER BY seq",
            (*key, self.model_name), spare=True,
        )
        return _Growing(seqs, matrix, n, write_seq, epoch)

    def _catch_up(self, conn: sqlite3.Connection, key: tuple[str, ...], cached: _Growing,
                  write_seq: int) -> bool:
        """Apply the rows moved since ``cached.write_seq`` in place; False when a reload is due."""
        marks = ",".join("?" * len(key))
        limit = max(10_000, int(cached.n * _RELOAD_SHARE))
        moved = sorted(conn.execute(
            "SELECT seq, state = 'active' AND embedding IS NOT NULL AND embedding_model IS ? "
            f"FROM memories {_BY_WRITE_SEQ} WHERE write_seq > ? AND space IN ({marks}) LIMIT ?",
            (self.model_name, cached.write_seq, *key, limit + 1),
        ).fetchall())
        if len(moved) > limit:
            return False
        snap_max = int(cached.seqs[cached.n - 1]) if cached.n else 0
        new = [int(s) for s, ok in moved if ok and int(s) > snap_max]
        if any(ok and int(s) <= snap_max for s, ok in moved):
            return False  # a cached row got a new vector, or an old row came back: reload
        gone = [int(s) for s, ok in moved if not ok]
        purged = conn.execute(
            f"SELECT 1 FROM memory_removals WHERE write_seq > ? AND space IN ({marks}) LIMIT 1",
            (cached.write_seq, *key),
        ).fetchone()
        if purged is not None:
            return False  # a purge: read the table again, so no copy of the purged vector is kept
        for lo in range(0, len(new), 5000):  # under SQLite's bound on bound parameters
            chunk = new[lo : lo + 5000]
            q = ",".join("?" * len(chunk))
            seqs, matrix, _ = self._rows(
                conn, f"SELECT seq, embedding FROM memories WHERE seq IN ({q}) ORDER BY seq", chunk
            )
            cached.append(seqs, matrix)
        cached.tombstone(gone)
        if cached.dead and cached.dead > COMPACT_SHARE * cached.n:
            cached.compact()
        cached.write_seq = write_seq
        return True
