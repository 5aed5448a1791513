"""Integrity of the derived indexes (keyword rows, vectors) and their repair.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.store_reads import StoreReads
from bli_memory.core.embedded.vector_codec import encode_vector
from bli_memory.core.errors import NotFoundError
from bli_memory.core.memory.terms import index_text

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "SQLiteIntegrity",
]


class SQLiteIntegrity:
    """Audit and repair of the derived indexes: a part of
    :class:`~bli_memory.core.embedded.store.SQLiteStore` (``store.integrity``) over its connection.

    Args:
        db: The store whose connection and transactions it uses.
    """

    def __init__(self, db: StoreReads) -> None:
        self._db = db

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Check that the derived indexes agree with the rows; optionally rebuild them.

        Checks: every live row has a keyword-index entry and a usable vector of this
        store's model (``wrong_model`` also counts vectors that are not finite or not of
        unit length, which no cosine can use); no keyword entry points at a missing,
        superseded or forgotten row.

        Returns:
            ``{"counts": {...}, "missing_keyword": n, "stale_keyword": n,
            "missing_vector": n, "wrong_model": n, "ok": bool, "repaired": bool,
            "needs_embedding": [seq, ...]}`` (``needs_embedding``: live rows whose vector
            must be recomputed by the engine).
        """
        with self._db._read() as conn:
            live = {r[0] for r in conn.execute("SELECT seq FROM memories WHERE state = 'active'")}
            indexed = {r[0] for r in conn.execute("SELECT rowid FROM memory_fts")}
            no_vec = [r[0] for r in conn.execute(
                "SELECT seq FROM memories WHERE state = 'active' AND embedding IS NULL")]
            wrong = [r[0] for r in conn.execute(
                "SELECT seq FROM memories WHERE state = 'active' AND embedding IS NOT NULL "
                "AND (embedding_model IS NOT ? OR length(embedding) != ?)",
                (self._db.model_name, 4 * self._db.dimensions))]
            wrong += self._unusable_vectors(conn)
        report: dict[str, Any] = {
            "counts": self._db.count_by_state(),
            "missing_keyword": len(live - indexed),
            "stale_keyword": len(indexed - live),
            "missing_vector": len(no_vec),
            "wrong_model": len(wrong),
            "needs_embedding": sorted(no_vec + wrong),
        }
        report["ok"] = not any(report[k] for k in ("missing_keyword", "stale_keyword", "missing_vector",
                                                    "wrong_model"))
        report["repaired"] = False
        if repair and not report["ok"]:
            with self._db._write() as conn:
                conn.execute("DELETE FROM memory_fts")
                for seq, content in conn.execute(
                    "SELECT seq, content FROM memories WHERE state = 'active'"
                ).fetchall():
                    conn.execute(
                        "INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)", (seq, index_text(content))
                    )
                conn.execute(
                    "UPDATE space_generation SET generation = generation + 1, removals = removals + 1"
                )
                # The keyword index was rewritten without a row moving: saved side indexes are stale.
                conn.execute("UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 "
                             "WHERE key = 'side_index_epoch'")
            report["repaired"] = True
        return report

    def _unusable_vectors(self, conn: sqlite3.Connection) -> list[int]:
        """Seqs of live rows of this model whose vector is not finite or not unit length."""
        import numpy as np

        bad: list[int] = []
        cur = conn.execute(
            "SELECT seq, embedding FROM memories WHERE state = 'active' AND embedding IS NOT NULL "
            "AND embedding_model IS ? AND length(embedding) = ?",
            (self._db.model_name, 4 * self._db.dimensions))
        while rows := cur.fetchmany(10_000):
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
            with np.errstate(all="ignore"):
                norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
            for (seq, _), norm in zip(rows, norms, strict=True):
                if not np.isfinite(norm) or abs(norm - 1.0) > 0.01:
                    bad.append(int(seq))
        return bad

    def set_vector(self, seq: int, vector: np.ndarray) -> None:
        """Store a recomputed vector for a row (audit repair)."""
        with self._db._write() as conn:
            self._db.claim_model(conn)
            row = conn.execute("SELECT space FROM memories WHERE seq = ?", (seq,)).fetchone()
            if row is None:
                raise NotFoundError(f"no row {seq}")
            conn.execute(
                "UPDATE memories SET embedding = ?, embedding_model = ? WHERE seq = ?",
                (encode_vector(vector), self._db.model_name, seq),
            )
            self._db._bump(conn, row[0], removal=True)

    def content_of(self, seq: int) -> str:
        """The content of a row by sequence number."""
        with self._db._read() as conn:
            row = conn.execute("SELECT content FROM memories WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise NotFoundError(f"no row {seq}")
        return str(row[0])
