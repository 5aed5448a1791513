"""The memory browser's reads of the team store, as one person (:class:`PostgresBrowse`).

What :class:`~bli_memory.core.memory.browse.BrowseReads` asks, computed from what one person
may see: their own rows and the rows of spaces shared with them (``memory_space_shares``),
exactly the view of the HTTP doors (:meth:`bli_memory.core.team.postgres.base.PgCore.space_view`).
A collaborator over the person's handle (:attr:`PostgresBackend.browse`), not a part of it:
it holds the per-request cache of the space counts, which name who shared each space.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from bli_memory.core.errors import NotFoundError
from bli_memory.core.models import Memory
from bli_memory.core.team.postgres.base import MEMORY_COLUMNS, SpaceView, row_to_memory

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import psycopg

__all__ = ["PersonHandle", "PostgresBrowse"]

_COUNTS = ("active", "superseded", "forgotten")


class PersonHandle(Protocol):
    """What the browsing reads use of one person's
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend`."""

    def connection(self, action: str) -> AbstractContextManager[psycopg.Connection[Any]]:
        """A pooled connection for one read."""
        ...

    def acting_person(self) -> int:
        """The person's ``memory_people.id``."""
        ...

    def space_view(self, conn: psycopg.Connection[Any], tag: str) -> SpaceView:
        """What the person sees of ``tag``."""
        ...

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """``(canonical, every tag of the space)``."""
        ...

    def info(self, *, space: str) -> dict[str, Any]:
        """The space's counts (the ``info`` door's answer)."""
        ...

    def history(self, id: str) -> list[Memory]:
        """Every version the person may read of the memory ``id`` belongs to."""
        ...


class PostgresBrowse:
    """One person's browsing reads of the service database.

    Args:
        backend: The person's :class:`~bli_memory.core.team.postgres.store.PostgresBackend`
            (from :meth:`~bli_memory.core.team.postgres.store.PostgresBackend.for_person`).
    """

    def __init__(self, backend: PersonHandle) -> None:
        self._backend = backend
        self._counts: list[tuple[str, dict[str, int]]] | None = None
        self._owners: dict[str, list[str]] = {}

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """Canonical tag for ``tag`` and every tag naming the same space."""
        resolved: tuple[str, tuple[str, ...]] = self._backend.resolve_space(tag)
        return resolved

    def _view(self, conn: psycopg.Connection[Any], spaces: Sequence[str]) -> SpaceView:
        return self._backend.space_view(conn, spaces[0])

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
        me = self._backend.acting_person()
        with self._backend.connection("count spaces") as conn:
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
        with self._backend.connection("list aliases") as conn:
            rows = conn.execute(
                "SELECT canonical, alias FROM memory_space_aliases WHERE canonical = ANY(%s) "
                "ORDER BY canonical, alias", (tags,)).fetchall()
        out: dict[str, list[str]] = {}
        for canonical, alias in rows:
            out.setdefault(canonical, []).append(alias)
        return out

    def count_by_state(self, spaces: Sequence[str]) -> dict[str, int]:
        """Counts per state of one space as this person reads it (as the ``info`` door)."""
        return dict(self._backend.info(space=spaces[0])["counts"])

    def page_live(
        self, spaces: Sequence[str], *, before_seq: int | None = None, limit: int = 25
    ) -> list[tuple[int, Memory]]:
        """One page of the live memories this person reads in a space, newest first.

        Keyset paging on ``seq`` (``memories_live`` index); ``before_seq`` is the last
        seq of the previous page. Returns ``[(seq, memory), ...]``.
        """
        bound = "" if before_seq is None else "AND seq < %s "
        with self._backend.connection("list memories") as conn:
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

    def get(self, id: str) -> Memory | None:
        """Exactly the version ``id`` names, or None (unknown, purged, not a UUID, or in a
        space this person cannot read: the same answer)."""
        try:
            key = str(uuid.UUID(str(id)))
            chain = self._backend.history(key)
        except (ValueError, NotFoundError):
            return None
        return next((m for m in chain if m.id == key), None)

    def writable(self, memory: Memory) -> bool:
        """Whether this person may change ``memory``: theirs, or in a space shared with
        them for writing (the doors' rule, ``PostgresBackend._writable``)."""
        with self._backend.connection("check a memory's owner") as conn:
            row = conn.execute("SELECT owner_id FROM memories WHERE space = %s AND id = %s",
                               (memory.space, memory.id)).fetchone()
            return row is not None and int(row[0]) in self._backend.space_view(conn, memory.space).writers

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory, newest first."""
        return list(self._backend.history(id))
