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
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import (
    ConfigError,
    InvalidInputError,
    MigrationError,
    ModelMismatchError,
    NotFoundError,
    StoreError,
)
from bli_memory.core.memory.import_links import supersede_cycle
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.memory.records import (
    record_problem,
    records_problem,
    usable_vector,
)
from bli_memory.core.memory.retrieval_writes import FORGET_MIN_SIMILARITY, content_hash
from bli_memory.core.models import (
    Memory,
)
from bli_memory.core.team import pg_rows
from bli_memory.core.team.pg_search import PostgresSearch
from bli_memory.core.team.pg_writes import PostgresWrites

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

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

#: Alembic's version table for this schema.
VERSION_TABLE = "bli_alembic_version"
#: Device tokens start with this, so a leaked one is recognisable by secret scanners.
TOKEN_PREFIX = "blim_"
#: Extract job lease: a claimed job not finished by then is claimed again.
JOB_LEASE = timedelta(minutes=5)
#: Attempts before an extract job is marked ``failed``.
JOB_MAX_ATTEMPTS = 5
#: Rows in one page of an export (:meth:`PostgresBackend.export_page`), by default and at most.
EXPORT_PAGE = 500
EXPORT_PAGE_MAX = 1000

_MIGRATION_LOCK = 0x626C696D  # "blim": one migrator at a time across service replicas

_log = logging.getLogger("bli_memory.pg_store")

# The row codec moved to pg_rows; these names stay for the modules that import them here.
_COLUMNS = pg_rows.COLUMNS
_View = pg_rows.View
_iso = pg_rows.iso
_now = pg_rows.now
_row_to_memory = pg_rows.row_to_memory
_tsvector = pg_rows.tsvector
_vector_literal = pg_rows.vector_literal


# --- small helpers ------------------------------------------------------------------


def hash_token(token: str) -> str:
    """SHA-256 hex of a device token: the only form in which a token is stored.

    Tokens are 256 random bits (:func:`secrets.token_urlsafe`), so a fast hash is
    enough: there is nothing to brute-force, unlike a password.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def sqlalchemy_url(database_url: str) -> str:
    """The SQLAlchemy form of a ``postgresql://`` URL (driver: psycopg 3)."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if database_url.startswith(prefix):
            return "postgresql+psycopg://" + database_url[len(prefix):]
    raise ConfigError("the database URL must start with postgresql://", reason="config_invalid")


def _libpq_url(database_url: str) -> str:
    for prefix in ("postgresql+psycopg://", "postgres://"):
        if database_url.startswith(prefix):
            return "postgresql://" + database_url[len(prefix):]
    if not database_url.startswith("postgresql://"):
        raise ConfigError("the database URL must start with postgresql://", reason="config_invalid")
    return database_url


def _data_error_name(exc: BaseException) -> str:
    if isinstance(exc, UnicodeEncodeError):
        return "text that is not valid Unicode"
    if "NUL" in str(exc) or "\\u0000" in str(exc):
        return "a NUL character"
    if type(exc).__name__ == "StatementTooComplex":
        return "a request too large for the store to plan, such as a search of thousands of words"
    if type(exc).__name__ == "ProgramLimitExceeded":
        return "a value too long for the store's index, such as a customId or sessionId of kilobytes"
    return type(exc).__name__


def _checked_tag(tag: Any) -> str:
    from bli_memory.core.memory.spaces import validate_tag

    try:
        return validate_tag(tag)
    except ValueError as exc:
        raise InvalidInputError(str(exc)[:300]) from None


@contextmanager
def _converted(action: str) -> Iterator[None]:
    """Turn psycopg / pool failures into StoreError (this module is their one caller)."""
    import psycopg
    from psycopg_pool import PoolTimeout

    try:
        yield
    except PoolTimeout as exc:
        raise StoreError(f"{action}: no database connection free in time",
                         reason="store_unavailable") from exc
    except (psycopg.DataError, psycopg.errors.ProgramLimitExceeded, psycopg.errors.StatementTooComplex,
            UnicodeEncodeError) as exc:
        # The request holds a value Postgres cannot keep (a NUL character, a lone
        # surrogate, a number out of range, a key too long for its index): the
        # caller's to fix, not a failure to retry.
        raise InvalidInputError(f"{action}: a value cannot be stored ({_data_error_name(exc)}); "
                                "nothing was written") from exc
    except psycopg.OperationalError as exc:
        raise StoreError(f"{action}: the database is unreachable", reason="store_unavailable") from exc
    except psycopg.Error as exc:
        raise StoreError(f"{action} failed: {type(exc).__name__}", reason="store_failed") from exc


