"""Writes of the team store (Postgres + pgvector): the engine's write session, version
history and purge.

What is written is the memory engine's rule (:mod:`bli_memory.core.memory.engine_writes`);
this module holds the SQL. A write session is one transaction holding a transaction-scoped
advisory lock on the person's canonical space (and on another owner's space before one of
their rows changes), so the dedup and ``customId`` checks cannot race; a change to a row of a
space shared read-only is refused with reason ``read_only``. Walks through versions stay in
the starting row's space and owner.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from bli_memory.core.errors import NotFoundError, StoreError
from bli_memory.core.memory.engine_writes import LiveRow
from bli_memory.core.memory.expiry import expiry_datetime
from bli_memory.core.memory.retrieval_writes import content_hash
from bli_memory.core.memory.version_ids import shown_id
from bli_memory.core.team.postgres.base import (
    MEMORY_COLUMNS,
    PgCore,
    SpaceView,
    iso_utc,
    row_to_memory,
    tsvector_text,
    utc_now,
    vector_literal,
)

if TYPE_CHECKING:
    import psycopg

    from bli_memory.core.models import Memory

__all__ = ["PostgresWrite", "PostgresWrites"]

#: Where the owner's id sits in a row of :data:`MEMORY_COLUMNS`.
_OWNER = 15


class PostgresWrite:
    """One write transaction on one space as one person sees it
    (:class:`~bli_memory.core.memory.engine_writes.WriteSession`); a row's owner is its
    person id."""

    def __init__(self, pg: PostgresWrites, conn: psycopg.Connection[Any], view: SpaceView) -> None:
        self.canonical = view.canonical
        self.spaces = tuple(view.spaces)
        self._pg = pg
        self._conn = conn
        self._view = view
        self._me = pg._me()
        self._locked: set[tuple[int, str]] = set()
        # Every (owner, space) this person may change here, locked at once in one order:
        # two people who share spaces both ways and change each other's rows then wait
        # for each other instead of deadlocking, and a row is read only once its owner's
        # space is locked, so no other write can retire it in between.
        for owner, space in sorted({(self._me, view.canonical)}
                                   | {(o, t) for o in view.writers for t in view.spaces}):
            self._lock(owner, space)
        # The clock is read once the space's locks are held: writes to a space take their
        # times in the order they commit.
        self._when = utc_now()
        self.at = iso_utc(self._when) or ""

    def _lock(self, owner: int, space: str) -> None:
        if (owner, space) not in self._locked:
            self._pg._lock_space(self._conn, owner, space)
            self._locked.add((owner, space))

    def find_live(self, *, id: str | None = None, custom_id: str | None = None, sha: str | None = None,
                  unexpired: bool = True, writable_only: bool = False) -> LiveRow | None:
        """The live row with this id, ``customId`` or content hash among the rows this
        person reads (or may change, with ``writable_only``); their own first."""
        arg: str | None
        if id is not None:
            try:
                uuid.UUID(id)
            except ValueError:
                return None
            cond, arg, order = "id = %(v)s", id, "DESC"
        elif custom_id is not None:
            cond, arg, order = "custom_id = %(v)s", custom_id, "DESC"
        else:
            cond, arg, order = "content_sha256 = %(v)s", sha, ""
        owners = self._view.writers if writable_only else self._view.readers
        when = " AND (expires_at IS NULL OR expires_at > %(at)s)" if unexpired else ""
        row = self._conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) "
            f"AND owner_id = ANY(%(owners)s) AND state = 'active' AND {cond}{when} "
            f"ORDER BY owner_id = %(me)s DESC, seq {order} LIMIT 1",
            {"spaces": list(self.spaces), "owners": list(owners), "me": self._me, "v": arg, "at": self._when},
        ).fetchone()
        return LiveRow(row_to_memory(row), int(row[_OWNER])) if row else None

    def chain_ends(self, id: str) -> tuple[Memory | None, Memory | None]:
        """The row ``id`` names, when this person may read it, and the newest version of
        its chain."""
        try:
            start, owner_id = self._pg._start(self._conn, id)
        except NotFoundError:
            return None, None
        return start, self._pg._newest(self._conn, start, owner_id)

    def nearest_live(self, vector: Any) -> tuple[LiveRow, float] | None:
        """The closest live, unexpired row over the exact distances."""
        # `+ 0` keeps the planner off the approximate index: a forget is a destructive
        # choice, so it is made over the exact distances.
        row = self._conn.execute(
            f"SELECT {MEMORY_COLUMNS}, 1 - (embedding <=> %(q)s::vector) AS sim FROM memories "
            "WHERE space = ANY(%(spaces)s) AND owner_id = ANY(%(owners)s) AND state = 'active' "
            "AND (expires_at IS NULL OR expires_at > %(at)s) AND embedding IS NOT NULL "
            "ORDER BY (embedding <=> %(q)s::vector) + 0, seq DESC LIMIT 1",
            {"spaces": list(self.spaces), "owners": list(self._view.readers), "q": vector_literal(vector),
             "at": self._when},
        ).fetchone()
        if row is None:
            return None
        similarity = float(row[-1]) if row[-1] is not None else math.nan
        return LiveRow(row_to_memory(row), int(row[_OWNER])), similarity

    def forgotten_since(self, since: str, *, limit: int) -> list[Memory]:
        """Rows this person could have forgotten (those they may change), forgotten at or
        after ``since``, newest first."""
        rows = self._conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) "
            "AND owner_id = ANY(%(owners)s) AND state = 'forgotten' AND forgotten_at >= %(since)s "
            "ORDER BY forgotten_at DESC, seq DESC LIMIT %(n)s",
            {"spaces": list(self.spaces), "owners": list(self._view.writers),
             "since": datetime.fromisoformat(since.replace("Z", "+00:00")), "n": int(limit)},
        ).fetchall()
        return [row_to_memory(r) for r in rows]

    def check_writable(self, row: LiveRow) -> None:
        """Refuse a row of a space shared with this person read-only."""
        if row.owner not in self._view.writers:
            raise NotFoundError(
                f"memory {row.memory.id} is in a space shared with you read-only; it cannot be changed here",
                reason="read_only",
            )

    def insert(self, memory: Memory, vector: Any, *, like: LiveRow | None = None) -> None:
        """Insert the row as ``like``'s owner's (a new version), else as this person's.

        Raises:
            StoreError: the vector's length is not the store's.
        """
        from psycopg.types.json import Jsonb

        pg = self._pg
        owner = self._me if like is None else int(like.owner)  # type: ignore[call-overload]
        dimensions = pg.embedder.dimensions
        if len(vector) != dimensions:
            raise StoreError(f"vector has length {len(vector)}, expected {dimensions}")
        self._lock(owner, memory.space)
        self._conn.execute(
            "INSERT INTO memories (id, space, owner_id, author_id, device_id, content, custom_id, metadata, "
            "source, session_id, created_at, updated_at, version, supersedes, state, expires_at, "
            "content_sha256, terms, embedding, embedding_model) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s, %s, %s, 'active', %s, %s, %s::tsvector, %s::vector, %s)",
            (
                memory.id, memory.space, owner, self._me, pg.device_id, memory.content,
                memory.custom_id, Jsonb(memory.metadata), memory.source, memory.session_id,
                memory.created_at, memory.updated_at, memory.version, memory.supersedes,
                expiry_datetime(memory.expires_at), content_hash(memory.content),
                tsvector_text(memory.content), vector_literal(vector), pg.model_name,
            ),
        )

    def retire(self, row: LiveRow, state: Literal["superseded", "forgotten"]) -> bool:
        """Move a live row out of the live set and both indexes (a forgotten row's vector
        is dropped)."""
        owner = int(row.owner)  # type: ignore[call-overload]
        self._lock(owner, row.memory.space)
        args = (self._when, self._when, row.memory.space, row.memory.id, owner)
        if state == "forgotten":
            cur = self._conn.execute(
                "UPDATE memories SET state = 'forgotten', forgotten_at = %s, updated_at = %s, "
                "embedding = NULL, terms = NULL "
                "WHERE space = %s AND id = %s AND owner_id = %s AND state = 'active'", args)
        else:
            cur = self._conn.execute(
                "UPDATE memories SET state = 'superseded', updated_at = %s, terms = NULL "
                "WHERE space = %s AND id = %s AND owner_id = %s AND state = 'active'", args[1:])
        return cur.rowcount == 1


class PostgresWrites(PgCore):
    """Write sessions of :class:`~bli_memory.core.team.postgres.store.PostgresBackend`, its
    version walks (``_start``, ``_newest``, ``_chain``) and purge."""

    def _lock_space(self, conn: psycopg.Connection[Any], owner_id: int, space: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{owner_id}\x1f{space}",))

    @contextmanager
    def writing(self, tag: str) -> Iterator[PostgresWrite]:
        """One write transaction on the space ``tag`` names, as this person sees it.

        Raises:
            StoreError: the database cannot be reached or refuses (a closed reason).
        """
        with self._tx("write a memory") as conn:
            yield PostgresWrite(self, conn, self._view(conn, tag))

    def _start(self, conn: psycopg.Connection[Any], id: str) -> tuple[Memory, int]:
        """The row ``id`` names and its owner, when this person may read it."""
        shown = shown_id(id)
        try:
            uuid.UUID(str(id))
        except ValueError as exc:
            raise NotFoundError(f"no memory with id {shown}") from exc
        # A lookup by id alone (the contract gives no space): the one query that does
        # not start from a space, so it is a point lookup on the unique id.
        row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = %s", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no memory with id {shown}")
        start, owner_id = row_to_memory(row), int(row[_OWNER])
        view = self._view(conn, start.space)
        if owner_id not in view.readers:
            raise NotFoundError(f"no memory with id {shown}")
        return start, owner_id

    @staticmethod
    def _newest(conn: psycopg.Connection[Any], start: Memory, owner_id: int) -> Memory:
        # Walks stay in the starting row's space *and* owner: a version of a memory is
        # always its owner's row (a shared writer's update is stored as the owner's), so
        # a row of someone else that names this one in ``supersedes`` is never part of
        # its history. ``seen`` ends a walk on a loop (a row that supersedes itself).
        newest = start
        seen = {start.id}
        while True:
            nxt = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = %s AND owner_id = %s "
                "AND supersedes = %s ORDER BY seq DESC LIMIT 1",
                (newest.space, owner_id, newest.id),
            ).fetchone()
            if nxt is None or str(nxt[1]) in seen:
                return newest
            newest = row_to_memory(nxt)
            seen.add(newest.id)

    def _chain(self, conn: psycopg.Connection[Any], id: str) -> tuple[list[Memory], int]:
        start, owner_id = self._start(conn, id)
        chain = [self._newest(conn, start, owner_id)]
        seen = {chain[0].id}
        while chain[-1].supersedes and chain[-1].supersedes not in seen:
            prev = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = %s AND owner_id = %s AND id = %s",
                (chain[-1].space, owner_id, chain[-1].supersedes),
            ).fetchone()
            if prev is None:
                break
            chain.append(row_to_memory(prev))
            seen.add(chain[-1].id)
        return chain, owner_id

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first, tombstones included.

        Raises:
            NotFoundError: unknown id, or one in a space this person cannot read.
        """
        with self._conn("history") as conn:
            return self._chain(conn, id)[0]

    # --- purge: every version erased (secrets saved by mistake) ----------------------

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
            start, owner_id = self._start(conn, id)
            view = self._view(conn, start.space)
            if owner_id not in view.writers:
                raise NotFoundError(f"memory {id} is in a space shared with you read-only",
                                    reason="read_only")
            # Locked before the chain is read: an update committing in between would
            # otherwise leave a live version of what is being erased.
            self._lock_space(conn, owner_id, start.space)
            chain, _ = self._chain(conn, id)
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
