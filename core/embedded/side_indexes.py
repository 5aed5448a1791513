"""Side indexes for large spaces: when the engine asks them instead of the table scans.

Below a few tens of thousands of rows per space the engine's exact paths are fast
(numpy cosine over the cached matrix, an FTS5 bm25 query) and exact. Above that they
grow linearly with the space and stop fitting a prompt's budget (``docs/benchmarks.md``).
This module keeps, per set of spaces searched together, two derived indexes beside
the table:

- a BM25 keyword index with top-k pruning (:class:`~bli_memory.core.embedded.keyword_index.KeywordIndex`)
  once the space holds ``keyword_min_rows`` live rows;
- an HNSW vector index (:class:`~bli_memory.core.embedded.vector_index.VectorIndex`) once it holds
  ``vector_min_rows``.

Both are built from SQLite in a background thread the first time a large space is
searched (the search that started the build, and those during it, take the exact
path). Each index is stamped with the store's ``(epoch, write_seq)``
(:func:`~bli_memory.core.embedded.migrations.m008_write_sequence`) and caught up before
every use with the rows that moved since (:meth:`~bli_memory.core.embedded.vector_cache.VectorCache.changes`):
rows saved are added, rows updated or forgotten tombstoned (skipped at once, removed in
batches), in O(rows moved), so the next search sees every write of every process. Many
moved rows, an epoch change or a count that disagrees with the live set mean a full
re-sync from the live set; a purge means a rebuild from the table, since an index keeps
a removed row's terms or vector until it is rebuilt.

Both are saved beside the store (:mod:`bli_memory.core.embedded.side_index_files`;
the vector index with the vector matrix) after a build and again after every
:data:`SAVE_SHARE` of their rows moved (the vector index also on :meth:`SideIndexes.close`);
a new process loads them in the first search instead of rebuilding, when their record
matches the store. If the optional package an index needs
(``tantivy``, ``usearch``; the ``scale`` extra) is missing, or a build fails, the engine
keeps the exact path and one line is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bli_memory.core.settings import KEYWORD_MIN_ROWS, VECTOR_MIN_ROWS

__all__ = [
    "KEYWORD_MIN_ROWS", "MAX_SLOTS", "RESYNC_SHARE", "RETRY_S", "SAVE_SHARE", "VECTOR_MIN_ROWS",
    "VECTOR_PARAMS", "SideIndexes",
]

_log = logging.getLogger("bli_memory.side_indexes")

# Default thresholds (live rows in the spaces searched), and why, are defined with the two
# settings they are the defaults of (BLI_MEMORY_KEYWORD_INDEX_MIN_ROWS, ..._VECTOR_...).
#: Most indexes of one kind a process keeps (one per set of spaces searched together);
#: the least recently used is dropped beyond that, so a long-lived daemon serving many
#: large spaces stays bounded.
MAX_SLOTS = 8
#: Seconds before a failed build is tried again (a missing package fails again quickly).
RETRY_S = 600.0
#: Rows moved since the last sync, as a share of the index (at least 10,000), past which
#: a full re-sync from the live set replaces the catch-up.
RESYNC_SHARE = 0.25
#: Rows moved since an index was saved, as a share of it (at least 1,000), past
#: which it is saved again in the background: a restart then catches up at most that many.
SAVE_SHARE = 0.02
#: Parameters of the HNSW index (:class:`~bli_memory.core.embedded.vector_index.VectorIndex`;
#: recall and cost measured in ``docs/benchmarks.md``); recorded with a saved index.
VECTOR_PARAMS: dict[str, Any] = {
    "quantisation": "i8", "connectivity": 16, "expansion_add": 64, "expansion_search": 128,
}


class _Slot:
    """One index for one set of spaces: building, ready, or failed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.index: Any = None
        self.building = False
        self.failed = False
        self.build_s = 0.0
        self.used = time.monotonic()
        self.failed_at = 0.0
        self.moved = 0  # rows moved since the index was last saved
        self.saving = False


