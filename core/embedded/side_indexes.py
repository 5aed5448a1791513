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
path), then re-synced from the store's live set before every use, so a save, update,
forget or purge is seen by the next search. Nothing is written to disk; a new process
builds again. If the optional package an index needs (``tantivy``, ``usearch``; the
``scale`` extra) is missing, or a build fails, the engine keeps the exact path and one
line is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bli_memory.core.settings import KEYWORD_MIN_ROWS, VECTOR_MIN_ROWS

__all__ = ["KEYWORD_MIN_ROWS", "MAX_SLOTS", "RETRY_S", "VECTOR_MIN_ROWS", "SideIndexes"]

_log = logging.getLogger("bli_memory.side_indexes")

# Default thresholds (live rows in the spaces searched), and why, are defined with the two
# settings they are the defaults of (BLI_MEMORY_KEYWORD_INDEX_MIN_ROWS, ..._VECTOR_...).
#: Most indexes of one kind a process keeps (one per set of spaces searched together);
#: the least recently used is dropped beyond that, so a long-lived daemon serving many
#: large spaces stays bounded.
MAX_SLOTS = 8
#: Seconds before a failed build is tried again (a missing package fails again quickly).
RETRY_S = 600.0


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
    ) -> None:
        self._fetch_terms = fetch_terms
        self._dimensions = dimensions
        self.keyword_min_rows = keyword_min_rows
        self.vector_min_rows = vector_min_rows
        self._background = background
        self._threads = threads
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
        if len(vs.seqs) < min_rows:
            return None
        slot = self._ready(kind, spaces, vs)
        if slot is None:
            return None
        with slot.lock:
            try:
                self._sync(kind, slot.index, vs)
                return ask(slot.index)
            except Exception as exc:  # never fail a search over a derived index
                self._drop(kind, spaces, exc)
                return None

    def _sync(self, kind: str, index: Any, vs: Any) -> None:
        """Bring an index level with the live set ``vs`` (the keyword index reads terms)."""
        source = self._fetch_terms if kind == "keyword" else vs.matrix
        index.sync(vs.seqs, source, vs.generation)

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
        if not self._background:
            self._build(kind, slot, vs)
            return slot if slot.index is not None else None
        thread = threading.Thread(
            target=self._build, args=(kind, slot, vs), daemon=True, name=f"bli-{kind}-index"
        )
        self._threads_started = [t for t in self._threads_started if t.is_alive()] + [thread]
        thread.start()
        return None

    def _drop(self, kind: str, spaces: Sequence[str], exc: BaseException) -> None:
        """Forget a broken index (the next search builds it again) and log one line."""
        with self._lock:
            self._slots.pop((kind, ",".join(sorted(spaces))), None)
        _log.warning("%s side index dropped (%s: %s); rebuilt on a later search",
                     kind, type(exc).__name__, exc)

    def _evict(self, kind: str) -> None:
        """Drop the least recently used idle index of ``kind`` when at :data:`MAX_SLOTS`."""
        mine = [(s.used, key) for key, s in self._slots.items() if key[0] == kind]
        if len(mine) < MAX_SLOTS:
            return
        for _, key in sorted(mine):
            if not self._slots[key].building:
                del self._slots[key]
                return

    def _build(self, kind: str, slot: _Slot, vs: Any) -> None:
        started = time.perf_counter()
        try:
            if kind == "keyword":
                from bli_memory.core.embedded.keyword_index import KeywordIndex

                index: Any = KeywordIndex(threads=self._threads)
            else:
                from bli_memory.core.embedded.vector_index import VectorIndex

                index = VectorIndex(self._dimensions, threads=self._threads)
            self._sync(kind, index, vs)
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
