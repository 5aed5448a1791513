"""Schema of the embedded SQLite store, as numbered migrations.

Each migration is a function ``mNNN_<what>(conn)`` applied once, in order, inside one
transaction, and recorded in ``_bli_migrations``. A shipped migration is never edited;
a change is a new migration. (The pattern is simonw/llm's ``migrations.py``.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

from bli_memory.core.errors import MigrationError
from bli_memory.core.memory.terms import FTS_TOKENIZE

__all__ = ["MIGRATIONS", "migrate"]

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def _migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@_migration
def m001_memories(conn: sqlite3.Connection) -> None:
    """Memory rows, keyword index, aliases, store metadata and write generations."""
    conn.execute(
        """
        CREATE TABLE memories (
            seq             INTEGER PRIMARY KEY,
            id              TEXT NOT NULL UNIQUE,
            space           TEXT NOT NULL,
            content         TEXT NOT NULL,
            custom_id       TEXT,
            metadata        TEXT NOT NULL DEFAULT '{}',
            source          TEXT NOT NULL DEFAULT 'mcp',
            session_id      TEXT,
            created_at      TEXT NOT NULL,
            updated_at      TEXT NOT NULL,
            version         INTEGER NOT NULL DEFAULT 1,
            supersedes      TEXT,
            state           TEXT NOT NULL DEFAULT 'active'
                            CHECK (state IN ('active', 'superseded', 'forgotten')),
            forgotten_at    TEXT,
            expires_at      TEXT,
            content_sha256  TEXT NOT NULL,
            embedding       BLOB,
            embedding_model TEXT
        )
        """
    )
    conn.execute("CREATE INDEX memories_space_state ON memories (space, state, seq)")
    conn.execute(
        "CREATE UNIQUE INDEX memories_live_custom_id ON memories (space, custom_id) "
        "WHERE state = 'active' AND custom_id IS NOT NULL"
    )
    conn.execute(
        "CREATE INDEX memories_live_hash ON memories (space, content_sha256) WHERE state = 'active'"
    )
    conn.execute("CREATE INDEX memories_supersedes ON memories (supersedes)")
    # Keyword index over encoded terms (see bli_memory.core.memory.terms); rowid = memories.seq.
    # Only live rows have an entry.
    conn.execute(f'CREATE VIRTUAL TABLE memory_fts USING fts5 (terms, tokenize = "{FTS_TOKENIZE}")')
    conn.execute(
        """
        CREATE TABLE memory_space_aliases (
            alias      TEXT PRIMARY KEY,
            canonical  TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    # Bumped in the same transaction as every write to a space, so a process holding
    # vectors in memory can tell cheaply whether they are stale. ``removals`` moves only
    # when a row leaves the live set (then appending new rows is not enough).
    conn.execute(
        """
        CREATE TABLE space_generation (
            space      TEXT PRIMARY KEY,
            generation INTEGER NOT NULL DEFAULT 0,
            removals   INTEGER NOT NULL DEFAULT 0
        )
        """
    )


@_migration
def m002_extract_jobs(conn: sqlite3.Connection) -> None:
    """Durable queue of extract jobs (stop hook, ``save_memory(extract=true)``)."""
    conn.execute(
        """
        CREATE TABLE memory_extract_jobs (
            id               TEXT PRIMARY KEY,
            space            TEXT NOT NULL,
            text             TEXT NOT NULL,
            source           TEXT NOT NULL,
            session_id       TEXT,
            state            TEXT NOT NULL DEFAULT 'queued'
                             CHECK (state IN ('queued', 'running', 'done', 'failed')),
            attempts         INTEGER NOT NULL DEFAULT 0,
            not_before       TEXT,
            claimed_by       TEXT,
            lease_expires_at TEXT,
            outcome          TEXT,
            error            TEXT,
            created_at       TEXT NOT NULL,
            finished_at      TEXT
        )
        """
    )
    conn.execute("CREATE INDEX memory_extract_jobs_ready ON memory_extract_jobs (state, not_before)")


@_migration
def m004_experience(conn: sqlite3.Connection) -> None:
    """The experience log kept in the embedded store (``cockpit memory log``, no service)."""
    conn.execute(
        """
        CREATE TABLE memory_experience (
            id          TEXT PRIMARY KEY,
            store       TEXT NOT NULL CHECK (store IN ('bli', 'supermemory', 'both')),
            verdict     TEXT NOT NULL CHECK (verdict IN ('win', 'loss', 'noise')),
            reason      TEXT NOT NULL,
            created_at  TEXT NOT NULL,
            person      TEXT NOT NULL DEFAULT '',
            device      TEXT NOT NULL DEFAULT '',
            agent       TEXT NOT NULL DEFAULT '',
            project     TEXT NOT NULL DEFAULT '',
            received_at TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX memory_experience_created ON memory_experience (created_at, id)")


@_migration
def m005_session_recordings(conn: sqlite3.Connection) -> None:
    """Capture-only session recordings (``record_session``): kept, never injected."""
    conn.execute(
        """
        CREATE TABLE session_recordings (
            id          TEXT PRIMARY KEY,
            space       TEXT NOT NULL,
            session_id  TEXT,
            source      TEXT NOT NULL,
            text        TEXT NOT NULL,
            created_at  TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX session_recordings_space ON session_recordings (space, created_at)")


@_migration
def m006_session_neighbours(conn: sqlite3.Connection) -> None:
    """Index live rows by session, for the ``context`` channel's neighbour lookups."""
    conn.execute(
        "CREATE INDEX memories_session ON memories (space, session_id, seq) "
        "WHERE state = 'active' AND session_id IS NOT NULL"
    )


@_migration
def m007_purge_marks(conn: sqlite3.Connection) -> None:
    """What a purge leaves: keyed hashes capture compares, never the purged text."""
    conn.execute(
        """
        CREATE TABLE purge_marks (
            seq         INTEGER PRIMARY KEY,
            space       TEXT NOT NULL,
            mark        TEXT NOT NULL,
            created_at  TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX purge_marks_space ON purge_marks (space, seq)")


@_migration
def m008_write_sequence(conn: sqlite3.Connection) -> None:
    """A store-wide write sequence, stamped on every row it moves, for derived indexes.

    ``write_sequence.value`` grows by one for every row inserted, moved in or out of the
    live set (state, vector, model or space changed) or deleted, in the writing
    transaction, by triggers, so no write path can forget it (save, update, forget,
    purge, import, reembed, audit repair). ``memories.write_seq`` is the value of the
    row's last such change and ``memory_removals`` keeps the seq of each deleted row:
    together they answer "which rows changed since sequence N", which is how the
    vector cache and the persisted side indexes catch up
    (:mod:`bli_memory.core.embedded.side_indexes`). ``side_index_epoch`` in
    ``store_meta`` moves when derived data changed without a row moving (the keyword
    index rewritten by an audit repair) and invalidates every persisted side index;
    ``store_id`` tells this store from another file at the same path (a restore).
    """
    conn.execute(
        "CREATE TABLE write_sequence (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)"
    )
    conn.execute("INSERT INTO write_sequence (id, value) VALUES (1, 0)")
    conn.execute("ALTER TABLE memories ADD COLUMN write_seq INTEGER NOT NULL DEFAULT 0")
    conn.execute("CREATE INDEX memories_write_seq ON memories (write_seq)")
    conn.execute(
        "CREATE TABLE memory_removals (write_seq INTEGER PRIMARY KEY, seq INTEGER NOT NULL, "
        "space TEXT NOT NULL)"
    )
    stamp = (
        "UPDATE write_sequence SET value = value + 1 WHERE id = 1; "
        "UPDATE memories SET write_seq = (SELECT value FROM write_sequence WHERE id = 1) "
        "WHERE seq = NEW.seq;"
    )
    conn.execute(f"CREATE TRIGGER memories_write_seq_insert AFTER INSERT ON memories BEGIN {stamp} END")
    conn.execute(
        "CREATE TRIGGER memories_write_seq_update AFTER UPDATE OF state, embedding, embedding_model, "
        f"space ON memories BEGIN {stamp} END"
    )
    conn.execute(
        "CREATE TRIGGER memories_write_seq_delete AFTER DELETE ON memories BEGIN "
        "UPDATE write_sequence SET value = value + 1 WHERE id = 1; "
        "INSERT INTO memory_removals (write_seq, seq, space) "
        "SELECT value, OLD.seq, OLD.space FROM write_sequence WHERE id = 1; END"
    )
    conn.execute(
        "INSERT OR IGNORE INTO store_meta (key, value) VALUES ('side_index_epoch', '0'), "
        "('store_id', lower(hex(randomblob(16))))"
    )


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction.

    Concurrent processes opening a new store at the same time are safe: each
    migration runs under ``BEGIN IMMEDIATE`` and re-checks the record first.

    Args:
        conn: An autocommit (``isolation_level=None``) connection.

    Returns:
        Names of the migrations applied now (empty when up to date).

    Raises:
        MigrationError: a migration failed; its transaction is rolled back.
    """
    applied_now: list[str] = []
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _bli_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM _bli_migrations")}
    except sqlite3.Error as exc:
        raise MigrationError(f"cannot read the store's migration record: {exc}") from exc
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        try:
            conn.execute("BEGIN IMMEDIATE")
            exists = conn.execute(
                "SELECT 1 FROM _bli_migrations WHERE name = ?", (fn.__name__,)
            ).fetchone()
            if exists is None:
                fn(conn)
                conn.execute(
                    "INSERT INTO _bli_migrations (name, applied_at) VALUES (?, ?)",
                    (fn.__name__, datetime.now(UTC).isoformat()),
                )
                applied_now.append(fn.__name__)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise MigrationError(f"migration {fn.__name__} failed: {exc}") from exc
    return applied_now
