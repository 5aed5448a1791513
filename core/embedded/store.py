"""The embedded SQLite store: memory rows, keyword index, vectors, aliases, jobs.

One SQLite file (WAL, busy timeout) shared by the MCP server, the hooks and the
daemon. Every write is one ``BEGIN IMMEDIATE`` transaction in which the row, its
keyword-index entry and its vector agree. Vectors are little-endian float32 blobs in
the row (the source of truth) and are scored exactly with numpy from an in-process
cache that is refreshed when the space's write generation moves.

The store knows nothing about embedding models beyond the name and dimension it
records; :mod:`bli_memory.core.embedded.engine` computes vectors and ranks.

:class:`SQLiteStore` is :class:`~bli_memory.core.embedded.store_base.StoreBase` (the
connection) plus one part per job: aliases (:mod:`.store_aliases`), row reads
(:mod:`.store_reads`), the FTS5 index (:mod:`.store_fts`), the vector cache
(:mod:`.vector_cache`, blobs in :mod:`.vector_codec`), writes (:mod:`.store_writes`), the
extract-job queue (:mod:`.store_jobs`), audit (:mod:`.store_audit`), export and import
(:mod:`.store_transfer`), recordings (:mod:`.store_recordings`), the experience log
(:mod:`.store_experience`) and the browser's reads (:mod:`.store_browse`).
"""

from __future__ import annotations

from bli_memory.core.embedded.store_aliases import SpaceAliases
from bli_memory.core.embedded.store_audit import StoreAudit
from bli_memory.core.embedded.store_base import now_iso
from bli_memory.core.embedded.store_browse import StoreBrowse
from bli_memory.core.embedded.store_experience import StoreExperience
from bli_memory.core.embedded.store_fts import KeywordReads
from bli_memory.core.embedded.store_jobs import JobQueueStore
from bli_memory.core.embedded.store_recordings import StoreRecordings
from bli_memory.core.embedded.store_transfer import StoreTransfer
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


class SQLiteStore(
    SpaceAliases,
    StoreWrites,
    StoreAudit,
    KeywordReads,
    VectorCache,
    JobQueueStore,
    StoreTransfer,
    StoreRecordings,
    StoreExperience,
    StoreBrowse,
):
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
    """
