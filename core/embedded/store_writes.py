"""Writes of memory rows: save (dedup, ``customId`` upsert), supersede, tombstone, purge.

Every write is one ``BEGIN IMMEDIATE`` transaction in which the row, its keyword-index
entry and its vector agree.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.side_index_files import index_folder
from bli_memory.core.embedded.store_base import COLUMNS, NEXT_SEQ, StoreBase, now_iso, row_to_memory
from bli_memory.core.embedded.store_reads import StoreReads
from bli_memory.core.embedded.vector_codec import encode_vector
from bli_memory.core.errors import NotFoundError, StoreError
from bli_memory.core.memory.retrieval_writes import (
    content_hash,
    first_version,
    is_same_upsert,
    upserted_version,
)
from bli_memory.core.memory.terms import index_text
from bli_memory.core.models import Memory

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "StoreWrites",
]


class StoreWrites(StoreReads):
    """Writes of memory rows."""

    def _insert(self, conn: sqlite3.Connection, memory: Memory, vector: np.ndarray) -> None:
        if vector.shape != (self.dimensions,):
            raise StoreError(f"vector has shape {vector.shape}, expected ({self.dimensions},)")
        self.claim_model(conn)
        cur = conn.execute(
            "INSERT INTO memories (seq, id, space, content, custom_id, metadata, source, session_id, "
            "created_at, updated_at, version, supersedes, state, forgotten_at, expires_at, "
            "content_sha256, embedding, embedding_model) "
            f"VALUES ({NEXT_SEQ}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', NULL, ?, ?, ?, ?)",
            (
                memory.id, memory.space, memory.content, memory.custom_id,
                json.dumps(memory.metadata, ensure_ascii=False, sort_keys=True), memory.source,
                memory.session_id, memory.created_at, memory.updated_at, memory.version,
                memory.supersedes, memory.expires_at, content_hash(memory.content),
                encode_vector(vector), self.model_name,
            ),
        )
        conn.execute(
            "INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)",
            (cur.lastrowid, index_text(memory.content)),
        )
        self._bump(conn, memory.space, removal=False)

    @staticmethod
    def _retire(conn: sqlite3.Connection, memory: Memory, state: str, at: str) -> None:
        """Move a live row out of the live set and out of the keyword index."""
        seq = conn.execute("SELECT seq FROM memories WHERE id = ?", (memory.id,)).fetchone()[0]
        if state == "forgotten":
            conn.execute(
                "UPDATE memories SET state = 'forgotten', forgotten_at = ?, updated_at = ?, "
                "embedding = NULL, embedding_model = NULL WHERE seq = ?",
                (at, at, seq),
            )
        else:
            conn.execute(
                "UPDATE memories SET state = ?, updated_at = ? WHERE seq = ?", (state, at, seq)
            )
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq,))
        StoreBase._bump(conn, memory.space, removal=True)

    def save(
        self,
        content: str,
        vector: np.ndarray,
        *,
        space: str,
        spaces: Sequence[str],
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        source: str = "mcp",
        session_id: str | None = None,
        expires_at: str | None = None,
    ) -> tuple[str, Memory, Memory | None]:
        """Insert, deduplicate or upsert, in one transaction.

        Args:
            content: Normalised content (see :func:`normalise_content`).
            vector: Its embedding, float32 (d,).
            space: Canonical tag the row goes to.
            spaces: Every tag naming the space (duplicates are looked for in all).
            custom_id: Upsert key: a live row with it becomes history of the new row.

        Returns:
            ``(status, live_row, previous)`` with status ``created``, ``duplicate`` or
            ``updated``.
        """
        sha = content_hash(content)
        marks = ",".join("?" * len(spaces))
        at = now_iso()
        with self._write() as conn:
            if custom_id is not None:
                row = conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE state = 'active' AND custom_id = ? "
                    f"AND space IN ({marks})",
                    (custom_id, *spaces),
                ).fetchone()
                if row is not None:
                    previous = row_to_memory(row)
                    if is_same_upsert(previous, sha, metadata):
                        return "duplicate", previous, None
                    self._retire(conn, previous, "superseded", at)
                    memory = upserted_version(
                        previous, content=content, custom_id=custom_id, metadata=metadata, source=source,
                        session_id=session_id, at=at, expires_at=expires_at,
                    )
                    self._insert(conn, memory, vector)
                    return "updated", memory, previous
            else:
                row = conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE state = 'active' AND content_sha256 = ? "
                    f"AND space IN ({marks}) AND (expires_at IS NULL OR expires_at > ?) ORDER BY seq LIMIT 1",
                    (sha, *spaces, at),
                ).fetchone()
                if row is not None:
                    return "duplicate", row_to_memory(row), None
            memory = first_version(
                space=space, content=content, custom_id=custom_id, metadata=metadata, source=source,
                session_id=session_id, at=at, expires_at=expires_at,
            )
            self._insert(conn, memory, vector)
            return "created", memory, None

    def supersede(self, previous: Memory, content: str, vector: np.ndarray) -> Memory:
        """Replace a live row with a new version pointing at it, in one transaction.

        Raises:
            NotFoundError: ``previous`` is no longer live (another writer got there first).
        """
        at = now_iso()
        with self._write() as conn:
            state = conn.execute("SELECT state FROM memories WHERE id = ?", (previous.id,)).fetchone()
            if state is None or state[0] != "active":
                raise NotFoundError(f"memory {previous.id} is no longer live")
            self._retire(conn, previous, "superseded", at)
            expired = previous.expires_at is not None and previous.expires_at <= at
            memory = replace(
                previous, id=str(uuid.uuid4()), content=content, created_at=at, updated_at=at,
                version=previous.version + 1, supersedes=previous.id, state="active",
                expires_at=None if expired else previous.expires_at,
            )
            self._insert(conn, memory, vector)
        return memory

    def forget(self, memory: Memory) -> Memory:
        """Tombstone a live row: state ``forgotten``, out of the keyword index, vector dropped.

        Raises:
            NotFoundError: it is not live.
        """
        at = now_iso()
        with self._write() as conn:
            state = conn.execute("SELECT state FROM memories WHERE id = ?", (memory.id,)).fetchone()
            if state is None or state[0] != "active":
                raise NotFoundError(f"memory {memory.id} is not live")
            self._retire(conn, memory, "forgotten", at)
        return replace(memory, state="forgotten", forgotten_at=at, updated_at=at)

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
