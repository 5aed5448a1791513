"""The embedded SQLite store: memory rows, keyword index, vectors, aliases, jobs.

One SQLite file (WAL, busy timeout) shared by the MCP server, the hooks and the
daemon. Every write is one ``BEGIN IMMEDIATE`` transaction in which the row, its
keyword-index entry and its vector agree. Vectors are little-endian float32 blobs in
the row (the source of truth) and are scored exactly with numpy from an in-process
cache that is refreshed when the space's write generation moves.

The store knows nothing about embedding models beyond the name and dimension it
records; :mod:`bli_memory.core.embedded.engine` computes vectors and ranks.

:class:`SQLiteStore` is the memories over one connection
(:class:`~bli_memory.core.embedded.store_base.StoreBase`): aliases (:mod:`.store_aliases`),
row reads (:mod:`.store_reads`), writes (:mod:`.store_writes`), the FTS5 index
(:mod:`.store_fts`) and the vector cache (:mod:`.vector_cache`, blobs in
:mod:`.vector_codec`). Every other job is a part it holds over the same connection, not a
slice of the class: the extract-job queue (``jobs``, :mod:`.store_jobs`), recordings
(:mod:`.store_recordings`), the experience log (:mod:`.store_experience`), export and
import (``transfer``), audit and repair (``integrity``, :mod:`.store_audit`) and the
browser's reads (``browse``, :mod:`.store_browse`).
"""

from __future__ import annotations

from pathlib import Path

from bli_memory.core.embedded.store_audit import SQLiteIntegrity
from bli_memory.core.embedded.store_base import now_iso
from bli_memory.core.embedded.store_browse import SQLiteBrowse
from bli_memory.core.embedded.store_experience import SQLiteExperience
from bli_memory.core.embedded.store_fts import KeywordReads
from bli_memory.core.embedded.store_jobs import SQLiteJobs
from bli_memory.core.embedded.store_recordings import SQLiteRecordings
from bli_memory.core.embedded.store_transfer import SQLiteTransfer
from bli_memory.core.embedded.store_writes import StoreWrites
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


class SQLiteStore(StoreWrites, KeywordReads, VectorCache):
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

    The memories themselves (rows, aliases, the FTS5 index, the vector cache, writes) are
    this class; every other job is a part over the same connection: :attr:`jobs`,
    :attr:`recordings`, :attr:`experience`, :attr:`transfer`, :attr:`integrity` and
    :attr:`browse`.
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
