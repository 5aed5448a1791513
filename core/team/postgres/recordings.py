"""Session recordings in the team store: capture-only turns, never searched or injected."""

from __future__ import annotations

import uuid
from typing import Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.team.postgres.base import PgCore, iso_utc

__all__ = ["PostgresRecordings"]


class PostgresRecordings:
    """Recorded session turns, capture-only: a part of
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (``backend.recordings``) over one
    person's handle.

    Args:
        pg: The person's handle (its pool, view and transactions).
    """

    def __init__(self, pg: PgCore) -> None:
        self._pg = pg

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None,
                    record_id: str | None = None) -> str:
        """Keep one recorded (already redacted) exchange, capture-only; returns its id.

        The service side of :meth:`EmbeddedBackend.record_turn`: one
        ``memory_session_recordings`` row in this person's own canonical space (where a
        save lands), with the device the request came from. The text is stored as
        given, its secrets and labels masked as the embedded store masks them (the stop
        hook bounds it to ``MAX_EXCHANGE_BYTES`` and redacts it first; another client of the
        record door may not); only NUL characters, which a Postgres ``text`` cannot hold,
        are dropped. A recording is never embedded,
        indexed, searched, listed, exported or injected; :meth:`info` counts it.

        Args:
            record_id: The caller's id (a canonical UUID; the stop hook's spool sends one):
                a recording with this id is kept once, so a retry adds nothing.

        Raises:
            InvalidInputError: ``text`` or ``source`` is not a string.
            StoreError: the database failed.
        """
        if not isinstance(text, str) or not isinstance(source, str) or not text.strip():
            raise InvalidInputError("a recording needs text and a source")
        from bli_memory.core.memory.stored_secrets import checked_turn

        text, source, session_id, _ = checked_turn(text, space=space, source=source, session_id=session_id)
        rec_id = record_id or str(uuid.uuid4())
        me = self._pg._me()
        with self._pg._tx("record a session turn") as conn:
            view = self._pg._view(conn, space)
            conn.execute(
                "INSERT INTO memory_session_recordings (id, space, owner_id, device_id, source, session_id, "
                "text) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (rec_id, view.canonical, me, self._pg.device_id, source, session_id,
                 text.replace("\x00", "")),
            )
        return rec_id

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """This person's recorded turns of a space and its aliases, newest first.

        The shape of :meth:`EmbeddedBackend.recordings`. A shared space shares its
        memories, never another person's recordings.
        """
        limit = max(1, min(int(limit), 100))
        with self._pg._conn("list recordings") as conn:
            view = self._pg._view(conn, space)
            rows = conn.execute(
                "SELECT id, space, session_id, source, created_at, text FROM memory_session_recordings "
                "WHERE space = ANY(%s) AND owner_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
                (list(view.spaces), self._pg._me(), limit),
            ).fetchall()
        return [{"id": str(r[0]), "space": r[1], "sessionId": r[2], "source": r[3],
                 "createdAt": iso_utc(r[4]), "text": r[5]} for r in rows]

    def clear_recordings(self, *, space: str) -> int:
        """Erase this person's recorded turns of a space and its aliases; returns how many."""
        with self._pg._tx("clear recordings") as conn:
            view = self._pg._view(conn, space)
            cur = conn.execute(
                "DELETE FROM memory_session_recordings WHERE space = ANY(%s) AND owner_id = %s",
                (list(view.spaces), self._pg._me()),
            )
            return int(cur.rowcount)

    # --- extract jobs (the service's worker) -------------------------------------------
