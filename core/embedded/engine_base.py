"""The embedded engine's resources: the store file, the embedding model, the side indexes.

:class:`EngineBase` opens the SQLite store on first use (and again when the file was
replaced), loads the embedding model on first use or in :meth:`EngineBase.warm_up`,
and turns the side indexes on for long-lived processes;
:class:`~bli_memory.core.embedded.engine.EmbeddedBackend` builds the memory contract
on it.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from bli_memory.core.memory.ranking import RankingConfig

if TYPE_CHECKING:
    from pathlib import Path

    from bli_memory.core.documents.index_store import DocumentIndex
    from bli_memory.core.embedded.side_indexes import SideIndexes
    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.memory.embedder import Embedder
    from bli_memory.core.memory.engine import MemoryEngine

__all__ = ["EngineBase"]


class EngineBase:
    """Resources of one embedded engine (see :class:`~bli_memory.core.embedded.engine.EmbeddedBackend`
    for the arguments). Thread-safe."""

    def __init__(
        self,
        store_path: Path,
        *,
        embedder: Embedder | None = None,
        ranking: RankingConfig | None = None,
        keyword_index_min_rows: int | None = None,
        vector_index_min_rows: int | None = None,
    ) -> None:
        from bli_memory.core.memory import embeddings

        self.store_path = store_path
        self.ranking = ranking or RankingConfig()
        self._index_min_rows = (keyword_index_min_rows, vector_index_min_rows)
        #: The side indexes, once :meth:`enable_side_indexes` ran (long-lived processes).
        self.side_indexes: SideIndexes | None = None
        self._embedder = embedder
        self._model_name = embedder.name if embedder is not None else embeddings.MODEL_NAME
        self._dimensions = embedder.dimensions if embedder is not None else embeddings.DIMENSIONS
        self._store: SQLiteStore | None = None
        self._store_file_id: tuple[int, int] | None = None
        self._store_lock = threading.Lock()
        self._documents: DocumentIndex | None = None
        from bli_memory.core.embedded.reads import EmbeddedSessions
        from bli_memory.core.memory.engine import MemoryEngine

        self._engine = MemoryEngine(EmbeddedSessions(lambda: self.store, lambda: self.side_indexes),
                                   self._embed_one, self.ranking,
                                   embed_many=lambda texts: self.embedder.embed(list(texts)))

    # --- resources -----------------------------------------------------------------

    @property
    def engine(self) -> MemoryEngine:
        """The memory contract's rules, written once for every store, over this file's read
        and write sessions."""
        return self._engine

    @property
    def model_name(self) -> str:
        """Name of the embedding model recorded next to every vector."""
        return self._model_name

    def _file_id(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.store_path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    @property
    def store(self) -> SQLiteStore:
        """The open store (opened and migrated on first use).

        If the file was deleted or replaced since it was opened (a restore, a person
        removing it), the store is reopened, so writes never go to an unlinked file.
        """
        if self._store is not None and self._file_id() != self._store_file_id:
            with self._store_lock:
                if self._store is not None and self._file_id() != self._store_file_id:
                    self._store.close()
                    self._store = None
        if self._store is None:
            with self._store_lock:
                if self._store is None:
                    from bli_memory.core.embedded.store import SQLiteStore

                    self._store = SQLiteStore(
                        self.store_path, model_name=self._model_name, dimensions=self._dimensions
                    )
                    self._store_file_id = self._file_id()
                    if self.side_indexes is not None:
                        self._store.saved_vectors = self.side_indexes.load_matrix
                    if self._store.migrations_applied:
                        # stdlib logging: silent unless a process configured it (the MCP
                        # server sends it to stderr); a hook's stdout must stay clean.
                        logging.getLogger("bli_memory.store").info(
                            "store migrated: %s", ", ".join(self._store.migrations_applied)
                        )
        return self._store

    @property
    def embedder(self) -> Embedder:
        """The embedding model: the one given, else the shipped one (``get_embedder`` loads
        it once per process, under its own lock)."""
        if self._embedder is None:
            from bli_memory.core.memory.embeddings import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    def warm_up(self) -> None:
        """Open the store, load the model and the stemmer, and turn side indexes on
        (daemon, MCP server). The stemmer's package imports every language it has: 0.5-2 s
        measured on the first search after a restart (``docs/benchmarks.md``), paid here."""
        from bli_memory.core.memory.terms import stem

        _ = self.store
        self.embedder.embed(["warm up"])
        stem("warming")
        self.enable_side_indexes()

    def enable_side_indexes(self, *, background: bool = True, threads: int = 1) -> SideIndexes:
        """Answer large spaces from side indexes from now on (idempotent).

        A one-shot process (a hook's direct path) never calls this: it would pay for a
        build it cannot reuse. See :mod:`bli_memory.core.embedded.side_indexes`.

        Args:
            background: Build in a background thread (default) or in the first search.
            threads: Threads a build may use.

        Returns:
            The engine's :class:`~bli_memory.core.embedded.side_indexes.SideIndexes`.
        """
        if self.side_indexes is None:
            from bli_memory.core.embedded.side_indexes import KEYWORD_MIN_ROWS, VECTOR_MIN_ROWS, SideIndexes

            keyword_min, vector_min = self._index_min_rows
            self.side_indexes = SideIndexes(
                lambda seqs: self.store.keyword_terms(seqs),
                dimensions=self._dimensions,
                keyword_min_rows=KEYWORD_MIN_ROWS if keyword_min is None else keyword_min,
                vector_min_rows=VECTOR_MIN_ROWS if vector_min is None else vector_min,
                background=background,
                threads=threads,
                store=lambda: self.store,
            )
            self.store.saved_vectors = self.side_indexes.load_matrix
        return self.side_indexes

    def close(self) -> None:
        """Save side indexes with unsaved changes, then close the store."""
        if self.side_indexes is not None and self._store is not None:
            self.side_indexes.close()
        if self._store is not None:
            self._store.close()
        if self._documents is not None:
            self._documents.close()

    def _embed_one(self, text: str) -> Any:
        return self.embedder.embed([text])[0]
