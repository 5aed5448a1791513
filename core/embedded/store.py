"""The embedded SQLite store: memory rows, keyword index, vectors, aliases, jobs.

One SQLite file (WAL, busy timeout) shared by the MCP server, the hooks and the
daemon. Every write is one ``BEGIN IMMEDIATE`` transaction in which the row, its
keyword-index entry and its vector agree. Vectors are little-endian float32 blobs in
the row (the source of truth) and are scored exactly with numpy from an in-process
cache that is refreshed when the space's write generation moves.

The store knows nothing about embedding models beyond the name and dimension it
records; :mod:`bli_memory.core.embedded.engine` computes vectors and ranks.

:class:`SQLiteStore` is the memories over one connection
(:class:`~bli_memory.core.embedded.store_base.StoreBase`), from two bases, its reads (rows,
aliases and the FTS5 index, :mod:`.store_reads`) and the vector cache (:mod:`.vector_cache`,
blobs in :mod:`.vector_codec`), with its write sessions (:mod:`.store_writes`) and purge
here. Every other job is a part it holds over the same connection, not a slice of the class:
the extract-job queue (``jobs``, :mod:`.store_jobs`), recordings (:mod:`.store_recordings`),
the experience log (:mod:`.store_experience`), export and import (``transfer``), audit and
repair (``integrity``, :mod:`.store_audit`) and the browser's reads (``browse``,
:mod:`.store_browse`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bli_memory.core.embedded.side_index_files import index_folder
from bli_memory.core.embedded.store_audit import SQLiteIntegrity
from bli_memory.core.embedded.store_base import now_iso
from bli_memory.core.embedded.store_browse import SQLiteBrowse
from bli_memory.core.embedded.store_experience import SQLiteExperience
from bli_memory.core.embedded.store_jobs import SQLiteJobs
from bli_memory.core.embedded.store_reads import StoreReads
from bli_memory.core.embedded.store_recordings import SQLiteRecordings
from bli_memory.core.embedded.store_transfer import SQLiteTransfer
from bli_memory.core.embedded.store_writes import SQLiteWrite
from bli_memory.core.embedded.vector_cache import VectorCache
from bli_memory.core.embedded.vector_codec import VectorSet, decode_vector, encode_vector
from bli_memory.core.memory.job_queue import ExtractJob  # the one job record, shared with the team store
from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS, content_hash, normalise_content

__all__ = [
    "MAX_CONTENT_CHARS",
    "ExtractJob",
    "SQLiteStore",
    "VectorSet",
    "content_hash",
    "decode_vector",
    "encode_vector",
    "normalise_content",
    "now_iso",
]


class SQLiteStore(StoreReads, VectorCache):
    """One embedded store file.

    Args:
        path: The SQLite file; its folder is created (mode 0700) if missing.
        model_name: Name of the embedding model whose vectors this process writes.
        dimensions: Length of those vectors.
        busy_timeout_ms: How long a write waits for another process's write lock.

    Raises:
        StoreError: the file cannot be opened or is not a BLI Memory store.
        MigrationError: the schema cannot be brought up to date.

    A store whose vectors were made by another model opens (to inspect, list, export
    and re-embed it); searching and writing vectors raise ``ModelMismatchError``
    (:meth:`require_model`).

    The memories themselves are this class: its reads (rows, aliases, the FTS5 index), the
    vector cache, its write sessions (:meth:`writing`) and purge; every other job is a part
    over the same connection: :attr:`jobs`, :attr:`recordings`, :attr:`experience`,
    :attr:`transfer`, :attr:`integrity` and :attr:`browse`.
    """

    def __init__(self, path: Path, *, model_name: str, dimensions: int,
                 busy_timeout_ms: int = 10_000) -> None:
        super().__init__(path, model_name=model_name, dimensions=dimensions, busy_timeout_ms=busy_timeout_ms)
        #: The extract-job queue (:class:`~bli_memory.core.memory.job_queue.JobQueue`).
        self.jobs = SQLiteJobs(self)
        #: Recorded session turns.
        self.recordings = SQLiteRecordings(self)
        #: The local experience log.
        self.experience = SQLiteExperience(self)
        #: Export and import of rows.
        self.transfer = SQLiteTransfer(self)
        #: Audit and repair of the derived indexes.
        self.integrity = SQLiteIntegrity(self)
        #: The memory browser's reads.
        self.browse = SQLiteBrowse(self)

    @contextmanager
    def writing(self, tag: str) -> Iterator[SQLiteWrite]:
        """One write transaction on the space ``tag`` names (aliases resolved).

        Raises:
            StoreError: the file is busy or read-only (reason ``store_busy``).
        """
        canonical, spaces = self.resolve_space(tag)
        with self._write() as conn:
            yield SQLiteWrite(self, conn, canonical, tuple(spaces), self.vectors)

    def purge(self, id: str) -> int:
        """Erase a memory and every version of it from the file, for secrets saved by mistake.

        Uses ``secure_delete`` and checkpoints the WAL so the bytes leave the disk
        files, not just the live set, and removes the saved side indexes of the store
        (:func:`~bli_memory.core.embedded.side_index_files.index_folder`), which long-lived
        processes then rebuild from the table. Each distinct text of the chain leaves a
        purge mark (:func:`bli_memory.core.extraction.tombstones.fingerprint`: keyed
        hashes, no text), so automatic capture does not bring the memory back from a
        queued job or a later restatement.

        Returns:
            Number of rows erased.

        Raises:
            NotFoundError: no row has this id.
        """
        from bli_memory.core.extraction.tombstones import fingerprint

        chain = self.history(id)
        texts: dict[str, str] = {}
        for m in chain:
            texts.setdefault(m.content, m.space)
        marks = [(space, json.dumps(fingerprint(text), sort_keys=True)) for text, space in texts.items()]
        with self._lock:
            with self._write() as conn:
                now = now_iso()
                for space, mark in marks:
                    conn.execute("INSERT INTO purge_marks (space, mark, created_at) VALUES (?, ?, ?)",
                                 (space, mark, now))
                for m in chain:
                    seq = conn.execute("SELECT seq FROM memories WHERE id = ?", (m.id,)).fetchone()
                    if seq is None:
                        continue
                    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq[0],))
                    conn.execute("DELETE FROM memories WHERE seq = ?", (seq[0],))
                    # Never hand this seq out again (see NEXT_SEQ).
                    conn.execute(
                        "INSERT INTO store_meta (key, value) VALUES ('purged_seq', ?) ON CONFLICT (key) "
                        "DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                        (seq[0],),
                    )
                    self._bump(conn, m.space, removal=True)
                    # A queued or failed extract job may still hold the raw text.
                    conn.execute(
                        "DELETE FROM memory_extract_jobs WHERE space = ? AND instr(text, ?) > 0",
                        (m.space, m.content),
                    )
            self._conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        # Saved side indexes and vector matrices may hold the purged terms and vector.
        shutil.rmtree(index_folder(self.path), ignore_errors=True)
        return len(chain)
