"""The memory controls of the team store that read or erase rows: info, list, get, purge."""

from __future__ import annotations

import uuid
from typing import Any

from bli_memory.core.errors import NotFoundError
from bli_memory.core.memory.version_ids import shown_id
from bli_memory.core.models import Memory
from bli_memory.core.team.postgres.base import MEMORY_COLUMNS, PgCore, one_row, row_to_memory

__all__ = ["ControlsMixin"]


class ControlsMixin(PgCore):
    """Inspection and purge (part of :class:`~bli_memory.core.team.postgres.store.PostgresBackend`)."""

    def purge(self, id: str) -> int:
        """Erase a memory and every version of it (secrets saved by mistake).

        Each distinct text of the chain leaves a purge mark owned by the memory's owner
        (:func:`bli_memory.core.extraction.tombstones.fingerprint`: keyed hashes, no
        text), so the job drain does not bring it back from a queued capture or a later
        restatement.

        Returns:
            Number of rows erased.

        Raises:
            NotFoundError: unknown id, or one in a space this person cannot change.
        """
        from psycopg.types.json import Jsonb

        from bli_memory.core.extraction.tombstones import fingerprint

        with self._tx("purge") as conn:
            chain, owner_id = self._chain(conn, id)
            view = self._view(conn, chain[0].space)
            if owner_id not in view.writers:
                raise NotFoundError(f"memory {id} is in a space shared with you read-only",
                                    reason="read_only")
            self._lock_space(conn, owner_id, chain[0].space)
            cur = conn.execute(
                "DELETE FROM memories WHERE space = %s AND owner_id = %s AND id = ANY(%s::uuid[])",
                (chain[0].space, owner_id, [m.id for m in chain]),
            )
            with conn.cursor() as marks:
                marks.executemany(
                    "INSERT INTO memory_purge_marks (space, owner_id, mark) VALUES (%s, %s, %s)",
                    [(chain[0].space, owner_id, Jsonb(fingerprint(text)))
                     for text in dict.fromkeys(m.content for m in chain)],
                )
            return cur.rowcount


    def info(self, *, space: str) -> dict[str, Any]:
        """The space in use, its aliases, counts by state, the store and the model.

        The same shape as :meth:`EmbeddedBackend.info`, as this person sees the space:
        counts cover their own rows and rows of people who shared the space with them;
        ``extractJobs`` counts their own jobs of the space and ``recordings`` their own
        recorded session turns of it (:meth:`record_turn`), aliases included: a share
        opens memories, never another person's recordings. ``store`` is
        ``{"kind": "postgres", "database": name}`` (never the URL: it may hold a password).
        """
        me = self._me()
        with self._conn("describe a space") as conn:
            view = self._view(conn, space)
            counts = {"active": 0, "superseded": 0, "forgotten": 0}
            counts.update({r[0]: int(r[1]) for r in conn.execute(
                "SELECT state, count(*) FROM memories WHERE space = ANY(%s) AND owner_id = ANY(%s) "
                "GROUP BY state", (list(view.spaces), list(view.readers)))})
            jobs = {r[0]: int(r[1]) for r in conn.execute(
                "SELECT state, count(*) FROM memory_extract_jobs WHERE space = ANY(%s) AND owner_id = %s "
                "GROUP BY state", (list(view.spaces), me))}
            (recordings,) = one_row(conn.execute(
                "SELECT count(*) FROM memory_session_recordings WHERE space = ANY(%s) AND owner_id = %s",
                (list(view.spaces), me)).fetchone(), "describe a space")
        return {
            "space": view.canonical,
            "aliases": [t for t in view.spaces if t != view.canonical],
            "counts": counts,
            "recordings": int(recordings),
            "store": {"kind": "postgres", "database": self._database_name()},
            "embeddingModel": self.model_name,
            "extractJobs": jobs,
        }

    def list_memories(self, *, space: str, limit: int = 20) -> list[Memory]:
        """Newest live (unexpired) memories of a space this person reads; ``limit`` 1..100."""
        limit = max(1, min(int(limit), 100))
        with self._conn("list memories") as conn:
            view = self._view(conn, space)
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = ANY(%s) AND owner_id = ANY(%s) "
                "AND state = 'active' AND (expires_at IS NULL OR expires_at > now()) "
                "ORDER BY seq DESC LIMIT %s",
                (list(view.spaces), list(view.readers), limit),
            ).fetchall()
        return [row_to_memory(r) for r in rows]

    def get_memory(self, id: str, *, include_inactive: bool = False) -> tuple[Memory, list[Memory]]:
        """One memory and its version history, newest first (as :meth:`EmbeddedBackend.get_memory`).

        Args:
            id: Any version's id.
            include_inactive: Allow a superseded or forgotten version, and include the
                superseded versions and the tombstone in the history.

        Raises:
            NotFoundError: unknown id, one in a space this person cannot read (the same
                answer, so nothing leaks), or an inactive one without ``include_inactive``.
        """
        hint = " (includeInactive / --include-inactive reads old versions)"
        with self._conn("read a memory") as conn:
            try:
                chain, _ = self._chain(conn, id)
            except NotFoundError:
                if include_inactive:
                    raise NotFoundError(f"no memory with id {shown_id(id)} (never saved, purged, or not "
                                        "yours to read)") from None
                raise NotFoundError(f"no live memory with id {shown_id(id)}{hint}") from None
        key = str(uuid.UUID(str(id)))
        memory = next((m for m in chain if m.id == key), None)
        if memory is not None and memory.state == "superseded" and not include_inactive \
                and chain[0].state == "active":
            memory = chain[0]  # an id names the memory: read its live head
        if memory is None or (memory.state != "active" and not include_inactive):
            raise NotFoundError(f"no live memory with id {shown_id(id)}{hint}")
        history = [m for m in chain if m.id != memory.id]
        if not include_inactive:
            history = [m for m in history if m.state == "superseded"]
        return memory, history
