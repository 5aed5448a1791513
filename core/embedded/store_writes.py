"""The embedded store's write session (:class:`SQLiteWrite`).

A write is one ``BEGIN IMMEDIATE`` transaction (:meth:`SQLiteStore.writing`) in which the
row, its keyword-index entry and its vector agree; what is written is the memory engine's
rule (:mod:`bli_memory.core.memory.engine_writes`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.core.embedded.store_base import COLUMNS, NEXT_SEQ, StoreBase, now_iso, row_to_memory
from bli_memory.core.embedded.store_reads import StoreReads
from bli_memory.core.embedded.vector_codec import encode_vector
from bli_memory.core.errors import StoreError
from bli_memory.core.memory.engine_writes import LiveRow
from bli_memory.core.memory.retrieval_writes import content_hash
from bli_memory.core.memory.terms import index_text

if TYPE_CHECKING:
    import numpy as np

    from bli_memory.core.embedded.vector_codec import VectorSet
    from bli_memory.core.models import Memory

__all__ = ["SQLiteWrite"]


class SQLiteWrite:
    """One write transaction on one space of the file
    (:class:`~bli_memory.core.memory.engine_writes.WriteSession`); rows have no owner."""

    def __init__(self, store: StoreReads, conn: sqlite3.Connection, canonical: str,
                 spaces: tuple[str, ...], vectors: Callable[[Sequence[str]], VectorSet]) -> None:
        self.canonical = canonical
        self.spaces = spaces
        self.at = now_iso()
        self._store = store
        self._conn = conn
        self._vectors = vectors

    def find_live(self, *, id: str | None = None, custom_id: str | None = None, sha: str | None = None,
                  unexpired: bool = True, writable_only: bool = False) -> LiveRow | None:
        """The live row with this id, ``customId`` or content hash (every row of the file
        is the person's: ``writable_only`` changes nothing)."""
        arg: str | None
        if id is not None:
            cond, arg, order = "id = ?", id, "DESC"
        elif custom_id is not None:
            cond, arg, order = "custom_id = ?", custom_id, "DESC"
        else:
            cond, arg, order = "content_sha256 = ?", sha, "ASC"
        marks = ",".join("?" * len(self.spaces))
        when = " AND (expires_at IS NULL OR expires_at > ?)" if unexpired else ""
        row = self._conn.execute(
            f"SELECT {COLUMNS} FROM memories WHERE state = 'active' AND {cond} AND space IN ({marks})"
            f"{when} ORDER BY seq {order} LIMIT 1",
            (arg, *self.spaces, *((self.at,) if unexpired else ())),
        ).fetchone()
        return LiveRow(row_to_memory(row)) if row else None

    def chain_ends(self, id: str) -> tuple[Memory | None, Memory | None]:
        """The row ``id`` names and the newest version of its chain."""
        start = self._store.get(id)
        if start is None:
            return None, None
        return start, start if start.state == "active" else self._store.history(id)[0]

    def nearest_live(self, vector: Any) -> tuple[LiveRow, float] | None:
        """Exact cosine over the cached vectors (which may hold expired rows): the closest
        that is live, looked for 64 at a time."""
        import numpy as np

        vs = self._vectors(self.spaces)
        if not vs.size:
            return None
        sims = vs.similarities(vector)
        order = np.argsort(-sims)
        for start in range(0, len(order), 64):
            chunk = order[start:start + 64]
            rows = self._store.rows_by_seq(int(vs.seqs[i]) for i in chunk)  # live, unexpired only
            best = next((int(i) for i in chunk if int(vs.seqs[i]) in rows), None)
            if best is not None:
                return LiveRow(rows[int(vs.seqs[best])]), float(sims[best])
        return None

    def forgotten_since(self, since: str, *, limit: int) -> list[Memory]:
        """Rows forgotten at or after ``since``, newest first."""
        return self._store.forgotten_since(self.spaces, since, limit=limit)

    def check_writable(self, row: LiveRow) -> None:
        """Every row of the file may be changed."""

    def insert(self, memory: Memory, vector: np.ndarray, *, like: LiveRow | None = None) -> None:
        """Insert the row, its keyword entry and its vector.

        Raises:
            StoreError: the vector's shape is not the store's.
            ModelMismatchError: the file's vectors are another model's.
        """
        store = self._store
        if vector.shape != (store.dimensions,):
            raise StoreError(f"vector has shape {vector.shape}, expected ({store.dimensions},)")
        store.claim_model(self._conn)
        cur = self._conn.execute(
            "INSERT INTO memories (seq, id, space, content, custom_id, metadata, source, session_id, "
            "created_at, updated_at, version, supersedes, state, forgotten_at, expires_at, "
            "content_sha256, embedding, embedding_model) "
            f"VALUES ({NEXT_SEQ}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', NULL, ?, ?, ?, ?)",
            (
                memory.id, memory.space, memory.content, memory.custom_id,
                json.dumps(memory.metadata, ensure_ascii=False, sort_keys=True), memory.source,
                memory.session_id, memory.created_at, memory.updated_at, memory.version,
                memory.supersedes, memory.expires_at, content_hash(memory.content),
                encode_vector(vector), store.model_name,
            ),
        )
        self._conn.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)",
                           (cur.lastrowid, index_text(memory.content)))
        StoreBase._bump(self._conn, memory.space, removal=False)

    def retire(self, row: LiveRow, state: Literal["superseded", "forgotten"]) -> bool:
        """Move a live row out of the live set and the keyword index (a forgotten row's
        vector is dropped)."""
        found = self._conn.execute("SELECT seq, state FROM memories WHERE id = ?",
                                   (row.memory.id,)).fetchone()
        if found is None or found[1] != "active":
            return False
        seq, at = found[0], self.at
        if state == "forgotten":
            self._conn.execute(
                "UPDATE memories SET state = 'forgotten', forgotten_at = ?, updated_at = ?, "
                "embedding = NULL, embedding_model = NULL WHERE seq = ?", (at, at, seq))
        else:
            self._conn.execute("UPDATE memories SET state = ?, updated_at = ? WHERE seq = ?",
                               (state, at, seq))
        self._conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq,))
        StoreBase._bump(self._conn, row.memory.space, removal=True)
        return True
