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

The schema is migrated with Alembic (revisions in ``migrations/versions``). psycopg
and psycopg-pool errors are converted to :class:`~bli_memory.core.errors.StoreError`
here, the one module that calls them.

:class:`PostgresBackend` is one person's handle over
:class:`~bli_memory.core.team.postgres.base.PgCore` (pool, model, transactions, the person's
view), from two parts, :mod:`~bli_memory.core.team.postgres.access` (people, tokens, shares,
aliases) and :mod:`~bli_memory.core.team.postgres.writes` (the engine's write session, history,
purge), and :class:`~bli_memory.core.memory.engine_backend.EngineBackend`: search, recall, the
profile, list, get, save, update and forget are the memory engine's
(:mod:`bli_memory.core.memory.engine`) over this person's read and write sessions
(:mod:`~bli_memory.core.team.postgres.reads`, whose channels are
:mod:`~bli_memory.core.team.postgres.search`). Every other job is a part the handle holds,
made on first use over the same handle: ``jobs`` (the extract-job queue),
``recorded_turns``, ``experience``, ``transfer`` (export, import), ``integrity`` (audit and
repair), ``documents`` (the space's documents index, :mod:`~bli_memory.core.team.postgres.documents`)
and ``browse``; the contract's methods they answer are one line each here. The
schema is :mod:`~bli_memory.core.team.postgres.schema`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from bli_memory.core.memory.engine_backend import EngineBackend
from bli_memory.core.memory.job_queue import ExtractJob
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.memory.retrieval_writes import FORGET_MIN_SIMILARITY
from bli_memory.core.team.postgres.access import TOKEN_PREFIX, AccessMixin, DeviceToken, Principal, hash_token
from bli_memory.core.team.postgres.audit import PostgresIntegrity
from bli_memory.core.team.postgres.base import SharedResources, converted, one_row
from bli_memory.core.team.postgres.experience import PostgresExperience
from bli_memory.core.team.postgres.jobs import PostgresJobs
from bli_memory.core.team.postgres.recordings import PostgresRecordings
from bli_memory.core.team.postgres.schema import VERSION_TABLE, migrate, schema_is_current, sqlalchemy_url
from bli_memory.core.team.postgres.transfer import EXPORT_PAGE, EXPORT_PAGE_MAX, PostgresTransfer
from bli_memory.core.team.postgres.writes import PostgresWrites

if TYPE_CHECKING:
    from bli_memory.core.memory.documents import DocumentHit, DocumentsState
    from bli_memory.core.memory.embedder import Embedder
    from bli_memory.core.memory.engine import MemoryEngine
    from bli_memory.core.team.postgres.browse import PostgresBrowse
    from bli_memory.core.team.postgres.documents import PostgresDocuments

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


class PostgresBackend(AccessMixin, PostgresWrites, EngineBackend):
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
            :data:`~bli_memory.core.team.postgres.pool.POOL_WAIT_SECONDS`: a Postgres outage fails
            fast, see :mod:`bli_memory.core.team.postgres.pool`).
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
        embedder: Embedder | None = None,
        ranking: RankingConfig | None = None,
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        run_migrations: bool = True,
        pool_wait: float | None = None,
    ) -> None:
        from bli_memory.core.team.postgres.pool import POOL_WAIT_SECONDS

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

    def tombstones(self, space: str, *, limit: int | None = 500) -> list[str]:
        """Forgotten contents this person can read in ``space``, newest first (``limit`` None: all).

        Automatic capture does not write them again (:mod:`bli_memory.core.extraction.tombstones`).
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
                {"spaces": list(view.spaces), "owners": list(view.readers),
                 "limit": None if limit is None else int(limit)},  # LIMIT NULL: no limit
            ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))

    def purge_marks(self, space: str, *, limit: int | None = 500) -> list[dict[str, Any]]:
        """Purge marks this person can read in ``space``, newest first (``limit`` None: all): what a purge
        leaves so capture does not write it again (:mod:`bli_memory.core.extraction.tombstones`)."""
        with self._conn("purge marks") as conn:
            view = self._view(conn, space)
            rows = conn.execute(
                "SELECT mark FROM memory_purge_marks WHERE space = ANY(%s) AND owner_id = ANY(%s) "
                "ORDER BY seq DESC LIMIT %s",
                (list(view.spaces), list(view.readers), None if limit is None else int(limit)),
            ).fetchall()
        return [dict(r[0]) for r in rows]

    # --- the process around it (bli_memory.core.memory.backend.MemoryBackend) ----------

    #: The service drains its own queue; a capture is queued directly, never spooled.
    spool_captures = False

    def capture(self, text: str, *, space: str, source: str, session_id: str | None = None,
                record: bool = False) -> dict[str, Any]:
        """A capture, kept in the database at once (:func:`capture_here`)."""
        from bli_memory.core.memory.job_queue import capture_here

        return capture_here(self, text, space=space, source=source, session_id=session_id, record=record)

    def ship_spool(self) -> None:
        """Nothing is spooled for the Postgres store."""
        return None

    @cached_property
    def browse(self) -> PostgresBrowse:
        """The browser's reads as this person (:class:`~bli_memory.core.team.postgres.browse.PostgresBrowse`),
        one per handle: its space counts are kept for the handle's request."""
        from bli_memory.core.team.postgres.browse import PostgresBrowse

        return PostgresBrowse(self)

    @property
    def job_queue(self) -> PostgresJobs:
        """The database's extract-job queue (:attr:`jobs`)."""
        return self.jobs

    # --- the parts over this handle (composed, not mixed in), each made on first use ----
    # (cached_property keeps a part in the handle's __dict__, so the handles ``for_person``
    # makes without __init__ get theirs too.)

    @cached_property
    def jobs(self) -> PostgresJobs:
        """The extract-job queue (:class:`~bli_memory.core.team.postgres.jobs.PostgresJobs`)."""
        return PostgresJobs(self)

    @cached_property
    def recorded_turns(self) -> PostgresRecordings:
        """Recorded session turns (:class:`~bli_memory.core.team.postgres.recordings.PostgresRecordings`)."""
        return PostgresRecordings(self)

    @cached_property
    def experience(self) -> PostgresExperience:
        """The experience log (:class:`~bli_memory.core.team.postgres.experience.PostgresExperience`)."""
        return PostgresExperience(self)

    @cached_property
    def transfer(self) -> PostgresTransfer:
        """Export and import (:class:`~bli_memory.core.team.postgres.transfer.PostgresTransfer`)."""
        return PostgresTransfer(self)

    @cached_property
    def documents(self) -> PostgresDocuments:
        """The space's documents index, shared by the team
        (:class:`~bli_memory.core.team.postgres.documents.PostgresDocuments`)."""
        from bli_memory.core.team.postgres.documents import PostgresDocuments

        return PostgresDocuments(self)

    @cached_property
    def integrity(self) -> PostgresIntegrity:
        """Audit and repair (:class:`~bli_memory.core.team.postgres.audit.PostgresIntegrity`)."""
        return PostgresIntegrity(self)

    @cached_property
    def engine(self) -> MemoryEngine:
        """The memory contract's rules, written once for every store
        (:class:`~bli_memory.core.memory.engine.MemoryEngine` over this person's sessions); the
        handles of one database share one background cache."""
        from bli_memory.core.memory.engine import MemoryEngine
        from bli_memory.core.team.postgres.reads import PostgresSessions

        return MemoryEngine(PostgresSessions(self), self._embed_one, self.ranking,
                            embed_many=lambda texts: self.embedder.embed(list(texts)),
                            backgrounds=self._shared._backgrounds)

    # --- the contract's methods the engine and the parts answer ------------------------

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

    def enqueue_extract(self, text: str, *, space: str, source: str, session_id: str | None = None,
                        job_id: str | None = None) -> str:
        """Queue text for extraction, checked as every store checks it
        (:meth:`MemoryEngine.checked_extract`, then :meth:`PostgresJobs.enqueue_extract`)."""
        job = self.engine.checked_extract(text, space=space, source=source, session_id=session_id,
                                          job_id=job_id)
        return self.jobs.enqueue_extract(job, space=space)

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None,
                    record_id: str | None = None) -> str:
        """Keep one recorded turn (:meth:`PostgresRecordings.record_turn`)."""
        return self.recorded_turns.record_turn(text, space=space, source=source, session_id=session_id,
                                                record_id=record_id)

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """This person's recorded turns of a space, newest first."""
        return self.recorded_turns.recordings(space=space, limit=limit)

    def clear_recordings(self, *, space: str) -> int:
        """Erase this person's recorded turns of a space; returns how many."""
        return self.recorded_turns.clear_recordings(space=space)

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Integrity of this person's rows (:meth:`PostgresIntegrity.audit`)."""
        return self.integrity.audit(repair=repair)

    def export(self, *, space: str | None = None) -> Iterator[dict[str, Any]]:
        """This person's rows, every version (:meth:`PostgresTransfer.export`)."""
        return self.transfer.export(space=space)

    def import_records(self, records: list[dict[str, Any]], *, dry_run: bool = False, offset: int = 0,
                       chain_ids: Sequence[str] = ()) -> dict[str, int]:
        """Import exported rows as this person's (:meth:`PostgresTransfer.import_records`)."""
        return self.transfer.import_records(records, dry_run=dry_run, offset=offset, chain_ids=chain_ids)

    def search_documents(self, query: str, *, space: str, limit: int = 5,
                         kinds: Sequence[str] = ("document", "commit")) -> list[DocumentHit]:
        """The space's documents and commit messages matching ``query``, in the index this person
        reads (:meth:`PostgresDocuments.search`); ``[]`` with none."""
        return self.documents.search(query, space=space, limit=limit, kinds=kinds)

    def document_status(self, space: str) -> DocumentsState | None:
        """What the space's documents index holds (:meth:`PostgresDocuments.status`), or None."""
        return self.documents.status(space)

    def refresh_documents(self, space: str, folder: str | None = None) -> bool:
        """The service never reads a repository: a writer's ``documents index`` refreshes the
        space's index (:mod:`~bli_memory.core.team.client.documents`); nothing to start here."""
        return False

    @property
    def store_path(self) -> None:
        """No local file: Postgres keeps the memories (the daemon watches nothing)."""
        return None


if TYPE_CHECKING:  # the type checker proves the contract is implemented whole
    from bli_memory.core.memory.backend import MemoryBackend

    def _implements_the_contract(backend: PostgresBackend) -> MemoryBackend:
        return backend