def migrate(database_url: str) -> list[str]:
    """Bring the database schema to the newest Alembic revision.

    Safe to run from several service processes at once: the migrator holds a session
    advisory lock, so one applies and the others find the schema current.

    Args:
        database_url: ``postgresql://user:pass@host:port/db``.

    Returns:
        Revisions applied now (empty when already current).

    Raises:
        MigrationError: the upgrade failed (its transaction is rolled back).
    """
    import sqlalchemy
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("pg_migrations")))
    script = ScriptDirectory.from_config(cfg)
    engine = sqlalchemy.create_engine(sqlalchemy_url(database_url), poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK})
            conn.commit()
            try:
                opts = {"version_table": VERSION_TABLE}
                before = MigrationContext.configure(conn, opts=opts).get_current_revision()
                conn.commit()
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
                conn.commit()
                after = MigrationContext.configure(conn, opts=opts).get_current_revision()
                conn.commit()
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK})
                conn.commit()
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise MigrationError(f"cannot migrate the service database: {type(exc).__name__}: {exc}") from exc
    finally:
        engine.dispose()
    if before == after:
        return []
    applied = [rev.revision for rev in script.iterate_revisions(after, before)]
    return list(reversed(applied))


def schema_is_current(conn: psycopg.Connection[Any]) -> bool:
    """True when the database is at the newest revision this code ships."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("pg_migrations")))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    row = conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
    return row is not None and row[0] == head


# --- records of the auth and job tables -------------------------------------------


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: the person and the device token that proved it."""

    person_id: int
    person: str
    device_id: str
    device: str


@dataclass(frozen=True)
class DeviceToken:
    """One device token as listed (never the token itself)."""

    id: str
    person: str
    device: str
    created_at: str
    last_used_at: str | None
    revoked_at: str | None


@dataclass(frozen=True)
class ExtractJob:
    """A claimed extract job."""

    id: str
    space: str
    owner_id: int
    device_id: str | None
    text: str
    source: str
    session_id: str | None
    attempts: int


def _configure_connection(conn: psycopg.Connection[Any]) -> None:
    """Session settings of every pooled connection (one round trip, once per connection).

    pgvector 0.8's iterative index scan keeps walking the HNSW graph until enough rows
    pass the space filter, so a filtered k-NN does not come back short; ``ef_search``
    is the candidate list size (pgvector's default is 40).
    """
    conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
                 "set_config('hnsw.ef_search', '100', false)")


class _Shared:
    """The parts every per-person view of one database shares: pool, model, ranking."""

    def __init__(self, database_url: str, *, embedder: Any, ranking: RankingConfig,
                 pool_size: int, pool_wait: float) -> None:
        from bli_memory.core.memory import embeddings
        from bli_memory.core.team.pg_pool import make_pool

        self.database_url = _libpq_url(database_url)
        self.ranking = ranking
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self.model_name = embedder.name if embedder is not None else embeddings.MODEL_NAME
        self.dimensions = embedder.dimensions if embedder is not None else embeddings.DIMENSIONS
        self.pool: ConnectionPool = make_pool(self.database_url, max_size=pool_size, pool_wait=pool_wait,
                                              configure=_configure_connection, name="bli-memory")

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            with self._embedder_lock:
                if self._embedder is None:
                    from bli_memory.core.memory.embeddings import get_embedder

                    self._embedder = get_embedder()
        return self._embedder


