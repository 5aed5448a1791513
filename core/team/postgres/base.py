"""What every part of the team store shares: SQL helpers, the pool, the person's view.

The Postgres store (:class:`~bli_memory.core.team.postgres.store.PostgresBackend`) and each
part it holds (:mod:`~bli_memory.core.team.postgres.jobs`, ``recordings``, ``experience``,
``transfer``, ``audit``, ``browse``) build on :class:`PgCore` here: the connection pool and
model of one database,
transactions that turn psycopg failures into :class:`~bli_memory.core.errors.StoreError`,
and :meth:`PgCore._view`, what one person sees of a container tag.

The row helpers (:data:`MEMORY_COLUMNS`, :func:`row_to_memory`) are the public form of a
``memories`` row for the other readers of the table (the browsing reads,
:mod:`bli_memory.core.team.postgres.browse`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import ConfigError, InvalidInputError, ModelMismatchError, StoreError
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.memory.terms import encode_term, terms
from bli_memory.core.models import Memory
from bli_memory.core.team.postgres.schema import schema_is_current

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from bli_memory.core.memory.embedder import Embedder

__all__ = [
    "MEMORY_COLUMNS",
    "PgCore",
    "SharedResources",
    "SpaceView",
    "checked_tag",
    "configure_connection",
    "converted",
    "iso_utc",
    "libpq_url",
    "one_row",
    "row_to_memory",
    "tsquery_text",
    "tsvector_text",
    "utc_now",
    "vector_literal",
]

_MAX_LEXEME_BYTES = 1000  # Postgres refuses lexemes of 2 KB and more
_MAX_POSITIONS = 255  # tsvector keeps at most 256 positions per lexeme
_MAX_POSITION = 16383

#: The columns of a ``memories`` row that :func:`row_to_memory` reads, in its order
#: (``seq`` first, ``owner_id`` last).
MEMORY_COLUMNS = (
    "seq, id, space, content, custom_id, metadata, source, session_id, created_at, updated_at, "
    "version, supersedes, state, forgotten_at, expires_at, owner_id"
)


def iso_utc(value: datetime | None) -> str | None:
    """``value`` as ISO-8601 UTC with microseconds and ``Z`` (the stores' time format); None stays None."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def libpq_url(database_url: str) -> str:
    """The libpq form (``postgresql://``) of a database URL given as ``postgres://`` or SQLAlchemy's.

    Raises:
        ConfigError: not a Postgres URL (reason ``config_invalid``).
    """
    for prefix in ("postgresql+psycopg://", "postgres://"):
        if database_url.startswith(prefix):
            return "postgresql://" + database_url[len(prefix):]
    if not database_url.startswith("postgresql://"):
        raise ConfigError("the database URL must start with postgresql://", reason="config_invalid")
    return database_url


def _fold(term: str) -> str:
    """Remove diacritics, as the embedded index's ``remove_diacritics 2`` does."""
    decomposed = unicodedata.normalize("NFKD", term)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)) or term


def _lexeme(term: str) -> str | None:
    encoded = encode_term(_fold(term))
    if not encoded or len(encoded.encode("utf-8")) > _MAX_LEXEME_BYTES:
        return None
    return encoded


def tsvector_text(text: str) -> str:
    """tsvector input for ``text``: one lexeme per term (identifiers whole), with positions.

    Built here rather than by ``to_tsvector`` because Postgres' parser splits
    ``snake_case``, ``eu-west-1`` and ``BLI-3580`` differently from the embedded
    index; the encoded terms contain only letters, digits and ``_``.
    """
    positions: dict[str, list[int]] = {}
    for pos, term in enumerate(terms(text), start=1):
        lex = _lexeme(term)
        if lex is None:
            continue
        slot = positions.setdefault(lex, [])
        if len(slot) < _MAX_POSITIONS:
            slot.append(min(pos, _MAX_POSITION))
    return " ".join(f"'{lex}':{','.join(map(str, dict.fromkeys(p)))}" for lex, p in positions.items())


def tsquery_text(query_terms_: Sequence[str], op: str) -> str | None:
    """tsquery input joining the lexemes of ``query_terms_`` with ``op`` (``&`` or ``|``); None if none."""
    lexemes = [lex for lex in (_lexeme(t) for t in query_terms_) if lex]
    if not lexemes:
        return None
    return f" {op} ".join(f"'{lex}'" for lex in dict.fromkeys(lexemes))


