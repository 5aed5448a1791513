"""Export and import of a person's rows in the team store (the shapes of the embedded store's)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.import_links import supersede_cycle
from bli_memory.core.memory.records import record_problem, records_problem, usable_vector
from bli_memory.core.memory.retrieval_writes import content_hash
from bli_memory.core.team.postgres.base import (
    MEMORY_COLUMNS,
    PgCore,
    row_to_memory,
    tsvector_text,
    vector_literal,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["EXPORT_PAGE", "EXPORT_PAGE_MAX", "PostgresTransfer"]

#: Rows in one page of an export (:meth:`PostgresTransfer.export_page`), by default and at most.
EXPORT_PAGE = 500
EXPORT_PAGE_MAX = 1000


class PostgresTransfer:
    """Export and import of the person's own rows: a part of
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (``backend.transfer``) over one
    person's handle.

    Args:
        pg: The person's handle (its pool, view and transactions).
    """

    def __init__(self, pg: PgCore) -> None:
        self._pg = pg


    def export_page(
        self, *, space: str | None = None, after: int = 0, limit: int = EXPORT_PAGE
    ) -> tuple[list[dict[str, Any]], int | None]:
        """One page of :meth:`export`: rows with ``seq > after``, oldest first.

        Args:
            space: Only this space (its canonical tag and aliases); None: every space
                of this person.
            after: The cursor of the previous page (0 for the first).
            limit: Rows in the page, 1..:data:`EXPORT_PAGE_MAX`.

        Returns:
            ``(records, next)``: ``next`` is the cursor of the following page, or None
            when this page is the last.
        """
        import base64
        import json

        import numpy as np

        from bli_memory.core.memory.wire import record_of

        limit = max(1, min(int(limit), EXPORT_PAGE_MAX))
        with self._pg._tx("export memories", bulk=True) as conn:
            spaces = list(self._pg._view(conn, space).spaces) if space else self._pg._own_spaces(conn)
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS}, embedding::text, embedding_model FROM memories "
                "WHERE space = ANY(%s) AND owner_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                (spaces, self._pg._me(), int(after), limit + 1),
            ).fetchall()
        records = []
        for row in rows[:limit]:
            record = record_of(row_to_memory(row))
            if row[16] is not None:
                blob = np.asarray(json.loads(row[16]), dtype="<f4").tobytes()
                record["embedding"] = base64.b64encode(blob).decode("ascii")
                record["embeddingModel"] = row[17]
            else:
                record["embedding"] = record["embeddingModel"] = None
            records.append(record)
        following = int(rows[limit - 1][0]) if len(rows) > limit else None
        return records, following

    def export(self, *, space: str | None = None) -> Iterator[dict[str, Any]]:
        """Every row this person owns (all states, history included) as JSON-ready dicts.

        Exactly the rows of :meth:`EmbeddedBackend.export` (the same keys; embeddings as
        base64 float32 with the model name), oldest first, read in pages of
        :data:`EXPORT_PAGE`. Only the person's own rows: a space shared with them is
        its owner's to export.

        Args:
            space: Only this space (its canonical tag and aliases); None: every space.
        """
        after = 0
        while True:
            records, following = self.export_page(space=space, after=after)
            yield from records
            if following is None:
                return
            after = following

    def _usable_vector(self, record: dict[str, Any]) -> Any:
        """The record's own vector when it can be trusted.

        See :func:`~bli_memory.core.memory.records.usable_vector`.
        """
        return usable_vector(record, model=self._pg.model_name, dimensions=self._pg._shared.dimensions)

    def import_records(
        self, records: list[dict[str, Any]], *, dry_run: bool = False, offset: int = 0,
        chain_ids: Sequence[str] = (),
    ) -> dict[str, int]:
        """Import exported rows exactly (ids, versions, states, times), owned by this person.

        Every record is checked before anything is written, and all are written in one
        transaction: one bad record means nothing is imported. A record whose id is
        already one of this person's rows is skipped, so importing twice is harmless.
        Vectors of the records are kept when they are of this service's model, finite
        and of unit length (within 1 %); otherwise live rows
        are embedded again.

        A live record that restates a memory forgotten or purged in its space (as this
        person sees it) is not brought back, nor are the older versions of the import it
        replaced (:func:`~bli_memory.core.extraction.forgotten_imports.forgotten_records`).

        A record's ``supersedes`` must name one of this person's own rows or another
        record of the same import, so nobody can attach a row to (and then read, or
        purge) someone else's memory. ``chain_ids`` are ids of the same import sent in
        other parts (:meth:`RemoteBackend.import_records`); one of them is accepted as a
        ``supersedes`` target while no row has that id yet.

        Args:
            records: Rows of :meth:`export` (or of the embedded store's export).
            dry_run: Check everything, write nothing: the rows are written in a
                transaction that is rolled back, so the database's own limits are checked
                too (the HTTP client checks every part of a large import before sending
                the first).
            offset: Added to record numbers in error messages (a part of a larger file).
            chain_ids: Ids of records of the same import in other parts.

        Returns:
            ``{"imported": n, "skipped": n, "forgotten": n, "masked": n}`` (with
            ``dry_run``: what would happen): ``skipped`` counts the records already
            present, ``forgotten`` those left out as forgotten, ``masked`` the secrets
            masked in the records imported, as a save masks them
            (:func:`~bli_memory.core.memory.stored_secrets.masked_records`).

        Raises:
            InvalidInputError: naming the first bad record (1-based): a record the
                embedded import refuses, one Postgres cannot keep (a NUL character, a
                lone surrogate, metadata nested over :data:`MAX_METADATA_DEPTH` levels,
                a version over :data:`MAX_VERSION`), an id or ``supersedes`` that is not
                a UUID, a record that supersedes itself, a ``supersedes`` that is
                neither the caller's row nor a record of the import, an id that belongs
                to another person's memory, or a live ``customId`` that is live already
                in that space.
        """
        import psycopg

        def refuse(n: int, problem: str) -> InvalidInputError:
            return InvalidInputError(f"record {offset + n}: {problem}; nothing was imported")

        keys: list[str] = []
        links: dict[int, str] = {}
        for n, record in enumerate(records, 1):
            try:
                problem = record_problem(record)
            except RecursionError:
                problem = "metadata is nested too deeply"
            if problem:
                raise refuse(n, problem)
            try:
                keys.append(str(uuid.UUID(record["id"])))
                if record.get("supersedes") is not None:
                    links[n - 1] = str(uuid.UUID(record["supersedes"]))
            except ValueError:
                raise refuse(n, "id and supersedes must be UUIDs") from None
        from bli_memory.core.memory.stored_secrets import masked_records

        records, masked = masked_records(records, offset=offset)
        found = records_problem(records)
        if found:
            raise refuse(*found)
        from bli_memory.core.extraction.forgotten_imports import forgotten_records

        # Read before anything is written: the tombstones of the space as it was.
        left_out = forgotten_records(self._pg, records, range(len(records)))
        try:
            elsewhere = {str(uuid.UUID(str(c))) for c in chain_ids}
        except ValueError:
            raise InvalidInputError("chainIds must be UUIDs; nothing was imported") from None
        me = self._pg._me()

        def plan(conn: psycopg.Connection[Any]) -> tuple[list[int], int, int]:
            present = {str(r[0]): int(r[1]) for r in conn.execute(
                "SELECT id, owner_id FROM memories WHERE id = ANY(%s::uuid[])", (keys,))}
            todo: list[int] = []
            seen: set[str] = set()
            live_ids: dict[tuple[str, str], int] = {}
            forgotten = 0
            for i, key in enumerate(keys):
                if key in present and present[key] != me:
                    raise refuse(i + 1, f"id {key} belongs to another person's memory")
                if key in present or key in seen:
                    continue
                seen.add(key)
                if i in left_out:
                    forgotten += 1
                    continue
                todo.append(i)
                rec = records[i]
                if (rec.get("state") or "active") == "active" and rec.get("customId") is not None:
                    live_ids[(rec["space"], rec["customId"])] = i  # unique in the file: records_problem
            in_import = set(keys)
            outside = sorted({t for t in links.values() if t not in in_import})
            owners = {str(r[0]): int(r[1]) for r in conn.execute(
                "SELECT id, owner_id FROM memories WHERE id = ANY(%s::uuid[])", (outside,))}
            for i, target in sorted(links.items()):
                if target in in_import or owners.get(target) == me:
                    continue
                if target not in owners and target in elsewhere:
                    continue  # a record of another part of this import, not written yet
                raise refuse(i + 1, f"supersedes {target} is neither one of your memories nor a record "
                                    "of this import")
            if live_ids:
                clash = conn.execute(
                    "SELECT space, custom_id FROM memories WHERE space = ANY(%s) AND owner_id = %s "
                    "AND state = 'active' AND custom_id = ANY(%s)",
                    (sorted({s for s, _ in live_ids}), me, sorted({c for _, c in live_ids})),
                ).fetchall()
                for space, custom_id in clash:
                    if (space, custom_id) in live_ids:
                        raise refuse(live_ids[(space, custom_id)] + 1,
                                     f"customId {custom_id!r} is already live in space {space}")
            def stored_link(row_id: str) -> str | None:
                row = conn.execute("SELECT supersedes FROM memories WHERE id = %s AND owner_id = %s",
                                   (row_id, me)).fetchone()
                return str(row[0]) if row and row[0] else None

            loop = supersede_cycle(records, stored_link)
            if loop:
                raise refuse(*loop)
            return todo, len(records) - len(todo) - forgotten, forgotten

        with self._pg._tx("plan an import", bulk=True) as conn:
            todo, skipped, forgotten = plan(conn)
        if dry_run:
            # Written and rolled back: Postgres' own limits (an index key too long, a
            # value a column cannot hold) are checked before any part is written.
            vectors = {i: v for i in todo if (v := self._usable_vector(records[i])) is not None}
            with self._pg._tx("check an import", bulk=True) as conn:
                self._insert_records(conn, records, keys, todo, vectors)
                raise psycopg.Rollback()
            return {"imported": len(todo), "skipped": skipped, "forgotten": forgotten,
                    "masked": sum(masked[i] for i in todo)}
        # Vectors are computed before the write transaction, which then holds the space
        # locks only for the inserts.
        vectors = {}
        embed = []
        for i in todo:
            rec = records[i]
            state = rec.get("state") or "active"
            if state == "forgotten":
                continue
            own = self._usable_vector(rec)
            if own is not None:
                vectors[i] = own
            elif state == "active":
                embed.append(i)
        for start in range(0, len(embed), 64):
            part = embed[start:start + 64]
            embedded = self._pg.embedder.embed([records[i]["content"] for i in part])
            for i, v in zip(part, embedded, strict=True):
                vectors[i] = v
        with self._pg._tx("import memories", bulk=True) as conn:
            for space in sorted({records[i]["space"] for i in todo}):
                self._pg._lock_space(conn, me, space)
            # Ids are unique per space only, and the space locks are per person: two people
            # importing one id at once must not both find it free. Locked in order.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(k, 7)) FROM "
                "(SELECT DISTINCT unnest(%s::text[]) AS k ORDER BY 1) AS ids",
                (sorted(set(keys)),),
            )
            todo, skipped, forgotten = plan(conn)  # again, under the locks: a concurrent import may have won
            for i in todo:
                rec = records[i]
                if (rec.get("state") or "active") == "active" and i not in vectors:  # appeared since the plan
                    vectors[i] = self._pg._embed_one(rec["content"])
            self._insert_records(conn, records, keys, todo, vectors)
        return {"imported": len(todo), "skipped": skipped, "forgotten": forgotten,
                "masked": sum(masked[i] for i in todo)}

    def _insert_records(self, conn: psycopg.Connection[Any], records: list[dict[str, Any]], keys: list[str],
                        todo: list[int], vectors: dict[int, Any]) -> None:
        """Insert the checked import records ``todo`` (indexes into ``records``) as this person's."""
        from psycopg.types.json import Jsonb

        me = self._pg._me()
        params = []
        for i in todo:
            rec = records[i]
            state = rec.get("state") or "active"
            vector = vectors.get(i) if state != "forgotten" else None
            params.append((
                keys[i], rec["space"], me, me, self._pg.device_id, rec["content"], rec.get("customId"),
                Jsonb(rec.get("metadata") or {}), rec.get("source") or "import", rec.get("sessionId"),
                rec["createdAt"], rec["updatedAt"], int(rec.get("version") or 1),
                str(uuid.UUID(rec["supersedes"])) if rec.get("supersedes") else None,
                state, rec.get("forgottenAt"), rec.get("expiresAt"), content_hash(rec["content"]),
                tsvector_text(rec["content"]) if state == "active" else None,
                vector_literal(vector) if vector is not None else None,
                self._pg.model_name if vector is not None else None,
            ))
        if not params:
            return
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memories (id, space, owner_id, author_id, device_id, content, custom_id, "
                "metadata, source, session_id, created_at, updated_at, version, supersedes, state, "
                "forgotten_at, expires_at, content_sha256, terms, embedding, embedding_model) VALUES "
                "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, "
                "%s::vector, %s)",
                params,
            )