class PostgresBackend(PostgresSearch, PostgresWrites):
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
        self._shared = _Shared(database_url, embedder=embedder, ranking=ranking or RankingConfig(),
                               pool_size=pool_size,
                               pool_wait=POOL_WAIT_SECONDS if pool_wait is None else pool_wait)
        self._root = True
        self.person_id: int | None = None
        self.device_id: str | None = None
        with _converted("open the service database"):
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

    # --- resources -----------------------------------------------------------------

    @property
    def ranking(self) -> RankingConfig:
        """Fusion weights."""
        return self._shared.ranking

    @property
    def model_name(self) -> str:
        """Name of the embedding model recorded next to every vector."""
        return self._shared.model_name

    @property
    def embedder(self) -> Any:
        """The embedding model (loaded on first use)."""
        return self._shared.embedder

    def warm_up(self) -> None:
        """Load the model now."""
        self.embedder.embed(["warm up"])

    def close(self) -> None:
        """Close the connection pool (only the handle that opened it does)."""
        if self._root:
            self._shared.pool.close()

    @contextmanager
    def _conn(self, action: str) -> Iterator[psycopg.Connection[Any]]:
        with _converted(action), self._shared.pool.connection() as conn:
            yield conn

    @contextmanager
    def _tx(self, action: str) -> Iterator[psycopg.Connection[Any]]:
        with _converted(action), self._shared.pool.connection() as conn, conn.transaction():
            yield conn

    def _embed_one(self, text: str) -> Any:
        return self.embedder.embed([text])[0]

    def _check_model(self) -> None:
        with self._tx("read the store metadata") as conn:
            rows = dict(conn.execute("SELECT key, value FROM memory_store_meta").fetchall())
            recorded = rows.get("embedding_model")
            if recorded is None:
                conn.execute(
                    "INSERT INTO memory_store_meta (key, value) VALUES ('embedding_model', %s), "
                    "('embedding_dimensions', %s) ON CONFLICT (key) DO NOTHING",
                    (self.model_name, str(self._shared.dimensions)),
                )
                return
        if recorded != self.model_name:
            raise ModelMismatchError(
                f"the service database holds vectors of the embedding model {recorded!r}, "
                f"but this process uses {self.model_name!r}"
            )

    def ready(self) -> bool:
        """True when the database answers and its schema is current; never waits more than
        :data:`~bli_memory.core.team.pg_pool.READY_WAIT_SECONDS` for a connection."""
        from bli_memory.core.team.pg_pool import READY_WAIT_SECONDS

        try:
            pool = self._shared.pool
            with _converted("check readiness"), pool.connection(timeout=READY_WAIT_SECONDS) as conn:
                return schema_is_current(conn)
        except StoreError:
            return False

    # --- people, devices, shares, aliases --------------------------------------------

    def ensure_person(self, name: str) -> int:
        """Id of the person called ``name``, created if new."""
        name = (name or "").strip()
        if not name or len(name) > 200:
            raise InvalidInputError("a person's name must be 1 to 200 characters")
        with self._tx("record a person") as conn:
            conn.execute(
                "INSERT INTO memory_people (name) VALUES (%s) ON CONFLICT (name) DO NOTHING", (name,)
            )
            row = conn.execute("SELECT id FROM memory_people WHERE name = %s", (name,)).fetchone()
        return int(row[0])

    def _known_person(self, name: str) -> int:
        try:
            return self._person_id(name)
        except NotFoundError:
            shown = name if len(name) <= 200 else name[:200] + "…"
            raise NotFoundError(f"no person named {shown!r}: check the spelling, or give --create-person "
                                "to create them") from None

    def _person_id(self, name: str) -> int:
        with self._conn("find a person") as conn:
            row = conn.execute("SELECT id FROM memory_people WHERE name = %s", (name,)).fetchone()
        if row is None:
            raise NotFoundError(f"no person named {name!r}")
        return int(row[0])

    def create_token(self, person: str, device: str) -> tuple[str, str]:
        """Issue a device token for ``person`` (created if new).

        Args:
            person: The person's name.
            device: A label for the machine (``laptop``, ``ci``, ...).

        Returns:
            ``(token_id, token)``. The token is shown once: only its SHA-256 is stored.
        """
        device = (device or "").strip()
        if not device or len(device) > 200:
            raise InvalidInputError("a device name must be 1 to 200 characters")
        person_id = self.ensure_person(person)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token_id = str(uuid.uuid4())
        with self._tx("store a device token") as conn:
            conn.execute(
                "INSERT INTO memory_device_tokens (id, person_id, device, token_sha256) "
                "VALUES (%s, %s, %s, %s)",
                (token_id, person_id, device, hash_token(token)),
            )
        return token_id, token

    def revoke_token(self, token_id: str) -> bool:
        """Revoke a device token by id; returns False if no live token has that id."""
        try:
            uuid.UUID(str(token_id))
        except ValueError as exc:
            raise InvalidInputError(f"{token_id!r} is not a token id") from exc
        with self._tx("revoke a device token") as conn:
            cur = conn.execute(
                "UPDATE memory_device_tokens SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
                (token_id,),
            )
            return cur.rowcount == 1

    def list_tokens(self, person: str | None = None) -> list[DeviceToken]:
        """Every device token (optionally of one person), oldest first; never the token."""
        sql = (
            "SELECT t.id, p.name, t.device, t.created_at, t.last_used_at, t.revoked_at "
            "FROM memory_device_tokens t JOIN memory_people p ON p.id = t.person_id"
        )
        args: tuple[Any, ...] = ()
        if person is not None:
            sql += " WHERE p.name = %s"
            args = (person,)
        with self._conn("list device tokens") as conn:
            rows = conn.execute(sql + " ORDER BY t.created_at, t.id", args).fetchall()
        return [
            DeviceToken(id=str(r[0]), person=r[1], device=r[2], created_at=_iso(r[3]) or "",
                        last_used_at=_iso(r[4]), revoked_at=_iso(r[5]))
            for r in rows
        ]

    def authenticate(self, token: str) -> Principal | None:
        """The person and device of a live device token, or None.

        ``last_used_at`` is refreshed at most once a minute per token.
        """
        if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        digest = hash_token(token)
        with self._conn("check a device token") as conn:
            row = conn.execute(
                "SELECT t.id, t.person_id, p.name, t.device, t.last_used_at FROM memory_device_tokens t "
                "JOIN memory_people p ON p.id = t.person_id "
                "WHERE t.token_sha256 = %s AND t.revoked_at IS NULL",
                (digest,),
            ).fetchone()
            if row is None:
                return None
            if row[4] is None or _now() - row[4] > timedelta(minutes=1):
                conn.execute("UPDATE memory_device_tokens SET last_used_at = now() WHERE id = %s", (row[0],))
        return Principal(person_id=int(row[1]), person=row[2], device_id=str(row[0]), device=row[3])

    def share_space(self, *, owner: str, space: str, grantee: str, access: str = "read",
                    create_people: bool = False) -> None:
        """Let ``grantee`` read (or also change) ``owner``'s space ``space`` and its aliases.

        Args:
            owner: The name of the person whose space it is.
            space: A container tag (``[A-Za-z0-9_.:-]{1,128}``); an alias shares its
                canonical space.
            grantee: The name of the person who gets access.
            access: ``read`` or ``write``.
            create_people: Create ``owner`` and ``grantee`` when they are new; without
                it a name nobody has (a typo) is refused, never silently created.

        Raises:
            InvalidInputError: ``access`` is not ``read`` or ``write``, an invalid tag,
                or owner is grantee.
            NotFoundError: ``owner`` or ``grantee`` is nobody, without ``create_people``.
        """
        if access not in ("read", "write"):
            raise InvalidInputError("access must be read or write")
        space = _checked_tag(space)
        if create_people:
            owner_id, grantee_id = self.ensure_person(owner), self.ensure_person(grantee)
        else:
            owner_id, grantee_id = self._known_person(owner), self._known_person(grantee)
        if owner_id == grantee_id:
            raise InvalidInputError("a person always has their own spaces; nothing to share")
        canonical = self._canonical(space)
        with self._tx("share a space") as conn:
            conn.execute(
                "INSERT INTO memory_space_shares (space, owner_id, grantee_id, access) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (space, grantee_id, owner_id) "
                "DO UPDATE SET access = excluded.access",
                (canonical, owner_id, grantee_id, access),
            )

    def unshare_space(self, *, owner: str, space: str, grantee: str) -> bool:
        """Withdraw a share; returns False when there was none.

        Raises:
            InvalidInputError: an invalid tag.
            NotFoundError: ``owner`` or ``grantee`` is nobody.
        """
        space = _checked_tag(space)
        owner_id, grantee_id = self._person_id(owner), self._person_id(grantee)
        with self._tx("withdraw a share") as conn:
            cur = conn.execute(
                "DELETE FROM memory_space_shares WHERE space = %s AND owner_id = %s AND grantee_id = %s",
                (self._canonical(space), owner_id, grantee_id),
            )
            return cur.rowcount > 0

    def add_alias(self, alias: str, canonical: str) -> None:
        """Declare that the tag ``alias`` names the same space as ``canonical``.

        Raises:
            InvalidInputError: either is not a valid container tag.
        """
        alias, canonical = _checked_tag(alias), _checked_tag(canonical)
        if alias == canonical:
            return
        with self._tx("record a space alias") as conn:
            conn.execute(
                "INSERT INTO memory_space_aliases (alias, canonical) VALUES (%s, %s) "
                "ON CONFLICT (alias) DO UPDATE SET canonical = excluded.canonical",
                (alias, canonical),
            )

    def _canonical(self, tag: str) -> str:
        with self._conn("resolve a space") as conn:
            row = conn.execute(
                "SELECT canonical FROM memory_space_aliases WHERE alias = %s", (tag,)
            ).fetchone()
        return row[0] if row else tag

    # --- the person's view of a space --------------------------------------------------

    def _me(self) -> int:
        if self.person_id is None:
            raise ConfigError("this backend acts as nobody; use for_person() first", reason="config_invalid")
        return self.person_id

    def _view(self, conn: psycopg.Connection[Any], tag: str) -> _View:
        me = self._me()
        row = conn.execute(
            """
            WITH c AS (
                SELECT coalesce((SELECT canonical FROM memory_space_aliases WHERE alias = %(t)s), %(t)s)
                    AS canonical
            )
            SELECT c.canonical,
                   ARRAY(SELECT a.alias FROM memory_space_aliases a
                         WHERE a.canonical = c.canonical ORDER BY a.alias),
                   ARRAY(SELECT s.owner_id FROM memory_space_shares s
                         WHERE s.space = c.canonical AND s.grantee_id = %(p)s ORDER BY s.owner_id),
                   ARRAY(SELECT s.owner_id FROM memory_space_shares s
                         WHERE s.space = c.canonical AND s.grantee_id = %(p)s AND s.access = 'write'
                         ORDER BY s.owner_id)
            FROM c
            """,
            {"t": tag, "p": me},
        ).fetchone()
        canonical = row[0]
        spaces = tuple(dict.fromkeys([canonical, *row[1]]))
        return _View(canonical=canonical, spaces=spaces, readers=(me, *row[2]), writers=(me, *row[3]))

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """Canonical tag for ``tag`` and every tag naming the same space."""
        with self._conn("resolve a space") as conn:
            view = self._view(conn, tag)
        return view.canonical, view.spaces

    # --- the contract --------------------------------------------------------------

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

    def purge(self, id: str) -> int:
        """Erase a memory and every version of it (secrets saved by mistake).

        Returns:
            Number of rows erased.

        Raises:
            NotFoundError: unknown id, or one in a space this person cannot change.
        """
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
            return cur.rowcount

    # --- memory controls (inspection, audit, export, import) ---------------------------

    def _own_spaces(self, conn: psycopg.Connection[Any]) -> list[str]:
        # Which spaces hold rows of this person: with ``_chain``'s point lookup, the one
        # kind of query that does not start from a space. Audit and a whole export run it
        # once, then filter every other query by these spaces.
        return [r[0] for r in conn.execute(
            "SELECT DISTINCT space FROM memories WHERE owner_id = %s ORDER BY space", (self._me(),))]

    def _database_name(self) -> str:
        from urllib.parse import urlsplit

        return urlsplit(self._shared.database_url).path.lstrip("/") or "postgres"

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
            (recordings,) = conn.execute(
                "SELECT count(*) FROM memory_session_recordings WHERE space = ANY(%s) AND owner_id = %s",
                (list(view.spaces), me)).fetchone()
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
                f"SELECT {_COLUMNS} FROM memories WHERE space = ANY(%s) AND owner_id = ANY(%s) "
                "AND state = 'active' AND (expires_at IS NULL OR expires_at > now()) "
                "ORDER BY seq DESC LIMIT %s",
                (list(view.spaces), list(view.readers), limit),
            ).fetchall()
        return [_row_to_memory(r) for r in rows]

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
                    raise NotFoundError(f"no memory with id {id} (never saved, purged, or not "
                                        "yours to read)") from None
                raise NotFoundError(f"no live memory with id {id}{hint}") from None
        key = str(uuid.UUID(str(id)))
        memory = next((m for m in chain if m.id == key), None)
        if memory is not None and memory.state == "superseded" and not include_inactive \
                and chain[0].state == "active":
            memory = chain[0]  # an id names the memory: read its live head
        if memory is None or (memory.state != "active" and not include_inactive):
            raise NotFoundError(f"no live memory with id {id}{hint}")
        history = [m for m in chain if m.id != memory.id]
        if not include_inactive:
            history = [m for m in history if m.state == "superseded"]
        return memory, history

    _AUDIT_CHECKS = {
        "missing_keyword": "state = 'active' AND terms IS NULL",
        "stale_keyword": "state <> 'active' AND terms IS NOT NULL",
        "missing_vector": "state = 'active' AND embedding IS NULL",
        "wrong_model": "state = 'active' AND embedding IS NOT NULL "
                       "AND (embedding_model IS DISTINCT FROM %(model)s "
                       "OR NOT vector_norm(embedding) BETWEEN 0.99 AND 1.01)",
    }

    def _audit_counts(self, conn: psycopg.Connection[Any], spaces: list[str]) -> dict[str, Any]:
        args = {"spaces": spaces, "me": self._me(), "model": self.model_name}
        own = "space = ANY(%(spaces)s) AND owner_id = %(me)s"
        counts = {"active": 0, "superseded": 0, "forgotten": 0}
        counts.update({r[0]: int(r[1]) for r in conn.execute(
            f"SELECT state, count(*) FROM memories WHERE {own} GROUP BY state", args)})
        row = conn.execute(
            "SELECT " + ", ".join(f"count(*) FILTER (WHERE {cond})" for cond in self._AUDIT_CHECKS.values())
            + f" FROM memories WHERE {own}", args,
        ).fetchone()
        report: dict[str, Any] = {"counts": counts}
        report.update({name: int(n) for name, n in zip(self._AUDIT_CHECKS, row, strict=True)})
        report["ok"] = not any(report[name] for name in self._AUDIT_CHECKS)
        return report

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Check this person's rows: every live row has a tsvector and a vector of the model.

        The Postgres analogue of :meth:`EmbeddedBackend.audit`, over the rows this
        person owns (in every space of theirs; never another person's, shared or not):
        ``missing_keyword`` live rows without a tsvector, ``stale_keyword`` retired rows
        that still carry one, ``missing_vector`` live rows without a vector,
        ``wrong_model`` live rows whose vector is of another model or not of unit
        length. With ``repair`` the
        tsvectors are rebuilt from the content (the same terms as a save), stale ones
        cleared, and missing or foreign vectors recomputed with this service's model;
        ``after`` is the audit run again.

        Returns:
            ``{"ok", "counts", "missing_keyword", "stale_keyword", "missing_vector",
            "wrong_model", "repaired"}`` plus ``after`` when ``repair`` was asked.
        """
        me = self._me()
        with self._conn("audit the store") as conn:
            spaces = self._own_spaces(conn)
            report = self._audit_counts(conn, spaces)
        report["repaired"] = False
        if not repair:
            return report
        if not report["ok"]:
            self._repair(spaces, me)
            report["repaired"] = True
        with self._conn("audit the store") as conn:
            after = self._audit_counts(conn, spaces)
        report["after"] = {k: after[k] for k in ("ok", *self._AUDIT_CHECKS)}
        return report

    def _repair(self, spaces: list[str], me: int, batch: int = 64) -> None:
        args = {"spaces": spaces, "me": me, "model": self.model_name}
        own = "space = ANY(%(spaces)s) AND owner_id = %(me)s"
        checks = self._AUDIT_CHECKS
        with self._tx("repair the keyword index") as conn:
            conn.execute(f"UPDATE memories SET terms = NULL WHERE {own} AND {checks['stale_keyword']}", args)
            rows = conn.execute(
                f"SELECT space, seq, content FROM memories WHERE {own} AND {checks['missing_keyword']}", args
            ).fetchall()
            with conn.cursor() as cur:
                cur.executemany(
                    "UPDATE memories SET terms = %s::tsvector "
                    "WHERE space = %s AND seq = %s AND state = 'active'",
                    [(_tsvector(content), space, seq) for space, seq, content in rows],
                )
        with self._conn("find rows to embed") as conn:
            todo = conn.execute(
                f"SELECT space, seq, content FROM memories WHERE {own} AND "
                f"(({checks['missing_vector']}) OR ({checks['wrong_model']})) ORDER BY seq", args,
            ).fetchall()
        for start in range(0, len(todo), batch):
            part = todo[start:start + batch]
            vectors = self.embedder.embed([content for _, _, content in part])
            with self._tx("store recomputed vectors") as conn, conn.cursor() as cur:
                cur.executemany(
                    "UPDATE memories SET embedding = %s::vector, embedding_model = %s "
                    "WHERE space = %s AND seq = %s AND state = 'active'",
                    [(_vector_literal(v), self.model_name, space, seq)
                     for (space, seq, _), v in zip(part, vectors, strict=True)],
                )

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

        limit = max(1, min(int(limit), EXPORT_PAGE_MAX))
        with self._conn("export memories") as conn:
            spaces = list(self._view(conn, space).spaces) if space else self._own_spaces(conn)
            rows = conn.execute(
                f"SELECT {_COLUMNS}, embedding::text, embedding_model FROM memories "
                "WHERE space = ANY(%s) AND owner_id = %s AND seq > %s ORDER BY seq LIMIT %s",
                (spaces, self._me(), int(after), limit + 1),
            ).fetchall()
        records = []
        for row in rows[:limit]:
            record = _row_to_memory(row).to_dict()
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
        return usable_vector(record, model=self.model_name, dimensions=self._shared.dimensions)

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
            ``{"imported": n, "skipped": n}`` (with ``dry_run``: what would happen).

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
        found = records_problem(records)
        if found:
            raise refuse(*found)
        try:
            elsewhere = {str(uuid.UUID(str(c))) for c in chain_ids}
        except ValueError:
            raise InvalidInputError("chainIds must be UUIDs; nothing was imported") from None
        me = self._me()

        def plan(conn: psycopg.Connection[Any]) -> tuple[list[int], int]:
            present = {str(r[0]): int(r[1]) for r in conn.execute(
                "SELECT id, owner_id FROM memories WHERE id = ANY(%s::uuid[])", (keys,))}
            todo: list[int] = []
            seen: set[str] = set()
            live_ids: dict[tuple[str, str], int] = {}
            for i, key in enumerate(keys):
                if key in present and present[key] != me:
                    raise refuse(i + 1, f"id {key} belongs to another person's memory")
                if key in present or key in seen:
                    continue
                seen.add(key)
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
            return todo, len(records) - len(todo)

        with self._conn("plan an import") as conn:
            todo, skipped = plan(conn)
        if dry_run:
            # Written and rolled back: Postgres' own limits (an index key too long, a
            # value a column cannot hold) are checked before any part is written.
            vectors = {i: v for i in todo if (v := self._usable_vector(records[i])) is not None}
            with self._tx("check an import") as conn:
                self._insert_records(conn, records, keys, todo, vectors)
                raise psycopg.Rollback()
            return {"imported": len(todo), "skipped": skipped}
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
            for i, v in zip(part, self.embedder.embed([records[i]["content"] for i in part]), strict=True):
                vectors[i] = v
        with self._tx("import memories") as conn:
            for space in sorted({records[i]["space"] for i in todo}):
                self._lock_space(conn, me, space)
            # Ids are unique per space only, and the space locks are per person: two people
            # importing one id at once must not both find it free. Locked in order.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(k, 7)) FROM "
                "(SELECT DISTINCT unnest(%s::text[]) AS k ORDER BY 1) AS ids",
                (sorted(set(keys)),),
            )
            todo, skipped = plan(conn)  # again, under the locks: a concurrent import may have won
            for i in todo:
                rec = records[i]
                if (rec.get("state") or "active") == "active" and i not in vectors:  # appeared since the plan
                    vectors[i] = self._embed_one(rec["content"])
            self._insert_records(conn, records, keys, todo, vectors)
        return {"imported": len(todo), "skipped": skipped}

    def _insert_records(self, conn: psycopg.Connection[Any], records: list[dict[str, Any]], keys: list[str],
                        todo: list[int], vectors: dict[int, Any]) -> None:
        """Insert the checked import records ``todo`` (indexes into ``records``) as this person's."""
        from psycopg.types.json import Jsonb

        me = self._me()
        params = []
        for i in todo:
            rec = records[i]
            state = rec.get("state") or "active"
            vector = vectors.get(i) if state != "forgotten" else None
            params.append((
                keys[i], rec["space"], me, me, self.device_id, rec["content"], rec.get("customId"),
                Jsonb(rec.get("metadata") or {}), rec.get("source") or "import", rec.get("sessionId"),
                rec["createdAt"], rec["updatedAt"], int(rec.get("version") or 1),
                str(uuid.UUID(rec["supersedes"])) if rec.get("supersedes") else None,
                state, rec.get("forgottenAt"), rec.get("expiresAt"), content_hash(rec["content"]),
                _tsvector(rec["content"]) if state == "active" else None,
                _vector_literal(vector) if vector is not None else None,
                self.model_name if vector is not None else None,
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

    def enqueue_extract(
        self, text: str, *, space: str, source: str, session_id: str | None = None,
        job_id: str | None = None,
    ) -> str:
        """Write one durable ``memory_extract_jobs`` row for the canonical space; returns its id.

        A ``job_id`` of the caller's (a retried capture) is queued once; one another
        person holds is refused (InvalidInputError), never disclosed or overwritten.
        """
        from bli_memory.core.extraction.job_ids import checked_job_id

        if not text or not text.strip():
            raise InvalidInputError("nothing to extract: the text is empty")
        job_id = checked_job_id(job_id) or str(uuid.uuid4())
        with self._tx("queue an extract job") as conn:
            view = self._view(conn, space)
            cur = conn.execute(
                "INSERT INTO memory_extract_jobs (id, space, owner_id, device_id, text, source, session_id) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (job_id, view.canonical, self._me(), self.device_id, text, source, session_id),
            )
            if cur.rowcount == 0:
                owner = conn.execute("SELECT owner_id FROM memory_extract_jobs WHERE id = %s",
                                     (job_id,)).fetchone()
                if owner is None or owner[0] != self._me():
                    raise InvalidInputError("jobId is already in use; choose another")
        return job_id

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None) -> str:
        """Keep one recorded (already redacted) exchange, capture-only; returns its id.

        The service side of :meth:`EmbeddedBackend.record_turn`: one
        ``memory_session_recordings`` row in this person's own canonical space (where a
        save lands), with the device the request came from. The text is stored as
        given, as the embedded store does (the stop hook bounds it to
        ``MAX_EXCHANGE_BYTES`` and redacts it first); only NUL characters, which a
        Postgres ``text`` cannot hold, are dropped. A recording is never embedded,
        indexed, searched, listed, exported or injected; :meth:`info` counts it.

        Raises:
            InvalidInputError: ``text`` or ``source`` is not a string.
            StoreError: the database failed.
        """
        if not isinstance(text, str) or not isinstance(source, str) or not text.strip():
            raise InvalidInputError("a recording needs text and a source")
        rec_id = str(uuid.uuid4())
        me = self._me()
        with self._tx("record a session turn") as conn:
            view = self._view(conn, space)
            conn.execute(
                "INSERT INTO memory_session_recordings (id, space, owner_id, device_id, source, session_id, "
                "text) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (rec_id, view.canonical, me, self.device_id, source, session_id, text.replace("\x00", "")),
            )
        return rec_id

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """This person's recorded turns of a space and its aliases, newest first.

        The shape of :meth:`EmbeddedBackend.recordings`. A shared space shares its
        memories, never another person's recordings.
        """
        limit = max(1, min(int(limit), 100))
        with self._conn("list recordings") as conn:
            view = self._view(conn, space)
            rows = conn.execute(
                "SELECT id, space, session_id, source, created_at, text FROM memory_session_recordings "
                "WHERE space = ANY(%s) AND owner_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
                (list(view.spaces), self._me(), limit),
            ).fetchall()
        return [{"id": str(r[0]), "space": r[1], "sessionId": r[2], "source": r[3],
                 "createdAt": _iso(r[4]), "text": r[5]} for r in rows]

    def clear_recordings(self, *, space: str) -> int:
        """Erase this person's recorded turns of a space and its aliases; returns how many."""
        with self._tx("clear recordings") as conn:
            view = self._view(conn, space)
            cur = conn.execute(
                "DELETE FROM memory_session_recordings WHERE space = ANY(%s) AND owner_id = %s",
                (list(view.spaces), self._me()),
            )
            return int(cur.rowcount)

    # --- extract jobs (the service's worker) -------------------------------------------

    def claim_job(self, worker: str) -> ExtractJob | None:
        """Claim the oldest ready extract job (``FOR UPDATE SKIP LOCKED``), or None.

        Ready: ``queued`` and past its ``not_before``, or ``running`` with an expired
        lease (its worker died). The claim sets a lease of :data:`JOB_LEASE`.
        """
        with self._tx("claim an extract job") as conn:
            row = conn.execute(
                """
                UPDATE memory_extract_jobs SET state = 'running', claimed_by = %(w)s,
                       attempts = attempts + 1, lease_expires_at = now() + %(lease)s
                WHERE id = (
                    SELECT id FROM memory_extract_jobs
                    WHERE (state = 'queued' AND (not_before IS NULL OR not_before <= now()))
                       OR (state = 'running' AND lease_expires_at < now())
                    ORDER BY created_at, id
                    FOR UPDATE SKIP LOCKED
                    LIMIT 1
                )
                RETURNING id, space, owner_id, device_id, text, source, session_id, attempts
                """,
                {"w": worker, "lease": JOB_LEASE},
            ).fetchone()
        if row is None:
            return None
        return ExtractJob(id=str(row[0]), space=row[1], owner_id=int(row[2]),
                          device_id=str(row[3]) if row[3] else None, text=row[4], source=row[5],
                          session_id=row[6], attempts=int(row[7]))

    def finish_job(self, job_id: str, outcome: dict[str, Any]) -> None:
        """Record a job's outcome (``done``)."""
        from psycopg.types.json import Jsonb

        with self._tx("finish an extract job") as conn:
            conn.execute(
                "UPDATE memory_extract_jobs SET state = 'done', outcome = %s, error = NULL, "
                "finished_at = now(), lease_expires_at = NULL WHERE id = %s",
                (Jsonb(outcome), job_id),
            )

    def fail_job(self, job: ExtractJob, error: str, *, retry: bool = True) -> str:
        """Record a failed attempt: queued again with backoff, or ``failed`` for good.

        Returns:
            The job's new state.
        """
        final = not retry or job.attempts >= JOB_MAX_ATTEMPTS
        state = "failed" if final else "queued"
        backoff = timedelta(seconds=min(600, 5 * 2 ** job.attempts))
        with self._tx("record an extract job failure") as conn:
            conn.execute(
                "UPDATE memory_extract_jobs SET state = %s, error = %s, lease_expires_at = NULL, "
                "not_before = CASE WHEN %s THEN NULL ELSE now() + %s END, "
                "finished_at = CASE WHEN %s THEN now() ELSE NULL END WHERE id = %s",
                (state, error[:500], final, backoff, final, job.id),
            )
        return state

    def release_job(self, job: ExtractJob, *, delay: timedelta = timedelta(seconds=30)) -> None:
        """Put a claimed job back unchanged (its attempt not counted), ready after ``delay``."""
        with self._tx("release an extract job") as conn:
            conn.execute(
                "UPDATE memory_extract_jobs SET state = 'queued', attempts = greatest(attempts - 1, 0), "
                "lease_expires_at = NULL, not_before = now() + %s WHERE id = %s",
                (delay, job.id),
            )

    def job(self, job_id: str) -> dict[str, Any] | None:
        """One job's state, attempts, outcome and error (for tests and operators)."""
        with self._conn("read an extract job") as conn:
            row = conn.execute(
                "SELECT state, attempts, outcome, error, space, owner_id FROM memory_extract_jobs "
                "WHERE id = %s",
                (job_id,),
            ).fetchone()
        if row is None:
            return None
        return {"state": row[0], "attempts": row[1], "outcome": row[2], "error": row[3],
                "space": row[4], "owner_id": row[5]}

    def job_counts(self) -> dict[str, int]:
        """Extract jobs per state."""
        with self._conn("count extract jobs") as conn:
            return {r[0]: int(r[1]) for r in conn.execute(
                "SELECT state, count(*) FROM memory_extract_jobs GROUP BY state")}

    # --- experience log ----------------------------------------------------------------

    def record_experience(self, entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Insert one experience opinion for this person; idempotent by id.

        Args:
            entry: Validated ``{id, store, verdict, reason, created_at (datetime)}``.

        Returns:
            ``(status, stored)``: ``created``, ``identical`` (a retry with the same
            content), or ``conflict`` (the id exists with other content or person).
        """
        me = self._me()
        with self._tx("record an experience opinion") as conn:
            conn.execute("SELECT set_config('bli.person_id', %s, true)", (str(me),))
            cur = conn.execute(
                "INSERT INTO memory_experience (id, person_id, device_id, store, verdict, reason, "
                "created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (entry["id"], me, self.device_id, entry["store"], entry["verdict"], entry["reason"],
                 entry["created_at"]),
            )
            inserted = cur.rowcount == 1
            row = conn.execute(
                "SELECT id, person_id, store, verdict, reason, created_at FROM memory_experience "
                "WHERE id = %s",
                (entry["id"],),
            ).fetchone()
        stored = {"id": str(row[0]), "store": row[2], "verdict": row[3], "reason": row[4],
                  "createdAt": _iso(row[5])}
        if inserted:
            return "created", stored
        same = (int(row[1]) == me and row[2] == entry["store"] and row[3] == entry["verdict"]
                and row[4] == entry["reason"] and row[5] == entry["created_at"])
        return ("identical" if same else "conflict"), stored
