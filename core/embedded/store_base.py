"""The embedded store's connection, lifecycle and row codec, shared by its parts.

One SQLite file (WAL, busy timeout) shared by the MCP server, the hooks and the daemon;
reads hold the store's lock, every write is one ``BEGIN IMMEDIATE`` transaction.
:class:`~bli_memory.core.embedded.store.SQLiteStore` is the memories over
:class:`StoreBase` (reads, writes, the keyword index, the vector cache), and holds its
other jobs as parts over the same connection (job queue, recordings, experience,
export/import, audit, browsing).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bli_memory.core.embedded.migrations import migrate
from bli_memory.core.errors import ModelMismatchError, StoreError
from bli_memory.core.models import Memory
from bli_memory.core.private_files import make_own_private_dir, make_private_file

__all__ = [
    "COLUMNS",
    "NEXT_SEQ",
    "StoreBase",
    "iso",
    "now_iso",
    "row_to_memory",
]

#: The columns every read of ``memories`` selects, in :func:`row_to_memory` order.
COLUMNS = (
    "seq, id, space, content, custom_id, metadata, source, session_id, created_at, updated_at, "
    "version, supersedes, state, forgotten_at, expires_at"
)

#: The next row ``seq``: one past the highest ever used, purged rows included. SQLite
#: would otherwise reuse the number of a purged newest row, and every derived index keyed
#: by seq (the in-process vector cache, the side indexes of core/embedded/side_indexes.py) would
#: take the new row for the purged one, keeping the purged text findable.
NEXT_SEQ = (
    "(SELECT max(coalesce((SELECT max(seq) FROM memories), 0), "
    "coalesce((SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'purged_seq'), 0)) + 1)"
)


def now_iso() -> str:
    """Current UTC time as ISO 8601 with microseconds and ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso(moment: datetime) -> str:
    """``moment`` as UTC ISO 8601 with microseconds and ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def row_to_memory(row: Sequence[Any]) -> Memory:
    """The :class:`Memory` of one ``memories`` row selected as :data:`COLUMNS`."""
    return Memory(
        id=row[1],
        space=row[2],
        content=row[3],
        custom_id=row[4],
        metadata=json.loads(row[5]) if row[5] else {},
        source=row[6],
        session_id=row[7],
        created_at=row[8],
        updated_at=row[9],
        version=row[10],
        supersedes=row[11],
        state=row[12],
        forgotten_at=row[13],
        expires_at=row[14],
    )


class StoreBase:
    """One open store file: the connection, its lock, the model check and the write
    generation (arguments and errors: :class:`~bli_memory.core.embedded.store.SQLiteStore`)."""

    def __init__(
        self,
        path: Path,
        *,
        model_name: str,
        dimensions: int,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        self.path = Path(path)
        self.model_name = model_name
        self.dimensions = dimensions
        self._lock = threading.RLock()
        #: Per set of spaces, the vector cache's buffers (:mod:`bli_memory.core.embedded.vector_cache`).
        self._vector_cache: dict[tuple[str, ...], Any] = {}
        try:
            # The folder is ours: one left open to others (0777) is made 0700 first.
            make_own_private_dir(self.path.parent)
            # Created 0600 before SQLite opens it; -wal and -shm then get the same mode.
            make_private_file(self.path)
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_ms / 1000, isolation_level=None,
                check_same_thread=False,
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            # Deleted and overwritten content is zeroed on disk, not left in free pages.
            self._conn.execute("PRAGMA secure_delete = ON")
            for part in (self.path, *(self.path.with_name(self.path.name + end) for end in ("-wal", "-shm"))):
                if part.exists() and part.stat().st_mode & 0o077:
                    part.chmod(0o600)  # memories are private, whoever made the file before
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the memory store: {exc}", reason="store_unavailable") from exc
        try:
            self.migrations_applied = migrate(self._conn)
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:  # pragma: no cover - closing never matters
                pass

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"store read failed: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; rolled back on any exception."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"store is busy or read-only: {exc}", reason="store_busy") from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"store write failed: {exc}") from exc
                raise

    def claim_model(self, conn: sqlite3.Connection) -> None:
        """Inside a write that stores a vector: record this process's model in a store
        that records none yet, then :meth:`require_model`.

        A store records its model at its first vector, not when it is opened: a process
        whose configured model is not installed (``mpnet`` before ``model install``)
        opens, lists and informs, and must not leave an empty store claimed by a model
        that never embedded anything, which would refuse the shipped model until
        ``memory reembed``. A store that records a model but holds no vector (claimed
        by such an open before this rule) is claimed anew. Writes are ``BEGIN
        IMMEDIATE``, so two processes of two models racing on a new store cannot both
        record theirs.

        Raises:
            ModelMismatchError: the store records another embedding model.
        """
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'embedding_model'").fetchone()
        if row is None or row[0] != self.model_name:
            self.require_model(conn)  # passes only while no vector is stored
            conn.execute(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('embedding_model', ?), "
                "('embedding_dimensions', ?)",
                (self.model_name, str(self.dimensions)),
            )

    def require_model(self, conn: sqlite3.Connection | None = None) -> None:
        """Raise unless the store's recorded model is this process's (read each time, so
        a store re-embedded by another process is refused from then on). A store that
        records no model yet, or holds no vector at all, is any process's: there is
        nothing to compare across models.

        Raises:
            ModelMismatchError: the store holds vectors of another embedding model.
        """
        if conn is None:
            with self._read() as own:
                return self.require_model(own)
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'embedding_model'").fetchone()
        recorded = row[0] if row else self.model_name
        if recorded != self.model_name and conn.execute(
                "SELECT 1 FROM memories WHERE embedding IS NOT NULL LIMIT 1").fetchone() is not None:
            from bli_memory.core.memory.model_mismatch import mismatch_advice

            # Rows of this model already: a reembed to it stopped part way (it goes by seq,
            # so the first such row is found early).
            unfinished = conn.execute("SELECT 1 FROM memories WHERE embedding_model = ? LIMIT 1",
                                      (self.model_name,)).fetchone() is not None
            advice = mismatch_advice(recorded, self.model_name, unfinished=unfinished)
            raise ModelMismatchError(
                f"the store at {self.path} holds vectors of the embedding model {recorded!r}, "
                f"but this process uses {self.model_name!r}; {advice}"
                ", or point BLI_MEMORY_DATA_DIR at another store"
            )
        return None

    def meta(self) -> dict[str, str]:
        """The store's recorded metadata (embedding model, dimensions)."""
        with self._read() as conn:
            return dict(conn.execute("SELECT key, value FROM store_meta").fetchall())

    @staticmethod
    def _bump(conn: sqlite3.Connection, space: str, *, removal: bool) -> None:
        conn.execute(
            "INSERT INTO space_generation (space, generation, removals) VALUES (?, 1, ?) "
            "ON CONFLICT (space) DO UPDATE SET generation = generation + 1, "
            "removals = removals + excluded.removals",
            (space, 1 if removal else 0),
        )
