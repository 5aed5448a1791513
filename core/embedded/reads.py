"""The embedded store's side of the memory engine (:mod:`bli_memory.core.memory.engine`).

:class:`EmbeddedSessions` hands out one write session per write
(:class:`~bli_memory.core.embedded.store_writes.SQLiteWrite`) and one :class:`EmbeddedRead`
per space read: the retrieval
channels (:class:`~bli_memory.core.embedded.search_source.EmbeddedChannels`: numpy over the
cached vectors, FTS5 or the side indexes), the newest rows, FTS5 term counts and the sum of
the cached vectors; the engine ranks, gates and caches.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from bli_memory.core.memory.terms import fts_any_query

if TYPE_CHECKING:
    from bli_memory.core.embedded.search_source import EmbeddedChannels
    from bli_memory.core.embedded.side_indexes import SideIndexes
    from bli_memory.core.embedded.store import SQLiteStore, VectorSet
    from bli_memory.core.embedded.store_writes import SQLiteWrite
    from bli_memory.core.models import Memory

__all__ = ["EmbeddedRead", "EmbeddedSessions"]


class EmbeddedRead:
    """One read of one space of the file (:class:`~bli_memory.core.memory.engine.ReadSession`)."""

    def __init__(self, store: SQLiteStore, canonical: str, spaces: tuple[str, ...],
                 side: SideIndexes | None) -> None:
        self.canonical = canonical
        self.spaces = spaces
        self._store = store
        self._side = side
        self._vs: VectorSet | None = None

    def _vectors(self) -> VectorSet:
        if self._vs is None:
            self._vs = self._store.vectors(self.spaces)
        return self._vs

    def channels(self, query: str, embed: Callable[[str], Any]) -> EmbeddedChannels:
        """The channels of one search (the query embedded only when the space holds vectors)."""
        from bli_memory.core.embedded.search_source import EmbeddedChannels

        return EmbeddedChannels(self._store, self.spaces, self._side, embed)

    def newest(self, *, kinds: Sequence[str] | None, limit: int) -> list[Memory]:
        """The newest live memories (of these kinds)."""
        if kinds is not None:
            return self._store.recent_of_kinds(self.spaces, kinds, limit=limit)
        return self._store.recent(self.spaces, limit=limit)

    def term_counts(self, terms: Sequence[str]) -> tuple[list[int], int]:
        """FTS5 matches of each term (its exact form or stem), and the live memories."""
        counts = []
        for term in terms:
            expr = fts_any_query([term])
            counts.append(self._store.match_count(self.spaces, expr) if expr else 0)
        return counts, self._vectors().size

    def vector_sum(self) -> tuple[int, float]:
        """``(n, |sum|^2)`` from one pass over the cached vectors."""
        import numpy as np

        vs = self._vectors()
        live = vs.matrix if vs.alive is None else vs.matrix[vs.alive]
        total = live.sum(axis=0, dtype=np.float64)
        return int(live.shape[0]), float(total @ total)

    def generation(self) -> Hashable:
        """The file (device and inode: a restore or a replaced file is another) and the
        cached vectors' write sequence, epoch and size, which move with every write."""
        import os

        vs = self._vectors()
        try:
            st = os.stat(self._store.path)
            file = (st.st_dev, st.st_ino)
        except OSError:
            file = (id(self._store), 0)
        return file, vs.write_seq, vs.epoch, vs.size

    def scope(self) -> Hashable:
        """The spaces read."""
        return self.spaces


class EmbeddedSessions:
    """The read and write sessions of the open store
    (:class:`~bli_memory.core.memory.engine.MemoryStore`).

    Args:
        store: Returns the open store (reopened when the file was replaced).
        side: Returns the side indexes when they are on, else None.
    """

    def __init__(self, store: Callable[[], SQLiteStore], side: Callable[[], SideIndexes | None]) -> None:
        self._store = store
        self._side = side

    @contextmanager
    def reading(self, tag: str) -> Iterator[EmbeddedRead]:
        """A read of the space ``tag`` names (aliases resolved)."""
        store = self._store()
        canonical, spaces = store.resolve_space(tag)
        yield EmbeddedRead(store, canonical, tuple(spaces), self._side())

    def history(self, id: str) -> list[Memory]:
        """The version chain of ``id``, newest first (:meth:`StoreReads.history`)."""
        return self._store().history(id)

    def writing(self, tag: str) -> AbstractContextManager[SQLiteWrite]:
        """A write transaction on the space ``tag`` names (:meth:`SQLiteStore.writing`)."""
        return self._store().writing(tag)
