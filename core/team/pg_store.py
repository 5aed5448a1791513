"""The team store: the memory tool contract over Postgres + pgvector.

:class:`PostgresBackend` keeps the memory model and the semantics of the embedded
engine (:mod:`bli_memory.core.embedded.engine`) — insert, identical-content dedup, ``customId``
upsert, update with history, tombstone, purge, profile, extract jobs — on one
Postgres database shared by every machine of a team:

- vectors in a ``vector(384)`` column with an HNSW index (pgvector, cosine);
- keywords in a ``tsvector`` column with a GIN index, built from the same terms as
  the embedded FTS5 index (:mod:`bli_memory.core.memory.terms`: code identifiers stay whole);
- the same weighted reciprocal-rank fusion and recency prior
  (:mod:`bli_memory.core.memory.ranking`); every hit carries its true cosine similarity.

People, devices and spaces: every row carries ``owner_id``, the person whose space
it is. A space is the pair (owner, container tag). A backend acts as one person
(:meth:`PostgresBackend.for_person`) and reads and writes that person's spaces plus
the spaces other people explicitly shared with them (``memory_space_shares``,
``read`` or ``write``). Tags that name the same space (``memory_space_aliases``) are
resolved here, server-side: a search answers from every tag of the space and a save
lands in the canonical one. Device tokens are stored as SHA-256 hashes only.

Every query on ``memories`` filters by ``space`` first and none joins across spaces
(design §7). Writes to one space are serialised by a transaction-scoped advisory
lock, so the dedup and ``customId`` checks cannot race. Extract jobs are claimed with
``FOR UPDATE SKIP LOCKED`` and a lease, so any number of service processes can work
one queue and a job whose worker died is claimed again.

The memory controls (:meth:`PostgresBackend.info`, ``list_memories``, ``get_memory``,
``audit``, ``export``, ``import_records``) answer in the shapes of the embedded
engine's. Reading follows the person's view (own and shared spaces; anything else is
"not found"); audit, export and import act on the rows the person owns, so one
person never repairs, copies or claims another's memories.

Session recordings (``record_session``) are kept capture-only in
``memory_session_recordings``, one row per turn owned by the person who sent it: never
searched, listed, exported or injected, only counted by ``info``.

The schema is migrated with Alembic (revisions in ``pg_migrations/versions``). psycopg
and psycopg-pool errors are converted to :class:`~bli_memory.core.errors.StoreError`
here, the one module that calls them.

:class:`PostgresBackend` is composed of one mixin per job over
:class:`~bli_memory.core.team.pg_base.PgCore` (pool, model, transactions, the person's
view): :mod:`~bli_memory.core.team.pg_access` (people, tokens, shares, aliases),
:mod:`~bli_memory.core.team.pg_controls` (info, list, get, purge),
:mod:`~bli_memory.core.team.pg_audit`, :mod:`~bli_memory.core.team.pg_transfer`
(export, import), :mod:`~bli_memory.core.team.pg_jobs` (the extract-job queue),
:mod:`~bli_memory.core.team.pg_recordings` and :mod:`~bli_memory.core.team.pg_experience`;
the schema is :mod:`~bli_memory.core.team.pg_schema`. Mixins rather than delegation: every
part works on the same per-person handle (``for_person`` views share one pool), so a
method reads ``self._view`` and ``self._tx`` as it did before the split, and the class
keeps one flat public surface.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.engine import (
    CHANNELS,
    FORGET_MIN_SIMILARITY,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    PROFILE_KINDS,
    checked_content,
)
from bli_memory.core.embedded.store import content_hash
from bli_memory.core.errors import (
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from bli_memory.core.memory.conflicts import newer_first
from bli_memory.core.memory.expiry import expiry_datetime
from bli_memory.core.memory.job_queue import ExtractJob
from bli_memory.core.memory.ranking import RankingConfig, context_bonus, recency_prior, reciprocal_rank_fusion
from bli_memory.core.memory.terms import query_terms
from bli_memory.core.memory.version_ids import live_head
from bli_memory.core.models import (
    ForgetResult,
    Memory,
    Profile,
    SaveResult,
    SearchHit,
    SearchResult,
    UpdateResult,
)
from bli_memory.core.team.pg_access import TOKEN_PREFIX, AccessMixin, DeviceToken, Principal, hash_token
from bli_memory.core.team.pg_audit import AuditMixin
from bli_memory.core.team.pg_base import MEMORY_COLUMNS as _COLUMNS
from bli_memory.core.team.pg_base import SharedResources, converted
from bli_memory.core.team.pg_base import SpaceView as _View
from bli_memory.core.team.pg_base import check_storable as _check_storable
from bli_memory.core.team.pg_base import iso_utc as _iso
from bli_memory.core.team.pg_base import row_to_memory as _row_to_memory
from bli_memory.core.team.pg_base import tsquery_text as _tsquery
from bli_memory.core.team.pg_base import tsvector_text as _tsvector
from bli_memory.core.team.pg_base import utc_now as _now
from bli_memory.core.team.pg_base import vector_literal as _vector_literal
from bli_memory.core.team.pg_controls import ControlsMixin
from bli_memory.core.team.pg_experience import ExperienceMixin
from bli_memory.core.team.pg_jobs import JobsMixin
from bli_memory.core.team.pg_recordings import RecordingsMixin
from bli_memory.core.team.pg_schema import VERSION_TABLE, migrate, schema_is_current, sqlalchemy_url
from bli_memory.core.team.pg_transfer import EXPORT_PAGE, EXPORT_PAGE_MAX, TransferMixin

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "EXPORT_PAGE",
    "EXPORT_PAGE_MAX",
    "FORGET_MIN_SIMILARITY",
    "TOKEN_PREFIX",
    "VERSION_TABLE",
    "DeviceToken",
    "ExtractJob",
    "PostgresBackend",
    "Principal",
    "hash_token",
    "migrate",
    "schema_is_current",
    "sqlalchemy_url",
]

_log = logging.getLogger("bli_memory.pg_store")


class PostgresBackend(AccessMixin, ControlsMixin, AuditMixin, TransferMixin, JobsMixin, RecordingsMixin,
                      ExperienceMixin):
    """Memory operations over the service's Postgres database, as one person.

    Args:
        database_url: ``postgresql://user:pass@host:port/db`` (a database with the
            ``vector`` extension available).
        person: Name of the person this backend acts as; created if new. ``None``
            gives an administrative handle (tokens, shares, aliases, jobs) whose memory
            operations raise :class:`ConfigError` until :meth:`for_person` is used.
        embedder: Object with ``name``, ``dimensions`` and ``embed(texts)``; default:
            the shipped all-MiniLM-L6-v2 int8 model, loaded on first use.
        ranking: Fusion weights (default :class:`RankingConfig`, as the engine).
        pool_size: Most connections held open.
        connect_timeout: Seconds to wait for the database when opening.
        pool_wait: Seconds a request waits for a connection before it fails with
            :class:`StoreError` ``store_unavailable`` (default
            :data:`~bli_memory.core.team.pg_pool.POOL_WAIT_SECONDS`: a Postgres outage fails
            fast, see :mod:`bli_memory.core.team.pg_pool`).
        run_migrations: Migrate the schema to the newest revision first.

    Raises:
        MigrationError: the schema could not be migrated.
        ModelMismatchError: the database holds vectors of another embedding model.
        StoreError: the database is unreachable (reason ``store_unavailable``).

    Thread-safe; per-person views from :meth:`for_person` share one connection pool.
    """

    def __init__(
        self,
        database_url: str,
        *,
        person: str | None = None,
        embedder: Any | None = None,
        ranking: RankingConfig | None = None,
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        run_migrations: bool = True,
        pool_wait: float | None = None,
    ) -> None:
        from bli_memory.core.team.pg_pool import POOL_WAIT_SECONDS

        if run_migrations:
            applied = migrate(database_url)
            if applied:
                _log.info("service database migrated: %s", ", ".join(applied))
        self._shared = SharedResources(database_url, embedder=embedder, ranking=ranking or RankingConfig(),
                                       pool_size=pool_size,
                                       pool_wait=POOL_WAIT_SECONDS if pool_wait is None else pool_wait)
        self._root = True
        self.person_id: int | None = None
        self.device_id: str | None = None
        with converted("open the service database"):
            self._shared.pool.open(wait=True, timeout=connect_timeout)
        try:
            self._check_model()
            if person is not None:
                self.person_id = self.ensure_person(person)
        except BaseException:
            self._shared.pool.close()
            raise

    @classmethod
    def _view_of(cls, root: PostgresBackend, person_id: int, device_id: str | None) -> PostgresBackend:
        obj = cls.__new__(cls)
        obj._shared = root._shared
        obj._root = False
        obj.person_id = person_id
        obj.device_id = device_id
        return obj

    def for_person(self, person_id: int, *, device_id: str | None = None) -> PostgresBackend:
        """This database, acting as another person (shares the pool and the model).

        Args:
            person_id: ``memory_people.id``.
            device_id: The device token id the request came with (recorded on writes).
        """
        return PostgresBackend._view_of(self, int(person_id), device_id)

    # --- the contract --------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        space: str,
        limit: int = 10,
        include_profile: bool = False,
        ranking: RankingConfig | None = None,
    ) -> SearchResult:
        """Hybrid search of one space and its aliases (as :meth:`EmbeddedBackend.search`).

        Args:
            query: Free text; empty or whitespace gives zero hits, not everything.
            space: Container tag.
            limit: Hits to return, 1..100.
            include_profile: Also return the space's :class:`Profile`.
            ranking: Override the fusion weights.

        Returns:
            Hits best first; zero hits is a normal answer.
        """
        cfg = ranking or self.ranking
        limit = max(1, min(int(limit), 100))
        # The embedded engine's caps, so both stores search the same text: thousands of
        # distinct words would make a tsquery Postgres cannot plan (stack depth).
        q = (query or "").strip()[:MAX_QUERY_CHARS]
        with self._conn("search") as conn:
            view = self._view(conn, space)
            profile = self._profile(conn, view, limit=10) if include_profile else None
            if not q:
                return SearchResult(query=query or "", space=view.canonical, spaces=view.spaces,
                                    profile=profile)
            n = max(cfg.candidates, limit * 3)
            where = "space = ANY(%(spaces)s) AND owner_id = ANY(%(owners)s) AND state = 'active'"
            args: dict[str, Any] = {"spaces": list(view.spaces), "owners": list(view.readers), "n": n}
            rankings: dict[str, list[int]] = {}
            qv = _vector_literal(self._embed_one(q))
            args["q"] = qv
            if cfg.weight("vector") > 0:
                # The HNSW index (with the iterative scan set on every pooled connection)
                # or an exact scan, as the planner decides; the outer ORDER BY restores
                # exact distance order either way.
                rankings["vector"] = [
                    int(r[0]) for r in conn.execute(
                        "SELECT seq FROM (SELECT seq, embedding <=> %(q)s::vector AS d FROM memories "
                        f"WHERE {where} AND embedding IS NOT NULL "
                        "ORDER BY embedding <=> %(q)s::vector LIMIT %(n)s) AS knn ORDER BY d, seq DESC",
                        args,
                    )
                ]
            words = query_terms(q)[:MAX_QUERY_TERMS]
            # Both keyword channels in one round trip, each ranked by ts_rank (length
            # normalised, the nearest Postgres has to bm25).
            channels: dict[str, str] = {}
            if cfg.weight("keyword_all") > 0 and (tsq := _tsquery(words, "&")):
                channels["keyword_all"] = tsq
            if cfg.weight("keyword_any") > 0 and len(words) > 1 and (tsq := _tsquery(words, "|")):
                channels["keyword_any"] = tsq
            if channels:
                parts = [
                    f"(SELECT %(c{i})s AS channel, seq, row_number() OVER "
                    f"(ORDER BY ts_rank(terms, %(t{i})s::tsquery, 1) DESC, seq DESC) AS rank FROM memories "
                    f"WHERE {where} AND terms @@ %(t{i})s::tsquery "
                    f"ORDER BY ts_rank(terms, %(t{i})s::tsquery, 1) DESC, seq DESC LIMIT %(n)s)"
                    for i in range(len(channels))
                ]
                kargs = dict(args)
                for i, (name, tsq) in enumerate(channels.items()):
                    kargs[f"c{i}"], kargs[f"t{i}"] = name, tsq
                found: dict[str, list[tuple[int, int]]] = {name: [] for name in channels}
                for channel, seq, rank in conn.execute(" UNION ALL ".join(parts), kargs):
                    found[channel].append((int(rank), int(seq)))
                for name, pairs in found.items():
                    rankings[name] = [seq for _, seq in sorted(pairs)]
            if cfg.weight("keyword_any") > 0 and len(words) <= 1 and "keyword_all" in rankings:
                rankings["keyword_any"] = list(rankings["keyword_all"])

            fused = reciprocal_rank_fusion(rankings, cfg)
            bonus = context_bonus(fused, rankings, lambda parents: self._neighbours(conn, parents), cfg)
            for seq, extra in bonus.items():
                fused[seq] = fused.get(seq, 0.0) + extra
            if bonus:
                rankings["context"] = list(bonus)
            if not fused:
                return SearchResult(query=query, space=view.canonical, spaces=view.spaces, profile=profile)
            rows = {
                int(r[0]): (r, r[-1])
                for r in conn.execute(
                    f"SELECT {_COLUMNS}, 1 - (embedding <=> %(q)s::vector) FROM memories "
                    f"WHERE {where} AND seq = ANY(%(seqs)s) AND (expires_at IS NULL OR expires_at > now())",
                    {**args, "seqs": list(fused)},
                )
            }
        now = _now()
        scored: list[tuple[float, int]] = []
        for seq, score in fused.items():
            found = rows.get(seq)
            if found is None:  # expired
                continue
            age = (now - found[0][8]).total_seconds() / 86400
            scored.append((score + recency_prior(age, cfg), seq))
        scored.sort(key=lambda t: (-t[0], -t[1]))
        channel_sets = {c: set(items) for c, items in rankings.items()}
        hits = []
        for score, seq in scored:
            if len(hits) == limit:
                break
            row, sim = rows[seq]
            # A zero vector (imported before vectors were checked) has no direction:
            # its cosine is NaN, which is "no similarity", never a failure.
            similarity = round(float(sim), 4) if sim is not None and not math.isnan(sim) else None
            channels = tuple(c for c in CHANNELS if seq in channel_sets.get(c, ()))
            if channels == ("vector",) and (similarity is None or similarity < cfg.min_similarity):
                continue
            hits.append(SearchHit(memory=_row_to_memory(row), similarity=similarity, score=score,
                                  channels=channels))
        pairs = self._pair_similarity(hits) if cfg.near_duplicate_cosine <= 1 else {}
        ordered, conflicts = newer_first(hits, pairs, min_cosine=cfg.near_duplicate_cosine,
                                         reorder=cfg.near_duplicate_newer_first)
        return SearchResult(query=query, space=view.canonical, spaces=view.spaces, hits=ordered,
                            profile=profile, conflicts=conflicts)

    def _pair_similarity(self, hits: Sequence[SearchHit]) -> dict[tuple[str, str], float]:
        """Cosine similarity of every pair of hits, by pgvector (as the engine's numpy does)."""
        if len(hits) < 2:
            return {}
        ids = [h.memory.id for h in hits]
        with self._conn("compare search hits") as conn:
            found = conn.execute(
                "SELECT a.id::text, b.id::text, 1 - (a.embedding <=> b.embedding) FROM memories AS a "
                "JOIN memories AS b ON a.id < b.id WHERE a.id = ANY(%(ids)s::uuid[]) "
                "AND b.id = ANY(%(ids)s::uuid[]) AND a.embedding IS NOT NULL AND b.embedding IS NOT NULL",
                {"ids": ids},
            ).fetchall()
        return {(a, b): float(cos) for a, b, cos in found if cos is not None and not math.isnan(cos)}

    @staticmethod
    def _neighbours(conn: psycopg.Connection[Any], parents: Sequence[int]) -> dict[int, list[int]]:
        """The live rows just before and after each parent in its session (same space and owner).

        Parents come from the caller's view, so their neighbours are in it too. Uses the
        ``memories_session`` index (revision 0002).
        """
        if not parents:
            return {}
        side = (
            "(SELECT m.seq FROM memories AS m WHERE m.space = p.space AND m.owner_id = p.owner_id "
            "AND m.session_id = p.session_id AND m.state = 'active' AND m.seq {op} p.seq "
            "ORDER BY m.seq {order} LIMIT 1)"
        )
        out: dict[int, list[int]] = {}
        for parent, kid in conn.execute(
            "SELECT p.seq, n.seq FROM memories AS p CROSS JOIN LATERAL ("
            f"{side.format(op='<', order='DESC')} UNION ALL {side.format(op='>', order='ASC')}"
            ") AS n WHERE p.seq = ANY(%s) AND p.session_id IS NOT NULL",
            (list(parents),),
        ):
            out.setdefault(int(parent), []).append(int(kid))
        return out

    def _lock_space(self, conn: psycopg.Connection[Any], owner_id: int, space: str) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{owner_id}\x1f{space}",))

    def _insert(self, conn: psycopg.Connection[Any], memory: Memory, owner_id: int, vector: Any,
                expires: datetime | None) -> None:
        from psycopg.types.json import Jsonb

        if len(vector) != self._shared.dimensions:
            raise StoreError(f"vector has length {len(vector)}, expected {self._shared.dimensions}")
        conn.execute(
            "INSERT INTO memories (id, space, owner_id, author_id, device_id, content, custom_id, metadata, "
            "source, session_id, created_at, updated_at, version, supersedes, state, expires_at, "
            "content_sha256, terms, embedding, embedding_model) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s, %s, %s, 'active', %s, %s, %s::tsvector, %s::vector, %s)",
            (
                memory.id, memory.space, owner_id, self._me(), self.device_id, memory.content,
                memory.custom_id, Jsonb(memory.metadata), memory.source, memory.session_id,
                memory.created_at, memory.updated_at, memory.version, memory.supersedes, expires,
                content_hash(memory.content), _tsvector(memory.content), _vector_literal(vector),
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
                object, an unreadable ``expires_at``.
        """
        text = checked_content(content)
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInputError("metadata must be a JSON object")
        if custom_id is not None and not str(custom_id).strip():
            custom_id = None
        for field, value in (("content", text), ("customId", custom_id),
                             ("source", source), ("sessionId", session_id)):
            _check_storable(field, value)
        from bli_memory.core.memory.stored_secrets import checked_extras

        metadata = checked_extras(metadata, custom_id)
        expires = expiry_datetime(expires_at)
        me = self._me()
        vector = self._embed_one(text)
        sha = content_hash(text)
        at = _now()
        with self._tx("save") as conn:
            view = self._view(conn, space)
            args = {"spaces": list(view.spaces), "owners": list(view.writers), "me": me}
            self._lock_space(conn, me, view.canonical)
            if custom_id is not None:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) "
                    "AND owner_id = ANY(%(owners)s) AND state = 'active' AND custom_id = %(cid)s "
                    "ORDER BY owner_id = %(me)s DESC, seq DESC LIMIT 1",
                    {**args, "cid": custom_id},
                ).fetchone()
                if row is not None:
                    previous = _row_to_memory(row)
                    owner_id = int(row[15])
                    if owner_id != me:
                        self._lock_space(conn, owner_id, previous.space)
                    if content_hash(previous.content) == sha and (
                        metadata is None or metadata == previous.metadata
                    ):
                        return SaveResult(memory=previous, space=previous.space, status="duplicate")
                    if not self._retire(conn, previous, owner_id, "superseded", at):
                        raise NotFoundError(f"memory {previous.id} is no longer live")
                    memory = Memory(
                        id=str(uuid.uuid4()), space=previous.space, content=text, custom_id=custom_id,
                        metadata=metadata if metadata is not None else previous.metadata,
                        source=source, session_id=session_id, created_at=_iso(at) or "",
                        updated_at=_iso(at) or "", version=previous.version + 1,
                        supersedes=previous.id, expires_at=_iso(expires),
                    )
                    self._insert(conn, memory, owner_id, vector, expires)
                    return SaveResult(memory=memory, space=memory.space, status="updated", previous=previous)
            else:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) "
                    "AND owner_id = ANY(%(owners)s) AND state = 'active' AND content_sha256 = %(sha)s "
                    "ORDER BY owner_id = %(me)s DESC, seq LIMIT 1",
                    {**args, "sha": sha},
                ).fetchone()
                if row is not None:
                    found = _row_to_memory(row)
                    return SaveResult(memory=found, space=found.space, status="duplicate")
            memory = Memory(
                id=str(uuid.uuid4()), space=view.canonical, content=text, custom_id=custom_id,
                metadata=metadata or {}, source=source, session_id=session_id,
                created_at=_iso(at) or "", updated_at=_iso(at) or "", version=1, expires_at=_iso(expires),
            )
            self._insert(conn, memory, me, vector, expires)
        return SaveResult(memory=memory, space=memory.space, status="created")

    def _find_live(self, conn: psycopg.Connection[Any], view: _View, *, id: str | None = None,
                   custom_id: str | None = None, sha: str | None = None) -> tuple[Memory, int] | None:
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
            f"SELECT {_COLUMNS} FROM memories WHERE space = ANY(%(spaces)s) AND owner_id = ANY(%(owners)s) "
            f"AND state = 'active' AND {cond} ORDER BY owner_id = %(me)s DESC, seq DESC LIMIT 1",
            {"spaces": list(view.spaces), "owners": list(view.readers), "me": self._me(), "v": arg},
        ).fetchone()
        return (_row_to_memory(row), int(row[15])) if row else None

    @staticmethod
    def _writable(view: _View, found: tuple[Memory, int]) -> Memory:
        memory, owner_id = found
        if owner_id not in view.writers:
            raise NotFoundError(
                f"memory {memory.id} is in a space shared with you read-only; it cannot be changed here",
                reason="read_only",
            )
        return memory

    def update(
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None
    ) -> UpdateResult:
        """Replace a live memory (by ``id`` or ``custom_id``), keeping the old one as history.

        Raises:
            InvalidInputError: neither or both of id/custom_id, or empty content.
            NotFoundError: no live memory matches in this space (reason ``read_only``
                when it is in a space shared read-only).
        """
        if (id is None) == (custom_id is None):
            raise InvalidInputError("give exactly one of id or customId")
        text = checked_content(content)
        _check_storable("content", text)
        vector = None
        at = _now()
        named = None
        with self._tx("update") as conn:
            view = self._view(conn, space)
            if id is not None:
                found, named = self._live_head(conn, view, id)
            else:
                found = self._find_live(conn, view, custom_id=custom_id)
            if found is None:
                which = f"id {id}" if id is not None else f"customId {custom_id!r}"
                raise NotFoundError(f"no live memory with {which} in space {view.canonical}")
            previous = self._writable(view, found)
            if content_hash(previous.content) == content_hash(text):
                return UpdateResult(memory=previous, previous=previous, status="unchanged", named=named)
            self._lock_space(conn, found[1], previous.space)
            if vector is None:
                vector = self._embed_one(text)
            if not self._retire(conn, previous, found[1], "superseded", at):
                raise NotFoundError(f"memory {previous.id} is no longer live")
            memory = Memory(
                id=str(uuid.uuid4()), space=previous.space, content=text, custom_id=previous.custom_id,
                metadata=previous.metadata, source=previous.source, session_id=previous.session_id,
                created_at=_iso(at) or "", updated_at=_iso(at) or "", version=previous.version + 1,
                supersedes=previous.id, expires_at=previous.expires_at,
            )
            self._insert(conn, memory, found[1], vector, expiry_datetime(previous.expires_at))
        return UpdateResult(memory=memory, previous=previous, named=named)

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
        given = [x for x in (id, content, query) if x is not None and str(x).strip()]
        if len(given) != 1:
            raise InvalidInputError("give exactly one of id, content or query")
        at = _now()
        qv = _vector_literal(self._embed_one(query.strip())) if query is not None and query.strip() else None
        with self._tx("forget") as conn:
            view = self._view(conn, space)
            similarity: float | None = None
            named = None
            if id is not None and id.strip():
                found, named = self._live_head(conn, view, id.strip())
                if found is None:
                    raise NotFoundError(f"no live memory with id {id.strip()} in space {view.canonical}")
                matched_by = "id"
            elif content is not None and content.strip():
                found = self._find_live(conn, view, sha=content_hash(content))
                if found is None:
                    raise NotFoundError(f"no live memory with exactly that text in space {view.canonical}")
                matched_by = "content"
            else:
                # `+ 0` keeps the planner off the approximate index: this is a destructive
                # choice, so it is made over the exact distances.
                row = conn.execute(
                    f"SELECT {_COLUMNS}, 1 - (embedding <=> %(q)s::vector) AS sim FROM memories "
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
                if similarity < FORGET_MIN_SIMILARITY:
                    raise NotFoundError(
                        f"the closest memory has similarity {similarity:.2f}, below the "
                        f"{FORGET_MIN_SIMILARITY} needed to forget by query; nothing was forgotten"
                    )
                found = (_row_to_memory(row), int(row[15]))
                matched_by = "query"
                similarity = round(similarity, 4)
            memory = self._writable(view, found)
            self._lock_space(conn, found[1], memory.space)
            if not self._retire(conn, memory, found[1], "forgotten", at):
                raise NotFoundError(f"memory {memory.id} is not live")
        from dataclasses import replace

        gone = replace(memory, state="forgotten", forgotten_at=_iso(at), updated_at=_iso(at) or "")
        return ForgetResult(memory=gone, matched_by=matched_by, similarity=similarity,  # type: ignore[arg-type]
                            named=named)

    def _profile(self, conn: psycopg.Connection[Any], view: _View, *, limit: int) -> Profile:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE space = ANY(%s) AND owner_id = ANY(%s) "
            "AND state = 'active' AND (expires_at IS NULL OR expires_at > now()) ORDER BY seq DESC LIMIT %s",
            (list(view.spaces), list(view.readers), max(limit * 5, 50)),
        ).fetchall()
        recent = [_row_to_memory(r) for r in rows]
        facts = [m for m in recent if str(m.metadata.get("kind", "")).lower() in PROFILE_KINDS]
        return Profile(space=view.canonical, facts=tuple(facts[:limit]), recent=tuple(recent[:limit]))

    def tombstones(self, space: str, *, limit: int = 500) -> list[str]:
        """Forgotten contents this person can read in ``space``, newest first.

        Automatic capture does not write them again (:mod:`bli_memory.core.memory.tombstones`).
        """
        with self._conn("tombstones") as conn:
            view = self._view(conn, space)
            # The versions a forgotten memory replaced count as forgotten too (as embedded).
            rows = conn.execute(
                "WITH RECURSIVE chain(content, supersedes, owner_id, at, seq, depth) AS ("
                " SELECT content, supersedes, owner_id, forgotten_at, seq, 0 FROM memories"
                " WHERE space = ANY(%(spaces)s) AND owner_id = ANY(%(owners)s) AND state = 'forgotten'"
                " UNION ALL"
                " SELECT m.content, m.supersedes, m.owner_id, chain.at, chain.seq, chain.depth + 1"
                " FROM memories m JOIN chain ON m.id = chain.supersedes AND m.owner_id = chain.owner_id"
                " WHERE m.state = 'superseded' AND chain.depth < 100)"
                " SELECT content FROM chain ORDER BY at DESC NULLS LAST, seq DESC, depth LIMIT %(limit)s",
                {"spaces": list(view.spaces), "owners": list(view.readers), "limit": int(limit)},
            ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """In how many live memories of the space each content term of ``query`` occurs.

        As :meth:`EmbeddedBackend.term_frequencies`, for the injection gate
        (:mod:`bli_memory.core.memory.term_evidence`); a term matches its lexeme as the keyword
        channel of :meth:`search` does. One round trip: ``count(*) FILTER`` per term.

        Returns:
            ``([(term, count), ...], live_memories)``.
        """
        words = query_terms((query or "").strip()[:MAX_QUERY_CHARS])[:MAX_QUERY_TERMS]
        with self._conn("search") as conn:
            view = self._view(conn, space)
            args: dict[str, Any] = {"spaces": list(view.spaces), "owners": list(view.readers)}
            cols = ["count(*)"]
            for i, w in enumerate(words):
                tsq = _tsquery([w], "|")
                if tsq:
                    args[f"t{i}"] = tsq
                    cols.append(f"count(*) FILTER (WHERE terms @@ %(t{i})s::tsquery)")
                else:
                    cols.append("0")
            row = conn.execute(
                f"SELECT {', '.join(cols)} FROM memories "
                "WHERE space = ANY(%(spaces)s) AND owner_id = ANY(%(owners)s) AND state = 'active'",
                args,
            ).fetchone()
        return [(w, int(c)) for w, c in zip(words, row[1:], strict=True)], int(row[0])

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """User Profile (durable preferences, conventions, decisions) and Recent Context."""
        with self._conn("profile") as conn:
            return self._profile(conn, self._view(conn, space), limit=max(1, int(limit)))

    def _start(self, conn: psycopg.Connection[Any], id: str) -> tuple[Memory, int]:
        """The row ``id`` names and its owner, when this person may read it."""
        shown = id if len(str(id)) <= 100 else str(id)[:100] + "…"
        try:
            uuid.UUID(str(id))
        except ValueError as exc:
            raise NotFoundError(f"no memory with id {shown}") from exc
        # A lookup by id alone (the contract gives no space): the one query that does
        # not start from a space, so it is a point lookup on the unique id.
        row = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = %s", (id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no memory with id {shown}")
        start, owner_id = _row_to_memory(row), int(row[15])
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
                f"SELECT {_COLUMNS} FROM memories WHERE space = %s AND owner_id = %s AND supersedes = %s "
                "ORDER BY seq DESC LIMIT 1",
                (newest.space, owner_id, newest.id),
            ).fetchone()
            if nxt is None or str(nxt[1]) in seen:
                return newest
            newest = _row_to_memory(nxt)
            seen.add(newest.id)

    def _live_head(self, conn: psycopg.Connection[Any], view: _View,
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
                f"SELECT {_COLUMNS} FROM memories WHERE space = %s AND owner_id = %s AND id = %s",
                (chain[-1].space, owner_id, chain[-1].supersedes),
            ).fetchone()
            if prev is None:
                break
            chain.append(_row_to_memory(prev))
            seen.add(chain[-1].id)
        return chain, owner_id

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first, tombstones included.

        Raises:
            NotFoundError: unknown id, or one in a space this person cannot read.
        """
        with self._conn("history") as conn:
            return self._chain(conn, id)[0]

    # --- the process around it (bli_memory.core.memory.backend.MemoryBackend) ----------

    #: The service drains its own queue; a capture is queued directly, never spooled.
    spool_captures = False

    @property
    def store_path(self) -> None:
        """No local file: Postgres keeps the memories (the daemon watches nothing)."""
        return None