class SideIndexes:
    """The keyword and vector side indexes of one engine.

    Args:
        fetch_terms: ``(seqs) -> [(seq, terms), ...]`` reading ``memory_fts`` term strings
            (:meth:`bli_memory.core.embedded.store.SQLiteStore.keyword_terms`).
        dimensions: Vector length.
        keyword_min_rows: Live rows from which the keyword index is used (a huge value
            turns it off).
        vector_min_rows: Live rows from which the HNSW index is used.
        background: Build in a daemon thread (True) or inside the first search that
            needs the index (False: benchmarks and tests).
        threads: Threads an index build may use (1 keeps the host's cores free).
        store: ``() -> SQLiteStore``: the store the indexes derive from, for catching up
            from its write sequence and saving the vector index beside it; without it
            every change is a re-sync from the live set and nothing is saved.
    """

    def __init__(
        self,
        fetch_terms: Callable[[Sequence[int]], list[tuple[int, str]]],
        *,
        dimensions: int,
        keyword_min_rows: int = KEYWORD_MIN_ROWS,
        vector_min_rows: int = VECTOR_MIN_ROWS,
        background: bool = True,
        threads: int = 1,
        store: Callable[[], Any] | None = None,
    ) -> None:
        self._fetch_terms = fetch_terms
        self._dimensions = dimensions
        self.keyword_min_rows = keyword_min_rows
        self.vector_min_rows = vector_min_rows
        self._background = background
        self._threads = threads
        self._store = store
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._lock = threading.Lock()
        self._threads_started: list[threading.Thread] = []

    # --- public --------------------------------------------------------------------

    def keyword_query(
        self, spaces: Sequence[str], vs: Any, groups: Sequence[Sequence[str]], k: int, *, every: bool
    ) -> list[int] | None:
        """Best ``k`` seqs by BM25 from the keyword index, or None to use FTS5.

        Args:
            spaces: The spaces searched (canonical first).
            vs: Their live :class:`~bli_memory.core.embedded.store.VectorSet` (seqs + generation).
            groups: Encoded query forms per term (:func:`bli_memory.core.memory.terms.query_forms`).
            k: How many.
            every: Every term must match (``keyword_all``) or any (``keyword_any``).
        """
        return self._answer("keyword", self.keyword_min_rows, spaces, vs,
                            lambda index: index.query(groups, k, every=every))

    def vector_query(self, spaces: Sequence[str], vs: Any, vector: Any, k: int) -> list[int] | None:
        """The approximate ``k`` nearest seqs from the HNSW index, or None to scan exactly."""
        return self._answer("vector", self.vector_min_rows, spaces, vs, lambda index: index.query(vector, k))

    def _answer(self, kind: str, min_rows: int, spaces: Sequence[str], vs: Any,
                ask: Callable[[Any], list[int]]) -> list[int] | None:
        """``ask(index)`` on the index of ``kind``, synced to ``vs``; None means use the exact path."""
        if vs.size < min_rows:
            return None
        slot = self._ready(kind, spaces, vs)
        if slot is None:
            return None
        if not slot.lock.acquire(timeout=0.25):  # a save holds it: answer exactly this time
            return None
        error: Exception | None = None
        purged, found = False, None
        try:
            purged = self._purged(spaces, slot.index)
            if not purged:
                self._sync(kind, slot, spaces, vs)
                found = ask(slot.index)
        except Exception as exc:  # never fail a search over a derived index
            error = exc
        finally:
            slot.lock.release()
        if error is not None:
            self._drop(kind, spaces, error)
            return None
        if purged or found is None:
            self._forget_slot(kind, spaces, "a row was purged")
            return None
        if slot.moved >= max(1000, SAVE_SHARE * len(slot.index)):
            self._save_later(kind, slot, spaces)
        elif getattr(slot.index, "unsettled", False):
            self._later(self._settle, (kind, slot, tuple(spaces)), f"bli-{kind}-index-copy")
        return found

    def _sync(self, kind: str, slot: _Slot, spaces: Sequence[str], vs: Any) -> None:
        """Bring a slot's index level with ``vs``: catch up from its write sequence, or re-sync."""
        index = slot.index
        mark = (vs.epoch, vs.write_seq)
        if index.mark == mark:
            return
        store = self._store() if self._store is not None else None
        if store is not None and index.mark is not None and index.mark[0] == vs.epoch \
                and index.mark[1] <= vs.write_seq:
            live, gone = store.changes(spaces, index.mark[1])
            if len(live) + len(gone) <= max(10_000, RESYNC_SHARE * len(index)):
                self._apply(kind, index, vs, live, gone)
                slot.moved += len(live) + len(gone)
                if len(index) == vs.size:
                    index.mark = mark
                    return
                _log.info("%s side index count %d differs from %d live rows; re-syncing",
                          kind, len(index), vs.size)
        self._resync(kind, index, vs)
        slot.moved += max(1000, int(SAVE_SHARE * len(index)) + 1)
        index.mark = mark

    def _apply(self, kind: str, index: Any, vs: Any, live: list[int], gone: list[int]) -> None:
        """Apply moved rows to ``index`` (live rows missing from ``vs`` wait for the next sync)."""
        import numpy as np

        if kind == "keyword":
            index.apply(live, self._fetch_terms, gone)
            return
        pos = [(s, p) for s in live if (p := vs.position(s)) is not None]
        seqs = np.asarray([s for s, _ in pos], dtype=np.int64)
        rows = vs.matrix[[p for _, p in pos]] if pos else np.zeros((0, vs.matrix.shape[1]), np.float32)
        index.apply(seqs, rows, np.asarray(sorted(set(gone) | (set(live) - set(seqs.tolist()))),
                                           dtype=np.int64))

    def _resync(self, kind: str, index: Any, vs: Any) -> None:
        """Level ``index`` with the whole live set ``vs`` (one pass over its seqs)."""
        if kind == "keyword":
            index.sync(vs.live_seqs(), self._fetch_terms)
        elif vs.alive is None:
            index.sync(vs.seqs, vs.matrix)
        else:
            index.sync(vs.seqs[vs.alive], vs.matrix[vs.alive])

    def wait(self, timeout: float | None = None) -> None:
        """Wait for builds started so far (benchmarks, tests, shutdown)."""
        for thread in list(self._threads_started):
            thread.join(timeout)

    def built(self, kind: str, spaces: Sequence[str]) -> tuple[Any, float] | None:
        """``(index, build seconds)`` of a built ``"keyword"`` or ``"vector"`` index, else None."""
        slot = self._slots.get((kind, ",".join(sorted(spaces))))
        if slot is None or slot.index is None:
            return None
        return slot.index, slot.build_s

    def status(self) -> dict[str, str]:
        """``{"keyword:<spaces>": "ready"|"building"|"failed", ...}`` for diagnostics."""
        out = {}
        for (kind, key), slot in sorted(self._slots.items()):
            state = "failed" if slot.failed else "ready" if slot.index is not None else "building"
            out[f"{kind}:{key}"] = state
        return out

    # --- building ------------------------------------------------------------------

    def _ready(self, kind: str, spaces: Sequence[str], vs: Any) -> _Slot | None:
        """The slot when its index is built; otherwise start a build and return None."""
        key = (kind, ",".join(sorted(spaces)))
        with self._lock:
            slot = self._slots.get(key)
            if slot is None:
                self._evict(kind)
                slot = self._slots[key] = _Slot()
            slot.used = time.monotonic()
            if slot.index is not None:
                return slot
            if slot.building or (slot.failed and time.monotonic() - slot.failed_at < RETRY_S):
                return None
            slot.failed = False
            slot.building = True
        if not slot.failed_at and self._load(kind, slot, spaces, vs):
            return slot
        if not self._background:
            self._build(kind, slot, spaces, vs)
            return slot if slot.index is not None else None
        thread = threading.Thread(
            target=self._build, args=(kind, slot, spaces, vs), daemon=True, name=f"bli-{kind}-index"
        )
        self._threads_started = [t for t in self._threads_started if t.is_alive()] + [thread]
        thread.start()
        return None

    def _drop(self, kind: str, spaces: Sequence[str], exc: BaseException) -> None:
        """Forget a broken index (the next search builds it again) and log one line."""
        self._forget_slot(kind, spaces, None)
        _log.warning("%s side index dropped (%s: %s); rebuilt on a later search",
                     kind, type(exc).__name__, exc)

    def _forget_slot(self, kind: str, spaces: Sequence[str], why: str | None) -> None:
        with self._lock:
            slot = self._slots.pop((kind, ",".join(sorted(spaces))), None)
        self._discard(slot)
        if why is not None:
            _log.info("%s side index dropped (%s); rebuilt from the table", kind, why)

    def _purged(self, spaces: Sequence[str], index: Any) -> bool:
        """True when a row of ``spaces`` was purged since ``index`` was level with the store:
        an index may keep a removed row's terms or vector, so it is rebuilt, never patched."""
        if self._store is None or index is None or index.mark is None:
            return False
        return bool(self._store().purged_since(spaces, index.mark[1]))

    def _evict(self, kind: str) -> None:
        """Drop the least recently used idle index of ``kind`` when at :data:`MAX_SLOTS`."""
        mine = [(s.used, key) for key, s in self._slots.items() if key[0] == kind]
        if len(mine) < MAX_SLOTS:
            return
        for _, key in sorted(mine):
            if not self._slots[key].building:
                self._discard(self._slots.pop(key))
                return

    def _build(self, kind: str, slot: _Slot, spaces: Sequence[str], vs: Any) -> None:
        started = time.perf_counter()
        try:
            if kind == "keyword":
                from bli_memory.core.embedded.keyword_index import KeywordIndex

                index: Any = KeywordIndex(threads=self._threads)
            else:
                from bli_memory.core.embedded.vector_index import VectorIndex

                index = VectorIndex(self._dimensions, threads=self._threads, **VECTOR_PARAMS)
            self._resync(kind, index, vs)
            index.mark = (vs.epoch, vs.write_seq)
        except Exception as exc:  # a side index is an optimisation: never break search
            slot.failed = True
            slot.failed_at = time.monotonic()
            _log.warning("%s side index not built (%s: %s); exact search continues",
                         kind, type(exc).__name__, exc)
        else:
            slot.build_s = time.perf_counter() - started
            slot.index = index
            _log.info("%s side index ready: %d rows in %.1f s", kind, len(index), slot.build_s)
        finally:
            slot.building = False
        if slot.index is not None:
            self._save(kind, slot, spaces)

    # --- saved indexes ---------------------------------------------------------------

    def load_matrix(self, spaces: Sequence[str], write_seq: int, epoch: int) -> Any:
        """The saved vector matrix of ``spaces`` (:meth:`SideIndexFiles.load_matrix`), or None;
        the store's vector cache asks it before reading the table
        (:attr:`~bli_memory.core.embedded.vector_cache.VectorCache.saved_vectors`)."""
        try:
            found = self._files_and_identity()
            if found is None:
                return None
            saved = found[0].load_matrix(spaces, _plain(found[1]), write_seq=write_seq, epoch=epoch)
            if saved is not None:
                _log.info("saved vector matrix mapped: %d rows", saved[2])
            return saved
        except Exception as exc:  # a head start only: read the table instead
            _log.warning("saved vector matrix not loaded (%s: %s)", type(exc).__name__, exc)
            return None

    def _files_and_identity(self) -> tuple[Any, dict[str, Any]] | None:
        """``(SideIndexFiles, identity)`` of the store, or None without a store."""
        if self._store is None:
            return None
        from bli_memory.core.embedded.side_index_files import SideIndexFiles

        store = self._store()
        identity = {"store_id": store.meta().get("store_id"), "model": store.model_name,
                    "dimensions": self._dimensions, "params": VECTOR_PARAMS}
        return SideIndexFiles(store.path), identity

    def _load(self, kind: str, slot: _Slot, spaces: Sequence[str], vs: Any) -> bool:
        """Put the saved ``kind`` index of ``spaces`` in ``slot`` when its record matches
        and it is not far behind the store."""
        started = time.perf_counter()
        index = None
        try:
            found = self._files_and_identity()
            if found is not None:
                files, identity = found
                if kind == "vector":
                    index = files.load_vector(spaces, identity, write_seq=vs.write_seq, epoch=vs.epoch,
                                              threads=self._threads)
                else:
                    index = files.load_keyword(spaces, _plain(identity), write_seq=vs.write_seq,
                                               epoch=vs.epoch, threads=self._threads)
            if index is not None and self._purged(spaces, index):
                _log.info("saved %s side index predates a purge; rebuilding", kind)
                self._discard_index(index)
                index = None
            if index is not None:  # a long way behind (a bulk import since): build instead
                live, gone = self._store().changes(spaces, index.mark[1])  # type: ignore[misc]
                if len(live) + len(gone) > max(10_000, RESYNC_SHARE * len(index)):
                    _log.info("saved %s side index is %d rows behind; rebuilding", kind,
                              len(live) + len(gone))
                    self._discard_index(index)
                    index = None
        except Exception as exc:  # a saved index is a head start: never break search
            _log.warning("saved %s side index not loaded (%s: %s)", kind, type(exc).__name__, exc)
            self._discard_index(index)
            index = None
        if index is None:
            return False
        slot.build_s = time.perf_counter() - started
        slot.index = index
        slot.building = False
        _log.info("%s side index loaded: %d rows in %.1f s", kind, len(index), slot.build_s)
        return True

    def _save(self, kind: str, slot: _Slot, spaces: Sequence[str]) -> None:
        """Save a slot's index beside the store (the vector index with the vector matrix);
        a failure is logged, never raised. The keyword copy is built from the table
        outside the slot's lock, so searches go on meanwhile."""
        try:
            found = self._files_and_identity()
            if found is None:
                return
            files, identity = found
            with slot.lock:
                index = slot.index
                if index is None or index.mark is None or self._purged(spaces, index):
                    return  # a purge since: the next search rebuilds, and saves that
                if kind == "vector":
                    files.save_vector(index, spaces, identity)
                else:
                    seqs, mark = index.seqs(), index.mark
                slot.moved = 0
            if kind == "vector":
                vs = self._store().vectors(spaces)  # type: ignore[misc]
                files.save_matrix(vs, spaces, _plain(identity))
            else:
                files.save_keyword(seqs, mark, spaces, _plain(identity), self._fetch_terms,
                                   threads=self._threads)
        except Exception as exc:  # the next start rebuilds instead
            _log.warning("%s side index not saved (%s: %s)", kind, type(exc).__name__, exc)
        finally:
            slot.saving = False

    def _save_later(self, kind: str, slot: _Slot, spaces: Sequence[str]) -> None:
        """Save a slot's index again, in the background when builds are."""
        with self._lock:
            if slot.saving:
                return
            slot.saving = True
        self._later(self._save, (kind, slot, tuple(spaces)), f"bli-{kind}-index-save")

    def _later(self, target: Callable[..., None], args: tuple[Any, ...], name: str) -> None:
        """Run ``target(*args)`` in a daemon thread when builds run in the background, else now."""
        if not self._background:
            target(*args)
            return
        thread = threading.Thread(target=target, args=args, daemon=True, name=name)
        self._threads_started = [t for t in self._threads_started if t.is_alive()] + [thread]
        thread.start()

    def _settle(self, kind: str, slot: _Slot, spaces: Sequence[str]) -> None:
        """Copy a slot's mapped vector index into memory (see
        :meth:`~bli_memory.core.embedded.vector_index.VectorIndex.materialise`), once."""
        with self._lock:
            if slot.saving:
                return
            slot.saving = True
        try:
            with slot.lock:
                if slot.index is not None and slot.index.unsettled:
                    started = time.perf_counter()
                    slot.index.materialise()
                    _log.info("%s side index copied into memory: %d rows in %.1f s", kind,
                              len(slot.index), time.perf_counter() - started)
        except Exception as exc:  # a derived index: drop it, the next search rebuilds
            self._drop(kind, spaces, exc)
        finally:
            slot.saving = False

    @staticmethod
    def _discard_index(index: Any) -> None:
        """Remove the working folder of a keyword index loaded from a saved copy, if any."""
        if index is not None and getattr(index, "work", None) is not None:
            from bli_memory.core.embedded.side_index_files import SideIndexFiles

            SideIndexFiles.discard(index)

    def _discard(self, slot: _Slot | None) -> None:
        if slot is not None:
            self._discard_index(slot.index)

    def close(self) -> None:
        """Wait for builds and saves, save every vector index with unsaved changes (a
        keyword index is saved only as rows move: its copy is a build), and remove the
        working folders of loaded keyword indexes."""
        self.wait()
        for (kind, key), slot in list(self._slots.items()):
            if kind == "vector" and slot.index is not None and slot.moved:
                self._save(kind, slot, key.split(","))
            self._discard(slot)


def _plain(identity: dict[str, Any]) -> dict[str, Any]:
    """The identity of saved data that has no HNSW parameters (keyword index, matrix)."""
    return {k: v for k, v in identity.items() if k != "params"}
