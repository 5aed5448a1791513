"""Session recordings (``memory_session_recordings``): capture-only turns, never searched.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from bli_memory.core.embedded.store_base import StoreBase, now_iso

__all__ = [
    "SQLiteRecordings",
]


class SQLiteRecordings:
    """Recorded session turns, capture-only: a part of
    :class:`~bli_memory.core.embedded.store.SQLiteStore` (``store.recordings``) over its connection.

    Args:
        db: The store whose connection and transactions it uses.
    """

    def __init__(self, db: StoreBase) -> None:
        self._db = db

    def add_recording(self, text: str, *, space: str, source: str, session_id: str | None) -> str:
        """Write one capture-only recording row; returns its id."""
        rec_id = str(uuid.uuid4())
        with self._db._write() as conn:
            conn.execute(
                "INSERT INTO session_recordings (id, space, session_id, source, text, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (rec_id, space, session_id, source, text, now_iso()),
            )
        return rec_id

    def recording_count(self, spaces: Sequence[str]) -> int:
        """How many recorded turns these spaces hold."""
        marks = ",".join("?" * len(spaces))
        with self._db._read() as conn:
            return int(conn.execute(
                f"SELECT count(*) FROM session_recordings WHERE space IN ({marks})", tuple(spaces)
            ).fetchone()[0])

    def list_recordings(self, spaces: Sequence[str], *, limit: int) -> list[dict[str, Any]]:
        """Recorded turns of these spaces, newest first: ``{"id", "space", "sessionId",
        "source", "createdAt", "text"}``."""
        marks = ",".join("?" * len(spaces))
        with self._db._read() as conn:
            rows = conn.execute(
                "SELECT id, space, session_id, source, created_at, text FROM session_recordings "
                f"WHERE space IN ({marks}) ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (*spaces, int(limit)),
            ).fetchall()
        keys = ("id", "space", "sessionId", "source", "createdAt", "text")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def delete_recordings(self, spaces: Sequence[str]) -> int:
        """Erase every recorded turn of these spaces (``secure_delete`` is on); returns how many."""
        marks = ",".join("?" * len(spaces))
        with self._db._write() as conn:
            cur = conn.execute(f"DELETE FROM session_recordings WHERE space IN ({marks})", tuple(spaces))
            n = cur.rowcount
        return int(n)
