"""Export of rows as JSON-ready records (all versions) and their exact import.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.store_base import COLUMNS, NEXT_SEQ, StoreBase, row_to_memory
from bli_memory.core.embedded.vector_codec import encode_vector
from bli_memory.core.memory.retrieval_writes import content_hash
from bli_memory.core.memory.terms import index_text

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "SQLiteTransfer",
]


class SQLiteTransfer:
    """Export and import of rows: a part of
    :class:`~bli_memory.core.embedded.store.SQLiteStore` (``store.transfer``) over its connection.

    Args:
        db: The store whose connection and transactions it uses.
    """

    def __init__(self, db: StoreBase) -> None:
        self._db = db

    def export_rows(self, spaces: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
        """Every row (all states, history included) as JSON-ready dicts, oldest first.

        The embedding is included as base64 float32 with its model name, so an import
        into a store of the same model needs no re-embedding.
        """
        import base64

        from bli_memory.core.memory.wire import record_of

        where = ""
        args: tuple[str, ...] = ()
        if spaces:
            where, args = f"WHERE space IN ({','.join('?' * len(spaces))})", tuple(spaces)
        with self._db._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS}, embedding, embedding_model FROM memories {where} ORDER BY seq", args
            ).fetchall()
        for row in rows:
            record = record_of(row_to_memory(row))
            record["embedding"] = base64.b64encode(row[15]).decode("ascii") if row[15] else None
            record["embeddingModel"] = row[16]
            yield record

    def import_rows(
        self, records: Iterable[dict[str, Any]], vectors: dict[str, np.ndarray]
    ) -> dict[str, int]:
        """Insert exported rows as they were (ids, versions, states, timestamps kept).

        Args:
            records: Dicts from :meth:`export_rows` (checked by the caller).
            vectors: The vector of each record by memory id: the record's own when it
                can be trusted, else recomputed (``EmbeddedBackend.import_records``). A
                record without one is stored without a vector (only retired rows).

        Returns:
            ``{"imported": n, "skipped": n}``; a record whose id already exists is skipped.
        """
        imported = skipped = 0
        with self._db._write() as conn:
            if vectors:
                self._db.claim_model(conn)
            for rec in records:
                if conn.execute("SELECT 1 FROM memories WHERE id = ?", (rec["id"],)).fetchone():
                    skipped += 1
                    continue
                blob = None
                live = (rec.get("state") or "active") == "active"
                if rec["id"] in vectors:
                    blob = encode_vector(vectors[rec["id"]])
                cur = conn.execute(
                    "INSERT INTO memories (seq, id, space, content, custom_id, metadata, source, session_id, "
                    "created_at, updated_at, version, supersedes, state, forgotten_at, expires_at, "
                    "content_sha256, embedding, embedding_model) "
                    f"VALUES ({NEXT_SEQ}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rec["id"], rec["space"], rec["content"], rec.get("customId"),
                        json.dumps(rec.get("metadata") or {}, ensure_ascii=False, sort_keys=True),
                        rec.get("source") or "import", rec.get("sessionId"), rec["createdAt"],
                        rec["updatedAt"], int(rec.get("version") or 1), rec.get("supersedes"),
                        rec.get("state") or "active", rec.get("forgottenAt"), rec.get("expiresAt"),
                        content_hash(rec["content"]), blob, self._db.model_name if blob else None,
                    ),
                )
                if live:
                    conn.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)",
                                 (cur.lastrowid, index_text(rec["content"])))
                self._db._bump(conn, rec["space"], removal=False)
                imported += 1
        return {"imported": imported, "skipped": skipped}
