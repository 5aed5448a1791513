"""The experience log kept in the store (what automatic injection did and how it went).
"""

from __future__ import annotations

from typing import Any

from bli_memory.core.embedded.store_base import StoreBase, now_iso

__all__ = [
    "SQLiteExperience",
]


class SQLiteExperience:
    """The local experience log: a part of
    :class:`~bli_memory.core.embedded.store.SQLiteStore` (``store.experience``) over its connection.

    Args:
        db: The store whose connection and transactions it uses.
    """

    def __init__(self, db: StoreBase) -> None:
        self._db = db

    _EXPERIENCE_KEYS = ("store", "verdict", "reason", "created_at")

    def add_experience(self, entry: dict[str, Any]) -> str:
        """Keep one experience entry, with the service door's retry rules, in one transaction.

        Args:
            entry: ``id`` (UUID), ``store``, ``verdict``, ``reason``, ``created_at`` (UTC ISO
                8601), and optionally ``person``, ``device``, ``agent``, ``project``.

        Returns:
            ``created`` (new row; the door's 201), ``identical`` (same id, same
            store/verdict/reason/created_at; 200) or ``conflict`` (same id, other
            content; 409, nothing changed).

        Raises:
            StoreError: the row breaks the table's checks or the write failed.
        """
        values = [str(entry[k]) for k in ("id", *self._EXPERIENCE_KEYS)]
        extra = [str(entry.get(k) or "") for k in ("person", "device", "agent", "project")]
        with self._db._write() as conn:
            row = conn.execute(
                "SELECT store, verdict, reason, created_at FROM memory_experience WHERE id = ?",
                (values[0],),
            ).fetchone()
            if row is not None:
                return "identical" if list(row) == values[1:] else "conflict"
            conn.execute(
                "INSERT INTO memory_experience (id, store, verdict, reason, created_at, person, "
                "device, agent, project, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, *extra, now_iso()),
            )
        return "created"

    def experience_page(
        self, *, since: str, before: tuple[str, str] | None = None, limit: int = 500
    ) -> list[dict[str, Any]]:
        """One page of experience entries at or after ``since``, newest first.

        Rows come in ``(created_at, id)`` order, descending, so a reader that stops
        early (a capped read) has the most recent entries.

        Args:
            since: UTC ISO 8601 lower bound on ``created_at`` (inclusive).
            before: ``(created_at, id)`` of the last row of the previous page (keyset paging).
            limit: Most rows to return.

        Returns:
            Dicts with ``id, store, verdict, reason, created_at, person, device, agent, project``.
        """
        sql = (
            "SELECT id, store, verdict, reason, created_at, person, device, agent, project "
            "FROM memory_experience WHERE created_at >= ?"
        )
        args: list[Any] = [since]
        if before is not None:
            sql += " AND (created_at, id) < (?, ?)"
            args += [before[0], before[1]]
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        args.append(int(limit))
        keys = ("id", "store", "verdict", "reason", "created_at", "person", "device", "agent", "project")
        with self._db._read() as conn:
            return [dict(zip(keys, row, strict=True)) for row in conn.execute(sql, args)]
