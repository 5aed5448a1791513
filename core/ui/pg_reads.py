"""The memory browser's reads of the team service's Postgres, as one person.

:class:`PersonStore` gives the pages of :mod:`~bli_memory.core.ui.pages` the reads they
use on the embedded store (``resolve_space``, ``page_live``, ``space_counts``,
``count_by_state``, ``aliases``, ``get``, ``history``) and the changes (``update``,
``forget``, ``purge``, ``search``), computed from what one person may see: their own
rows and the rows of spaces shared with them (``memory_space_shares``), exactly the view
of the HTTP doors (:meth:`bli_memory.core.team.pg_base.PgCore.space_view`). Changes go
through the person's :class:`~bli_memory.core.team.pg_store.PostgresBackend`, so a read-only
share answers ``read_only`` and another person's memory answers ``not_found``, as the
doors do.

:func:`token_key` reads what a browser session is checked against (the stored SHA-256
of a live device token, :mod:`~bli_memory.core.ui.service_guard`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from bli_memory.core.errors import NotFoundError

__all__ = ["PersonStore", "token_key"]

_COUNTS = ("active", "superseded", "forgotten")


def token_key(backend: Any, token_id: str) -> tuple[Any, str] | None:
    """The :class:`~bli_memory.core.team.pg_store.Principal` of live device token ``token_id``
    and its stored SHA-256 hex, or None (unknown, revoked, or not a UUID)."""
    from bli_memory.core.team.pg_access import Principal

    try:
        key = str(uuid.UUID(str(token_id)))
    except ValueError:
        return None
    with backend.connection("check a browser session") as conn:
        row = conn.execute(
            "SELECT t.id, t.person_id, p.name, t.device, t.token_sha256 FROM memory_device_tokens t "
            "JOIN memory_people p ON p.id = t.person_id WHERE t.id = %s AND t.revoked_at IS NULL",
            (key,),
        ).fetchone()
    if row is None:
        return None
    return Principal(person_id=int(row[1]), person=row[2], device_id=str(row[0]), device=row[3]), row[4]


class PersonStore:
    """One person's view of the service database, shaped like the embedded backend.

    Args:
        backend: The person's :class:`~bli_memory.core.team.pg_store.PostgresBackend`
            (from :meth:`~bli_memory.core.team.pg_store.PostgresBackend.for_person`).
        person: Their name (shown on the pages).
        device: The device token's label.

    ``store`` is the object itself, so pages written for ``backend.store.X`` read it.
    """

    def __init__(self, backend: Any, *, person: str, device: str) -> None:
        self.backend = backend
        self.person = person
        self.device = device
        self.store = self
        self.store_path = "team service"
        self._counts: list[tuple[str, dict[str, int]]] | None = None
        self._owners: dict[str, list[str]] = {}

    # --- spaces ------------------------------------------------------------------------

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """Canonical tag for ``tag`` and every tag naming the same space."""
        resolved: tuple[str, tuple[str, ...]] = self.backend.resolve_space(tag)
        return resolved

    def _view(self, conn: Any, spaces: Sequence[str]) -> Any:
        return self.backend.space_view(conn, spaces[0])

    def space_counts(self, *, limit: int = 500) -> list[tuple[str, dict[str, int]]]:
        """Counts per state of every space this person reads, most live rows first.

        A space is its canonical tag (aliases folded in); it is listed when the person
        owns rows in it or someone shared it with them. Only the person's own rows
        (the ``memories_owner`` index) and the shared spaces' rows of the owners who
        shared them (the primary key) are read, never the whole table.

        Returns:
            ``[(tag, {"active": n, "superseded": n, "forgotten": n}), ...]``, at most
            ``limit``; :meth:`owners` then names who shared each space.
        """
        if self._counts is not None:
            return self._counts[: int(limit)]
        me = self.backend.acting_person()
        with self.backend.connection("count spaces") as conn:
            rows = conn.execute(
                """
                WITH shared AS (
                    SELECT space AS tag, owner_id, space AS raw FROM memory_space_shares
                    WHERE grantee_id = %(me)s AND owner_id <> %(me)s
                ), shared_tags AS (
                    SELECT tag, owner_id, raw FROM shared
                    UNION
                    SELECT sh.tag, sh.owner_id, a.alias FROM shared sh
                    JOIN memory_space_aliases a ON a.canonical = sh.tag
                ), visible AS (
                    SELECT coalesce(a.canonical, m.space) AS tag, m.owner_id, m.state, count(*) AS n
                    FROM memories m LEFT JOIN memory_space_aliases a ON a.alias = m.space
                    WHERE m.owner_id = %(me)s
                    GROUP BY 1, 2, 3
                    UNION ALL
                    SELECT st.tag, m.owner_id, m.state, count(*)
                    FROM shared_tags st JOIN memories m ON m.space = st.raw AND m.owner_id = st.owner_id
                    GROUP BY 1, 2, 3
                )
                SELECT v.tag, v.state, sum(v.n)::bigint,
                       array_agg(DISTINCT p.name) FILTER (WHERE v.owner_id <> %(me)s)
                FROM visible v JOIN memory_people p ON p.id = v.owner_id
                GROUP BY v.tag, v.state
                """,
                {"me": me},
            ).fetchall()
        out: dict[str, dict[str, int]] = {}
        for tag, state, n, owners in rows:
            out.setdefault(tag, dict.fromkeys(_COUNTS, 0))[state] = int(n)
            self._owners.setdefault(tag, [])
            self._owners[tag] = sorted(set(self._owners[tag]) | set(owners or []))
        self._counts = sorted(out.items(), key=lambda kv: (-kv[1]["active"], kv[0]))
        return self._counts[: int(limit)]

    def owners(self, tag: str) -> list[str]:
        """Other people whose rows of ``tag`` this person reads (after :meth:`space_counts`)."""
        return self._owners.get(tag, [])

    def home_space(self) -> str:
        """The space a page opens on: the person's space with the most live memories
        (``default`` when they read none)."""
        counts = self.space_counts(limit=1)
        return counts[0][0] if counts else "default"

    def aliases(self) -> dict[str, list[str]]:
        """Aliases of the spaces this person reads: ``{canonical: [alias, ...]}`` (never
        the aliases of spaces they cannot see)."""
        tags = [tag for tag, _ in self.space_counts()]
        with self.backend.connection("list aliases") as conn:
            rows = conn.execute(
                "SELECT canonical, alias FROM memory_space_aliases WHERE canonical = ANY(%s) "
                "ORDER BY canonical, alias", (tags,)).fetchall()
        out: dict[str, list[str]] = {}
        for canonical, alias in rows:
            out.setdefault(canonical, []).append(alias)
        return out

    def count_by_state(self, spaces: Sequence[str]) -> dict[str, int]:
        """Counts per state of one space as this person reads it (as the ``info`` door)."""
        return dict(self.backend.info(space=spaces[0])["counts"])

    def page_live(
        self, spaces: Sequence[str], *, before_seq: int | None = None, limit: int = 25
    ) -> list[tuple[int, Any]]:
        """One page of the live memories this person reads in a space, newest first.

        Keyset paging on ``seq`` (``memories_live`` index); ``before_seq`` is the last
        seq of the previous page. Returns ``[(seq, memory), ...]``.
        """
        from bli_memory.core.team.pg_base import MEMORY_COLUMNS, row_to_memory

        bound = "" if before_seq is None else "AND seq < %s "
        with self.backend.connection("list memories") as conn:
            view = self._view(conn, spaces)
            args: list[Any] = [list(view.spaces), list(view.readers)]
            if before_seq is not None:
                args.append(int(before_seq))
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = ANY(%s) AND owner_id = ANY(%s) "
                "AND state = 'active' AND (expires_at IS NULL OR expires_at > now()) "
                f"{bound}ORDER BY seq DESC LIMIT %s", (*args, int(limit)),
            ).fetchall()
        return [(int(r[0]), row_to_memory(r)) for r in rows]

    # --- one memory ----------------------------------------------------------------------

    def get(self, id: str) -> Any | None:
        """Exactly the version ``id`` names, or None (unknown, purged, not a UUID, or in a
        space this person cannot read: the same answer)."""
        try:
            key = str(uuid.UUID(str(id)))
            chain = self.backend.history(key)
        except (ValueError, NotFoundError):
            return None
        return next((m for m in chain if m.id == key), None)

    def writable(self, memory: Any) -> bool:
        """Whether this person may change ``memory``: theirs, or in a space shared with
        them for writing (the doors' rule, ``PostgresBackend._writable``)."""
        with self.backend.connection("check a memory's owner") as conn:
            row = conn.execute("SELECT owner_id FROM memories WHERE space = %s AND id = %s",
                               (memory.space, memory.id)).fetchone()
            return row is not None and int(row[0]) in self.backend.space_view(conn, memory.space).writers

    def history(self, id: str) -> list[Any]:
        """Every version of the memory, newest first."""
        return list(self.backend.history(id))

    # --- the changes, as the doors ------------------------------------------------------

    def update(self, content: str, *, space: str, id: str, source: str | None = None) -> Any:
        """``update_memory``, secrets masked first as the ``update`` door does."""
        from bli_memory.core.memory.redaction import redact
        from bli_memory.core.memory.retrieval_writes import check_content_size

        check_content_size(content)  # before the masking: it reads the whole text
        return self.backend.update(redact(content).text, space=space, id=id, source=source)

    def forget(self, *, space: str, id: str) -> Any:
        """``forget_memory`` by id (a tombstone)."""
        return self.backend.forget(space=space, id=id)

    def purge(self, id: str) -> int:
        """Erase every version; returns the rows erased."""
        return int(self.backend.purge(id))

    def search(self, query: str, *, space: str, limit: int) -> Any:
        """The hybrid search of the ``search`` door."""
        return self.backend.search(query, space=space, limit=limit)