def vector_literal(vector: Any) -> str:
    """pgvector input (``[0.1,0.2,...]``) for a sequence of floats."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def row_to_memory(row: Sequence[Any]) -> Memory:
    """The :class:`Memory` of a ``memories`` row selected as :data:`MEMORY_COLUMNS` (extra columns after)."""
    return Memory(
        id=str(row[1]),
        space=row[2],
        content=row[3],
        custom_id=row[4],
        metadata=dict(row[5] or {}),
        source=row[6],
        session_id=row[7],
        created_at=iso_utc(row[8]) or "",
        updated_at=iso_utc(row[9]) or "",
        version=int(row[10]),
        supersedes=str(row[11]) if row[11] else None,
        state=row[12],
        forgotten_at=iso_utc(row[13]),
        expires_at=iso_utc(row[14]),
    )


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


def one_row(row: Any, action: str) -> Any:
    """``row``, the answer of a query that always returns one (a count, a row just written).

    Raises:
        StoreError: reason ``store_failed`` when the database returned none after all.
    """
    if row is None:
        raise StoreError(f"{action} failed: the database returned no row", reason="store_failed")
    return row


def checked_tag(tag: Any) -> str:
    """``tag`` when it is a valid container tag (``[A-Za-z0-9_.:-]{1,128}``).

    Raises:
        InvalidInputError: why it is not.
    """
    from bli_memory.core.memory.spaces import validate_tag

    try:
        return validate_tag(tag)
    except ValueError as exc:
        raise InvalidInputError(str(exc)[:300]) from None


@contextmanager
def converted(action: str) -> Iterator[None]:
    """Turn psycopg / pool failures into StoreError (the team store's modules are their one caller).

    Raises:
        StoreError: ``store_unavailable`` (no connection in time, database unreachable) or
            ``store_failed``.
        InvalidInputError: a value Postgres cannot keep (NUL, lone surrogate, key too long).
    """
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



@dataclass(frozen=True)
class SpaceView:
    """What one person sees of a tag: the canonical space, its tags, whose rows."""

    canonical: str
    spaces: tuple[str, ...]
    readers: tuple[int, ...]  # owners whose rows this person reads (self first)
    writers: tuple[int, ...]  # owners whose rows this person may change (self first)


def configure_connection(conn: psycopg.Connection[Any]) -> None:
    """Session settings of every pooled connection (one round trip, once per connection).

    pgvector 0.8's iterative index scan keeps walking the HNSW graph until enough rows
    pass the space filter, so a filtered k-NN does not come back short; ``ef_search``
    is the candidate list size (pgvector's default is 40). ``statement_timeout`` lets a
    working server cancel a statement of a door after
    :data:`~bli_memory.core.team.postgres.pool.STATEMENT_SECONDS` itself
    (:mod:`~bli_memory.core.team.postgres.pool`).
    """
    from bli_memory.core.team.postgres.pool import STATEMENT_SECONDS, statement_setting

    conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
                 "set_config('hnsw.ef_search', '100', false), set_config('statement_timeout', %s, false)",
                 (statement_setting(STATEMENT_SECONDS),))


class SharedResources:
    """The parts every per-person view of one database shares: pool, model, ranking."""

    def __init__(self, database_url: str, *, embedder: Embedder | None, ranking: RankingConfig,
                 pool_size: int, pool_wait: float) -> None:
        from bli_memory.core.memory import embeddings
        from bli_memory.core.team.postgres.pool import make_pool

        self.database_url = libpq_url(database_url)
        #: Space backgrounds by view, ``(when, value)`` (:meth:`MemoryEngine.space_background`).
        self._backgrounds: dict[Any, Any] = {}
        self.ranking = ranking
        self._embedder = embedder
        self.model_name = embedder.name if embedder is not None else embeddings.MODEL_NAME
        self.dimensions = embedder.dimensions if embedder is not None else embeddings.DIMENSIONS
        self.pool: ConnectionPool = make_pool(self.database_url, max_size=pool_size, pool_wait=pool_wait,
                                              configure=configure_connection, name="bli-memory")

    @property
    def embedder(self) -> Embedder:
        """The embedding model: the one given, else the shipped one (``get_embedder`` loads
        it once per process, under its own lock)."""
        if self._embedder is None:
            from bli_memory.core.memory.embeddings import get_embedder

            self._embedder = get_embedder()
        return self._embedder


class PgCore:
    """One person's handle on one database: the pool, the model, transactions, the view.

    The base of :class:`~bli_memory.core.team.postgres.store.PostgresBackend`'s parts (and the
    handle the parts it holds work over);
    ``person_id`` is None on the administrative handle (memory operations then raise
    :class:`ConfigError`).
    """

    _shared: SharedResources
    _root: bool
    person_id: int | None
    device_id: str | None

    if TYPE_CHECKING:  # written with the search, save and capture methods of PostgresBackend
        def _chain(self, conn: psycopg.Connection[Any], id: str) -> tuple[list[Memory], int]: ...
        def _lock_space(self, conn: psycopg.Connection[Any], owner_id: int, space: str) -> None: ...
        def tombstones(self, space: str, *, limit: int | None = 500) -> list[str]: ...
        def purge_marks(self, space: str, *, limit: int | None = 500) -> list[dict[str, Any]]: ...

    @property
    def ranking(self) -> RankingConfig:
        """Fusion weights."""
        return self._shared.ranking

    @property
    def model_name(self) -> str:
        """Name of the embedding model recorded next to every vector."""
        return self._shared.model_name

    @property
    def embedder(self) -> Embedder:
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
        with converted(action), self._shared.pool.connection() as conn:
            yield conn

    @contextmanager
    def _tx(self, action: str, *, bulk: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """One transaction; ``bulk``: its statements may each run
        :data:`~bli_memory.core.team.postgres.pool.BULK_STATEMENT_SECONDS` (an import, an audit)."""
        with converted(action), self._shared.pool.connection() as conn, conn.transaction():
            if not bulk:
                yield conn
                return
            from bli_memory.core.team.postgres.pool import BULK_STATEMENT_SECONDS, bulk_statements

            with bulk_statements(conn, BULK_STATEMENT_SECONDS):
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
            from bli_memory.core.memory.model_mismatch import team_mismatch_advice

            advice = team_mismatch_advice(recorded, self.model_name)
            raise ModelMismatchError(
                f"the service database holds vectors of the embedding model {recorded!r}, "
                f"but this process uses {self.model_name!r}; {advice}"
            )

    def ready(self) -> bool:
        """True when the database answers and its schema is current; never waits more than
        :data:`~bli_memory.core.team.postgres.pool.READY_WAIT_SECONDS` for a connection, nor
        :data:`~bli_memory.core.team.postgres.pool.CHECK_SECONDS` for an answer."""
        from bli_memory.core.team.postgres.pool import CHECK_SECONDS, READY_WAIT_SECONDS, wait_limit

        try:
            pool = self._shared.pool
            with (converted("check readiness"), pool.connection(timeout=READY_WAIT_SECONDS) as conn,
                  wait_limit(conn, CHECK_SECONDS)):
                return schema_is_current(conn)
        except StoreError:
            return False

    # --- the public door for other readers of these tables (the memory browser) ----------

    def connection(self, action: str) -> AbstractContextManager[psycopg.Connection[Any]]:
        """A pooled connection for one read; ``action`` names it in a :class:`StoreError`.

        Raises:
            StoreError: no connection free in time or the database failed (see :func:`converted`).
        """
        return self._conn(action)

    def acting_person(self) -> int:
        """``memory_people.id`` of the person this handle acts as.

        Raises:
            ConfigError: the administrative handle acts as nobody.
        """
        return self._me()

    def space_view(self, conn: psycopg.Connection[Any], tag: str) -> SpaceView:
        """What this person sees of ``tag``: canonical tag, every tag of the space, readable
        and writable owners (the filter every door applies)."""
        return self._view(conn, tag)

    # --- internals --------------------------------------------------------------------

    def _me(self) -> int:
        if self.person_id is None:
            raise ConfigError("this backend acts as nobody; use for_person() first", reason="config_invalid")
        return self.person_id

    def _view(self, conn: psycopg.Connection[Any], tag: str) -> SpaceView:
        me = self._me()
        row = one_row(conn.execute(
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
        ).fetchone(), "resolve a space")
        canonical = row[0]
        spaces = tuple(dict.fromkeys([canonical, *row[1]]))
        return SpaceView(canonical=canonical, spaces=spaces, readers=(me, *row[2]), writers=(me, *row[3]))

    def _own_spaces(self, conn: psycopg.Connection[Any]) -> list[str]:
        # Which spaces hold rows of this person: with ``_chain``'s point lookup, the one
        # kind of query that does not start from a space. Audit and a whole export run it
        # once, then filter every other query by these spaces.
        return [r[0] for r in conn.execute(
            "SELECT DISTINCT space FROM memories WHERE owner_id = %s ORDER BY space", (self._me(),))]

    def _database_name(self) -> str:
        from urllib.parse import urlsplit

        return urlsplit(self._shared.database_url).path.lstrip("/") or "postgres"
