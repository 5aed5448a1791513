"""Save, update, forget and version history of the team store (Postgres + pgvector).

What a caller may give, what counts as the same memory, and when a forget by query may
act are the shared rules of every store (:mod:`bli_memory.core.memory.retrieval_writes`);
this module holds the SQL. Writes to one space are serialised by a transaction-scoped
advisory lock, so the dedup and ``customId`` checks cannot race; a write to a space
shared read-only is refused with reason ``read_only``. Walks through versions stay in
the starting row's space and owner.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import NotFoundError, StoreError
from bli_memory.core.memory.expiry import expiry_datetime
from bli_memory.core.memory.retrieval_writes import (
    checked_content,
    content_hash,
    first_version,
    forget_selector,
    is_same_upsert,
    is_unchanged,
    require_forget_similarity,
    require_one_of_id_or_custom_id,
    stored_hash,
    upserted_version,
)
from bli_memory.core.memory.storable_text import shown_value
from bli_memory.core.memory.version_ids import live_head, shown_id
from bli_memory.core.models import ForgetResult, Memory, SaveResult, UpdateResult
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

__all__ = ["PostgresWrites"]


class PostgresWrites(PgCore):
    """The writing half of the memory contract of
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend`, and the version walks
    (``_find_live``, ``_live_head``, ``_chain``) its other operations share."""

    def _lock_space(self, conn: psycopg.Connection[Any], owner_id: int, space: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{owner_id}\x1f{space}",))

    def _insert(self, conn: psycopg.Connection[Any], memory: Memory, owner_id: int, vector: Any,
                expires: datetime | None) -> None:
        from psycopg.types.json import Jsonb

        dimensions = self.embedder.dimensions
        if len(vector) != dimensions:
            raise StoreError(f"vector has length {len(vector)}, expected {dimensions}")
        conn.execute(
            "INSERT INTO memories (id, space, owner_id, author_id, device_id, content, custom_id, metadata, "
            "source, session_id, created_at, updated_at, version, supersedes, state, expires_at, "
            "content_sha256, terms, embedding, embedding_model) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s, %s, %s, 'active', %s, %s, %s::tsvector, %s::vector, %s)",
            (
                memory.id, memory.space, owner_id, self._me(), self.device_id, memory.content,
                memory.custom_id, Jsonb(memory.metadata), memory.source, memory.session_id,
                memory.created_at, memory.updated_at, memory.version, memory.supersedes, expires,
                content_hash(memory.content), tsvector_text(memory.content), vector_literal(vector),
                self.model_name,
            ),
        )

    @staticmethod
    def _retire(conn: psycopg.Connection[Any], memory: Memory, owner_id: int, state: str,
                at: datetime) -> bool:
        """Move a live row of ``owner_id`` out of the live set and out of both indexes."""
        if state == "forgotten":
            cur = conn.execute(
                "UPDATE memories SET state = 'forgotten', forgotten_at = %s, updated_at = %s, "
                "embedding = NULL, terms = NULL "
                "WHERE space = %s AND id = %s AND owner_id = %s AND state = 'active'",
                (at, at, memory.space, memory.id, owner_id),
            )
        else:
            cur = conn.execute(
                "UPDATE memories SET state = %s, updated_at = %s, terms = NULL "
                "WHERE space = %s AND id = %s AND owner_id = %s AND state = 'active'",
                (state, at, memory.space, memory.id, owner_id),
            )
        return cur.rowcount == 1

    def save(
        self,
        content: str,
        *,
        space: str,
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        source: str = "mcp",
        session_id: str | None = None,
        expires_at: str | None = None,
    ) -> SaveResult:
        """Remember ``content`` (as :meth:`EmbeddedBackend.save`).

        Identical live content in a space this person may write is not written twice
        (``duplicate``); a ``custom_id`` naming a live row replaces it, keeping the old
        row as history (``updated``); otherwise the row lands in this person's own
        canonical space (``created``), which :attr:`SaveResult.space` names.

        Raises:
            InvalidInputError: empty or oversized content, metadata that is not a JSON
                object, a ``customId``, ``sessionId`` or ``source`` over
                :data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` characters (as the
                embedded store, so an export of this store imports there), an unreadable
                ``expires_at`` or one in the past.
        """
        from bli_memory.core.memory.stored_secrets import checked_save

        got = checked_save(content, space=space, metadata=metadata, custom_id=custom_id, source=source,
                           session_id=session_id, expires_at=expires_at)
        text, metadata, custom_id, source, session_id = (got.text, got.metadata, got.custom_id, got.source,
                                                         got.session_id)
        masked, expires_at = got.masked, got.expires_at
        expires = expiry_datetime(expires_at)
        me = self._me()
        vector = self._embed_one(text)
        sha = content_hash(text)
        at = utc_now()
        with self._tx("save") as conn:
            view = self._view(conn, space)
            args = {"spaces": list(view.spaces), "owners": list(view.writers), "me": me}
            self._lock_space(conn, me, view.canonical)
            if custom_id is not None:
                row = conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) "
                    "AND owner_id = ANY(%(owners)s) AND state = 'active' AND custom_id = %(cid)s "
                    "ORDER BY owner_id = %(me)s DESC, seq DESC LIMIT 1",
                    {**args, "cid": custom_id},
                ).fetchone()
                if row is not None:
                    previous = row_to_memory(row)
                    owner_id = int(row[15])
                    if owner_id != me:
                        self._lock_space(conn, owner_id, previous.space)
                    if is_same_upsert(previous, sha, metadata):
                        return SaveResult(memory=previous, space=previous.space, status="duplicate",
                                          masked=masked)
                    if not self._retire(conn, previous, owner_id, "superseded", at):
                        raise NotFoundError(f"memory {previous.id} is no longer live")
                    memory = upserted_version(
                        previous, content=text, custom_id=custom_id, metadata=metadata, source=source,
                        session_id=session_id, at=iso_utc(at) or "", expires_at=iso_utc(expires),
                    )
                    self._insert(conn, memory, owner_id, vector, expires)
                    return SaveResult(memory=memory, space=memory.space, status="updated", previous=previous,
                                      masked=masked)
            else:
                row = conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) "
                    "AND owner_id = ANY(%(owners)s) AND state = 'active' AND content_sha256 = %(sha)s "
                    "AND (expires_at IS NULL OR expires_at > %(at)s) "
                    "ORDER BY owner_id = %(me)s DESC, seq LIMIT 1",
                    {**args, "sha": sha, "at": at},
                ).fetchone()
                if row is not None:
                    found = row_to_memory(row)
                    return SaveResult(memory=found, space=found.space, status="duplicate", masked=masked)
            memory = first_version(
                space=view.canonical, content=text, custom_id=custom_id, metadata=metadata, source=source,
                session_id=session_id, at=iso_utc(at) or "", expires_at=iso_utc(expires),
            )
            self._insert(conn, memory, me, vector, expires)
        return SaveResult(memory=memory, space=memory.space, status="created", masked=masked)

    def _find_live(self, conn: psycopg.Connection[Any], view: SpaceView, *, id: str | None = None,
                   custom_id: str | None = None, sha: str | None = None) -> tuple[Memory, int] | None:
        arg: str | None
        if id is not None:
            try:
                uuid.UUID(id)
            except ValueError:
                return None
            cond, arg = "id = %(v)s", id
        elif custom_id is not None:
            cond, arg = "custom_id = %(v)s", custom_id
        else:
            cond, arg = "content_sha256 = %(v)s", sha
        row = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) "
            f"AND owner_id = ANY(%(owners)s) AND state = 'active' AND {cond} "
            "ORDER BY owner_id = %(me)s DESC, seq DESC LIMIT 1",
            {"spaces": list(view.spaces), "owners": list(view.readers), "me": self._me(), "v": arg},
        ).fetchone()
        return (row_to_memory(row), int(row[15])) if row else None

    @staticmethod
    def _writable(view: SpaceView, found: tuple[Memory, int]) -> Memory:
        memory, owner_id = found
        if owner_id not in view.writers:
            raise NotFoundError(
                f"memory {memory.id} is in a space shared with you read-only; it cannot be changed here",
                reason="read_only",
            )
        return memory

    def update(
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None,
        source: str | None = None,
    ) -> UpdateResult:
        """Replace a live memory (by ``id`` or ``custom_id``), keeping the old one as history;
        the new version's ``source`` is ``source`` when given, else the old one's.

        Raises:
            InvalidInputError: neither or both of id/custom_id, or empty content.
            NotFoundError: no live memory matches in this space (reason ``read_only``
                when it is in a space shared read-only).
        """
        require_one_of_id_or_custom_id(id, custom_id)
        text, in_content = checked_content(content)  # storable text, size, secrets masked
        vector = None
        at = utc_now()
        named = None
        with self._tx("update") as conn:
            view = self._view(conn, space)
            if id is not None:
                found, named = self._live_head(conn, view, id)
            else:
                found = self._find_live(conn, view, custom_id=custom_id)
            if found is None:
                which = f"id {shown_id(id)}" if id is not None else f"customId {shown_value(custom_id)}"
                raise NotFoundError(f"no live memory with {which} in space {view.canonical}")
            previous = self._writable(view, found)
            if is_unchanged(previous.content, text):
                return UpdateResult(memory=previous, previous=previous, status="unchanged", named=named,
                                    masked=in_content)
            self._lock_space(conn, found[1], previous.space)
            if vector is None:
                vector = self._embed_one(text)
            if not self._retire(conn, previous, found[1], "superseded", at):
                raise NotFoundError(f"memory {previous.id} is no longer live")
            from bli_memory.core.memory.stored_secrets import checked_source, with_masked_labels

            labels, in_labels = with_masked_labels(previous)  # a row saved before labels were masked
            memory = Memory(
                id=str(uuid.uuid4()), space=previous.space, content=text, custom_id=previous.custom_id,
                metadata=labels.metadata, source=checked_source(source) if source else labels.source,
                session_id=labels.session_id,
                created_at=iso_utc(at) or "", updated_at=iso_utc(at) or "", version=previous.version + 1,
                supersedes=previous.id, expires_at=previous.expires_at,
            )
            self._insert(conn, memory, found[1], vector, expiry_datetime(previous.expires_at))
        return UpdateResult(memory=memory, previous=previous, named=named, masked=in_content + in_labels)

    def forget(
        self,
        *,
        space: str,
        id: str | None = None,
        content: str | None = None,
        query: str | None = None,
    ) -> ForgetResult:
        """Tombstone one memory, chosen by id, by exact text or by closest match (>= 0.85).

        Raises:
            InvalidInputError: not exactly one selector.
            NotFoundError: nothing matches (or nothing close enough).
        """
        selector = forget_selector(id, content, query)
        at = utc_now()
        qv = vector_literal(self._embed_one(query.strip())) if query is not None and query.strip() else None
        with self._tx("forget") as conn:
            view = self._view(conn, space)
            similarity: float | None = None
            named = None
            if selector == "id" and id is not None:
                found, named = self._live_head(conn, view, id.strip())
                if found is None:
                    raise NotFoundError(f"no live memory with id {shown_id(id.strip())} "
                                        f"in space {view.canonical}")
                matched_by = "id"
            elif selector == "content" and content is not None:
                found = self._find_live(conn, view, sha=stored_hash(content))
                if found is None:
                    raise NotFoundError(f"no live memory with exactly that text in space {view.canonical}")
                matched_by = "content"
            else:
                # `+ 0` keeps the planner off the approximate index: this is a destructive
                # choice, so it is made over the exact distances.
                row = conn.execute(
                    f"SELECT {MEMORY_COLUMNS}, 1 - (embedding <=> %(q)s::vector) AS sim FROM memories "
                    "WHERE space = ANY(%(spaces)s) AND owner_id = ANY(%(owners)s) AND state = 'active' "
                    "AND embedding IS NOT NULL ORDER BY (embedding <=> %(q)s::vector) + 0, seq DESC LIMIT 1",
                    {"spaces": list(view.spaces), "owners": list(view.readers), "q": qv},
                ).fetchone()
                if row is None:
                    raise NotFoundError(f"space {view.canonical} holds no memories")
                similarity = float(row[-1]) if row[-1] is not None else math.nan
                if math.isnan(similarity):  # only direction-less vectors are left
                    raise NotFoundError(f"no memory of space {view.canonical} is close enough to forget "
                                        "by query; nothing was forgotten")
                require_forget_similarity(similarity)
                found = (row_to_memory(row), int(row[15]))
                matched_by = "query"
                similarity = round(similarity, 4)
            memory = self._writable(view, found)
            self._lock_space(conn, found[1], memory.space)
            if not self._retire(conn, memory, found[1], "forgotten", at):
                raise NotFoundError(f"memory {memory.id} is not live")
        gone = replace(memory, state="forgotten", forgotten_at=iso_utc(at), updated_at=iso_utc(at) or "")
        return ForgetResult(memory=gone, matched_by=matched_by, similarity=similarity,  # type: ignore[arg-type]
                            named=named)

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
        start, owner_id = row_to_memory(row), int(row[15])
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

    def _live_head(self, conn: psycopg.Connection[Any], view: SpaceView,
                   id: str) -> tuple[tuple[Memory, int] | None, Memory | None]:
        """As :meth:`_find_live` for the live head of the memory any version's ``id``
        names, and the older version ``id`` named (:func:`live_head`)."""
        try:
            start, owner_id = self._start(conn, id)
        except NotFoundError:
            return None, None
        head, named = live_head(id, start, self._newest(conn, start, owner_id), live=True)
        return self._find_live(conn, view, id=head.id), named

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
