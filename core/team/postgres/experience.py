"""The experience log in the team store: one opinion per id, idempotent by id."""

from __future__ import annotations

from typing import Any

from bli_memory.core.team.postgres.base import PgCore, iso_utc, one_row

__all__ = ["PostgresExperience"]


class PostgresExperience:
    """The shared experience log: a part of
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (``backend.experience``) over one
    person's handle.

    Args:
        pg: The person's handle (its pool, view and transactions).
    """

    def __init__(self, pg: PgCore) -> None:
        self._pg = pg

    def record_experience(self, entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Insert one experience opinion for this person; idempotent by id.

        Args:
            entry: Validated ``{id, store, verdict, reason, created_at (datetime)}``.

        Returns:
            ``(status, stored)``: ``created``, ``identical`` (a retry with the same
            content), or ``conflict`` (the id exists with other content or person).
        """
        me = self._pg._me()
        with self._pg._tx("record an experience opinion") as conn:
            conn.execute("SELECT set_config('bli.person_id', %s, true)", (str(me),))
            cur = conn.execute(
                "INSERT INTO memory_experience (id, person_id, device_id, store, verdict, reason, "
                "created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (entry["id"], me, self._pg.device_id, entry["store"], entry["verdict"], entry["reason"],
                 entry["created_at"]),
            )
            inserted = cur.rowcount == 1
            row = one_row(conn.execute(
                "SELECT id, person_id, store, verdict, reason, created_at FROM memory_experience "
                "WHERE id = %s",
                (entry["id"],),
            ).fetchone(), "record an experience opinion")
        stored = {"id": str(row[0]), "store": row[2], "verdict": row[3], "reason": row[4],
                  "createdAt": iso_utc(row[5])}
        if inserted:
            return "created", stored
        same = (int(row[1]) == me and row[2] == entry["store"] and row[3] == entry["verdict"]
                and row[4] == entry["reason"] and row[5] == entry["created_at"])
        return ("identical" if same else "conflict"), stored
