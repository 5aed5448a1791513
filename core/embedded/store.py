"""The embedded SQLite store: memory rows, keyword index, vectors, aliases, jobs.

One SQLite file (WAL, busy timeout) shared by the MCP server, the hooks and the
daemon. Every write is one ``BEGIN IMMEDIATE`` transaction in which the row, its
keyword-index entry and its vector agree. Vectors are little-endian float32 blobs in
the row (the source of truth) and are scored exactly with numpy from an in-process
cache that is refreshed when the space's write generation moves.

The store knows nothing about embedding models beyond the name and dimension it
records; :mod:`bli_memory.core.embedded.engine` computes vectors and ranks.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.migrations import migrate
from bli_memory.core.errors import ModelMismatchError, NotFoundError, StoreError
from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS, content_hash, normalise_content
from bli_memory.core.memory.terms import index_text
from bli_memory.core.models import Memory
from bli_memory.core.private_files import make_private_file

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MAX_CONTENT_CHARS",
    "ExtractJob",
    "SQLiteStore",
    "VectorSet",
    "content_hash",
    "decode_vector",
    "encode_vector",
    "normalise_content",
    "now_iso",
]

_COLUMNS = (
    "seq, id, space, content, custom_id, metadata, source, session_id, created_at, updated_at, "
    "version, supersedes, state, forgotten_at, expires_at"
)


#: The next row ``seq``: one past the highest ever used, purged rows included. SQLite
#: would otherwise reuse the number of a purged newest row, and every derived index keyed
#: by seq (the in-process vector cache, the side indexes of core/embedded/side_indexes.py) would
#: take the new row for the purged one, keeping the purged text findable.
_NEXT_SEQ = (
    "(SELECT max(coalesce((SELECT max(seq) FROM memories), 0), "
    "coalesce((SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'purged_seq'), 0)) + 1)"
)


def now_iso() -> str:
    """Current UTC time as ISO 8601 with microseconds and ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode_vector(vector: np.ndarray) -> bytes:
    """Little-endian float32 bytes of a 1-d vector."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes) -> np.ndarray:
    """Inverse of :func:`encode_vector`: a float32 array (read-only view of ``blob``)."""
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


@dataclass
class VectorSet:
    """The live vectors of a set of spaces, held in memory.

    Attributes:
        seqs: int64 array (n,) of row sequence numbers.
        matrix: float32 array (n, d), rows L2-normalised.
    """

    seqs: np.ndarray
    matrix: np.ndarray
    generation: tuple[tuple[int, int], ...]
    max_seq: int


@dataclass(frozen=True)
class ExtractJob:
    """One claimed ``memory_extract_jobs`` row.

    Attributes:
        id: Job id (UUID4).
        space: Canonical container tag the text belongs to.
        text: The redacted text to distil.
        source: Who queued it (``hook:claude``, ``mcp``, ...).
        session_id: The host session, when known.
        attempts: Claims so far, this one included.
        created_at: When it was queued (UTC ISO 8601).
        reclaimed: True when this claim took the job over from a worker whose lease expired.
    """

    id: str
    space: str
    text: str
    source: str
    session_id: str | None
    attempts: int
    created_at: str
    reclaimed: bool = False


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _row_to_memory(row: Sequence[Any]) -> Memory:
    return Memory(
        id=row[1],
        space=row[2],
        content=row[3],
        custom_id=row[4],
        metadata=json.loads(row[5]) if row[5] else {},
        source=row[6],
        session_id=row[7],
        created_at=row[8],
        updated_at=row[9],
        version=row[10],
        supersedes=row[11],
        state=row[12],
        forgotten_at=row[13],
        expires_at=row[14],
    )


class SQLiteStore:
    """One embedded store file.

    Args:
        path: The SQLite file; its folder is created (mode 0700) if missing.
        model_name: Name of the embedding model whose vectors this process writes.
        dimensions: Length of those vectors.
        busy_timeout_ms: How long a write waits for another process's write lock.

    Raises:
        StoreError: the file cannot be opened or is not a BLI Memory store.
        MigrationError: the schema cannot be brought up to date.

    A store whose vectors were made by another model opens (to inspect, list, export
    and re-embed it); searching and writing vectors raise ``ModelMismatchError``
    (:meth:`require_model`).
    """

    def __init__(
        self,
        path: Path,
        *,
        model_name: str,
        dimensions: int,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        self.path = Path(path)
        self.model_name = model_name
        self.dimensions = dimensions
        self._lock = threading.RLock()
        self._vector_cache: dict[tuple[str, ...], VectorSet] = {}
        try:
            # Created 0600 before SQLite opens it; -wal and -shm then get the same mode.
            make_private_file(self.path)
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_ms / 1000, isolation_level=None,
                check_same_thread=False,
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            # Deleted and overwritten content is zeroed on disk, not left in free pages.
            self._conn.execute("PRAGMA secure_delete = ON")
            if self.path.stat().st_mode & 0o077:
                self.path.chmod(0o600)  # memories are private; SQLite gives -wal/-shm the same mode
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the memory store: {exc}", reason="store_unavailable") from exc
        try:
            self.migrations_applied = migrate(self._conn)
            self._check_model()
        except BaseException:
            self._conn.close()
            raise

    # --- lifecycle -----------------------------------------------------------------

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:  # pragma: no cover - closing never matters
                pass

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"store read failed: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction; rolled back on any exception."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"store is busy or read-only: {exc}", reason="store_busy") from exc
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"store write failed: {exc}") from exc
                raise

    def _check_model(self) -> None:
        """Record this process's model in a new store; a store of another model still
        opens, so it can be inspected and re-embedded (``memory reembed``), and
        :meth:`require_model` refuses what would mix vectors of two models."""
        with self._read() as conn:
            rows = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
        if rows.get("embedding_model") is None:
            with self._write() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO store_meta (key, value) VALUES ('embedding_model', ?), "
                    "('embedding_dimensions', ?)",
                    (self.model_name, str(self.dimensions)),
                )

    def require_model(self, conn: sqlite3.Connection | None = None) -> None:
        """Raise unless the store's recorded model is this process's (read each time, so
        a store re-embedded by another process is refused from then on).

        Raises:
            ModelMismatchError: the store holds vectors of another embedding model.
        """
        if conn is None:
            with self._read() as own:
                return self.require_model(own)
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'embedding_model'").fetchone()
        recorded = row[0] if row else self.model_name
        if recorded != self.model_name:
            raise ModelMismatchError(
                f"the store at {self.path} holds vectors of the embedding model {recorded!r}, "
                f"but this process uses {self.model_name!r}; run `bli-memory-mcp memory reembed` "
                "to re-embed it, or point BLI_MEMORY_DATA_DIR at another store"
            )
        return None

    def meta(self) -> dict[str, str]:
        """The store's recorded metadata (embedding model, dimensions)."""
        with self._read() as conn:
            return dict(conn.execute("SELECT key, value FROM store_meta").fetchall())

    # --- spaces --------------------------------------------------------------------

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """Canonical tag for ``tag`` and every tag that names the same space.

        Returns:
            ``(canonical, (canonical, alias, ...))``; a tag with no alias row is its own
            canonical space.
        """
        with self._read() as conn:
            row = conn.execute(
                "SELECT canonical FROM memory_space_aliases WHERE alias = ?", (tag,)
            ).fetchone()
            canonical = row[0] if row else tag
            aliases = [
                r[0]
                for r in conn.execute(
                    "SELECT alias FROM memory_space_aliases WHERE canonical = ? ORDER BY alias",
                    (canonical,),
                )
            ]
        return canonical, tuple(dict.fromkeys([canonical, *aliases]))

    def add_alias(self, alias: str, canonical: str) -> None:
        """Declare that ``alias`` names the same space as ``canonical``."""
        if alias == canonical:
            return
        with self._write() as conn:
            conn.execute(
                "INSERT INTO memory_space_aliases (alias, canonical, created_at) VALUES (?, ?, ?) "
                "ON CONFLICT (alias) DO UPDATE SET canonical = excluded.canonical",
                (alias, canonical, now_iso()),
            )

    # --- reads ---------------------------------------------------------------------

    def get(self, id: str) -> Memory | None:
        """The row with this id, in any state, or None."""
        with self._read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (id,)).fetchone()
        return _row_to_memory(row) if row else None

    def find_live(
        self, spaces: Sequence[str], *, custom_id: str | None = None, sha256: str | None = None
    ) -> Memory | None:
        """The live row of these spaces with this customId or content hash, or None."""
        marks = ",".join("?" * len(spaces))
        if custom_id is not None:
            sql, arg = f"custom_id = ? AND space IN ({marks})", custom_id
        elif sha256 is not None:
            sql, arg = f"content_sha256 = ? AND space IN ({marks})", sha256
        else:  # pragma: no cover - programming error
            raise ValueError("custom_id or sha256 required")
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE state = 'active' AND {sql} "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY seq DESC LIMIT 1",
                (arg, *spaces, now_iso()),
            ).fetchone()
        return _row_to_memory(row) if row else None

    def rows_by_seq(self, seqs: Iterable[int], *, live_only: bool = True) -> dict[int, Memory]:
        """Rows by sequence number; with ``live_only``, active and unexpired only."""
        seq_list = [int(s) for s in seqs]
        if not seq_list:
            return {}
        out: dict[int, Memory] = {}
        now = now_iso()
        with self._read() as conn:
            for start in range(0, len(seq_list), 500):
                chunk = seq_list[start : start + 500]
                marks = ",".join("?" * len(chunk))
                where = f"seq IN ({marks})"
                args: list[Any] = list(chunk)
                if live_only:
                    where += " AND state = 'active' AND (expires_at IS NULL OR expires_at > ?)"
                    args.append(now)
                for row in conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE {where}", args):
                    out[row[0]] = _row_to_memory(row)
        return out

    def rows_by_seq_ids(self, ids: Sequence[str]) -> list[Memory]:
        """The live, unexpired rows among these ids."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id IN ({marks}) AND state = 'active' "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (*ids, now_iso()),
            ).fetchall()
        return [_row_to_memory(r) for r in rows]

    def history(self, id: str) -> list[Memory]:
        """Every version in the chain of ``id``, newest first (tombstones included).

        Raises:
            NotFoundError: no row has this id.
        """
        start = self.get(id)
        if start is None:
            raise NotFoundError(f"no memory with id {id}")
        with self._read() as conn:
            # Walk forward to the newest version, then back along `supersedes`, within the
            # row's space. Each walk stops at a row it has seen: an imported file could
            # link rows in a loop, and a loop must not hang history, get or purge.
            newest, seen = start, {start.id}
            while True:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE supersedes = ? AND space = ? "
                    "ORDER BY seq DESC LIMIT 1",
                    (newest.id, start.space),
                ).fetchone()
                if row is None or row[1] in seen:
                    break
                newest = _row_to_memory(row)
                seen.add(newest.id)
            chain, seen = [newest], {newest.id}
            while chain[-1].supersedes and chain[-1].supersedes not in seen:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE id = ? AND space = ?",
                    (chain[-1].supersedes, start.space),
                ).fetchone()
                if row is None:
                    break
                chain.append(_row_to_memory(row))
                seen.add(chain[-1].id)
        return chain

    def recent(self, spaces: Sequence[str], *, limit: int = 10) -> list[Memory]:
        """Newest live memories of these spaces."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE state = 'active' AND space IN ({marks}) "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY seq DESC LIMIT ?",
                (*spaces, now_iso(), int(limit)),
            ).fetchall()
        return [_row_to_memory(r) for r in rows]

    def forgotten(self, spaces: Sequence[str], *, limit: int = 500) -> list[str]:
        """Contents of the tombstones of these spaces and of their older versions, newest first.

        A forget tombstones the live version; the versions it replaced (``superseded``,
        reached through ``supersedes``) said the same thing in other words, so they count
        as forgotten too. Each distinct text once; at most ``limit`` texts.
        """
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                "WITH RECURSIVE chain(content, supersedes, at, seq, depth) AS ("
                " SELECT content, supersedes, forgotten_at, seq, 0 FROM memories"
                f" WHERE state = 'forgotten' AND space IN ({marks})"
                " UNION ALL"
                " SELECT m.content, m.supersedes, chain.at, chain.seq, chain.depth + 1"
                " FROM memories m JOIN chain ON m.id = chain.supersedes"
                " WHERE m.state = 'superseded' AND chain.depth < 100)"
                " SELECT content FROM chain ORDER BY at DESC, seq DESC, depth LIMIT ?",
                (*spaces, int(limit)),
            ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))

    def recent_of_kinds(
        self, spaces: Sequence[str], kinds: Sequence[str], *, limit: int = 10
    ) -> list[Memory]:
        """Newest live memories of these spaces whose ``metadata.kind`` is one of ``kinds``."""
        if not kinds:
            return []
        marks = ",".join("?" * len(spaces))
        kind_marks = ",".join("?" * len(kinds))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE state = 'active' AND space IN ({marks}) "
                "AND (expires_at IS NULL OR expires_at > ?) "
                f"AND lower(json_extract(metadata, '$.kind')) IN ({kind_marks}) "
                "ORDER BY seq DESC LIMIT ?",
                (*spaces, now_iso(), *[k.lower() for k in kinds], int(limit)),
            ).fetchall()
        return [_row_to_memory(r) for r in rows]

    def count_by_state(self, spaces: Sequence[str] | None = None) -> dict[str, int]:
        """Row counts per state, for these spaces or the whole store."""
        with self._read() as conn:
            if spaces:
                marks = ",".join("?" * len(spaces))
                rows = conn.execute(
                    f"SELECT state, count(*) FROM memories WHERE space IN ({marks}) GROUP BY state",
                    tuple(spaces),
                ).fetchall()
            else:
                rows = conn.execute("SELECT state, count(*) FROM memories GROUP BY state").fetchall()
        counts = {"active": 0, "superseded": 0, "forgotten": 0}
        counts.update(dict(rows))
        return counts

    def keyword_search(
        self, spaces: Sequence[str], match: str, *, limit: int
    ) -> list[tuple[int, float]]:
        """Live rows matching an FTS5 expression built by :mod:`bli_memory.core.memory.terms`.

        Returns:
            ``[(seq, bm25), ...]`` best first (lower bm25 is better in SQLite).
        """
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            return [
                (int(r[0]), float(r[1]))
                for r in conn.execute(
                    "SELECT f.rowid, bm25(memory_fts) AS rank FROM memory_fts AS f "
                    "JOIN memories AS m ON m.seq = f.rowid "
                    f"WHERE memory_fts MATCH ? AND m.space IN ({marks}) AND m.state = 'active' "
                    "ORDER BY rank LIMIT ?",
                    (match, *spaces, int(limit)),
                )
            ]

    def has_match(self, spaces: Sequence[str], match: str) -> bool:
        """True when some live row of these spaces matches the FTS5 expression (no ranking)."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            # The match runs once, as a subquery: joined, SQLite may probe the FTS5 query
            # once per row of the space (700 ms for an absent term in 700 rows).
            return conn.execute(
                "SELECT 1 FROM memories WHERE seq IN (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?) "
                f"AND space IN ({marks}) AND state = 'active' LIMIT 1",
                (match, *spaces),
            ).fetchone() is not None

    def match_count(self, spaces: Sequence[str], match: str) -> int:
        """How many live rows of these spaces match the FTS5 expression (document frequency)."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            # One subquery, as in has_match: the FTS5 query runs once, not once per row.
            return int(conn.execute(
                "SELECT count(*) FROM memories WHERE seq IN (SELECT rowid FROM memory_fts WHERE memory_fts "
                f"MATCH ?) AND space IN ({marks}) AND state = 'active'",
                (match, *spaces),
            ).fetchone()[0])

    def keyword_terms(self, seqs: Sequence[int]) -> list[tuple[int, str]]:
        """``[(seq, terms), ...]``: the keyword-index term strings of these rows.

        Read in chunks so a side-index build of a large space never holds the store
        for long (:mod:`bli_memory.core.embedded.side_indexes`). Seqs without an entry are skipped.
        """
        out: list[tuple[int, str]] = []
        chunk = 5000
        for start in range(0, len(seqs), chunk):
            part = [int(s) for s in seqs[start : start + chunk]]
            marks = ",".join("?" * len(part))
            with self._read() as conn:
                out.extend(
                    (int(r[0]), str(r[1]))
                    for r in conn.execute(
                        f"SELECT rowid, terms FROM memory_fts WHERE rowid IN ({marks})", part
                    )
                )
        return out

    def neighbours(self, seqs: Sequence[int], spaces: Sequence[str]) -> dict[int, list[int]]:
        """The live rows just before and after each row in its session.

        Args:
            seqs: Rows to look around.
            spaces: Only rows of these spaces count (a row elsewhere has no neighbours).

        Returns:
            ``{seq: [previous, next]}`` (either may be missing); rows without a
            ``session_id`` are left out. Uses the ``memories_session`` index (m006).
        """
        out: dict[int, list[int]] = {}
        allowed = set(spaces)
        with self._read() as conn:
            for seq in seqs:
                row = conn.execute(
                    "SELECT space, session_id FROM memories WHERE seq = ?", (int(seq),)
                ).fetchone()
                if row is None or row[1] is None or row[0] not in allowed:
                    continue
                kids = []
                for op, order in (("<", "DESC"), (">", "ASC")):
                    found = conn.execute(
                        "SELECT seq FROM memories WHERE space = ? AND session_id = ? AND state = 'active' "
                        f"AND seq {op} ? ORDER BY seq {order} LIMIT 1",
                        (row[0], row[1], int(seq)),
                    ).fetchone()
                    if found is not None:
                        kids.append(int(found[0]))
                out[int(seq)] = kids
        return out

    def vectors(self, spaces: Sequence[str]) -> VectorSet:
        """Live vectors of these spaces, from the in-process cache when still current.

        The cache is checked against ``space_generation`` (one indexed read); new rows
        are appended incrementally, and a removal reloads the set.
        """
        import numpy as np

        key = tuple(sorted(spaces))
        marks = ",".join("?" * len(key))
        with self._read() as conn:
            self.require_model(conn)
            gens = dict(
                (r[0], (int(r[1]), int(r[2])))
                for r in conn.execute(
                    f"SELECT space, generation, removals FROM space_generation WHERE space IN ({marks})",
                    key,
                )
            )
            generation = tuple(gens.get(s, (0, 0)) for s in key)
            cached = self._vector_cache.get(key)
            if cached is not None and cached.generation == generation:
                return cached
            removals_same = cached is not None and all(
                a[1] == b[1] for a, b in zip(cached.generation, generation, strict=True)
            )
            since = cached.max_seq if (cached is not None and removals_same) else 0
            rows = conn.execute(
                f"SELECT seq, embedding FROM memories WHERE state = 'active' AND space IN ({marks}) "
                "AND seq > ? AND embedding IS NOT NULL AND embedding_model IS ? ORDER BY seq",
                (*key, since, self.model_name),
            ).fetchall()
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(
                len(rows), self.dimensions
            )
        else:
            matrix = np.zeros((0, self.dimensions), dtype=np.float32)
        if since and cached is not None:
            seqs = np.concatenate([cached.seqs, seqs])
            matrix = np.concatenate([cached.matrix, matrix]) if len(rows) else cached.matrix
        max_seq = int(seqs[-1]) if len(seqs) else 0
        vs = VectorSet(seqs=seqs, matrix=matrix, generation=generation, max_seq=max_seq)
        self._vector_cache[key] = vs
        return vs

    # --- writes --------------------------------------------------------------------

    @staticmethod
    def _bump(conn: sqlite3.Connection, space: str, *, removal: bool) -> None:
        conn.execute(
            "INSERT INTO space_generation (space, generation, removals) VALUES (?, 1, ?) "
            "ON CONFLICT (space) DO UPDATE SET generation = generation + 1, "
            "removals = removals + excluded.removals",
            (space, 1 if removal else 0),
        )

    def _insert(self, conn: sqlite3.Connection, memory: Memory, vector: np.ndarray) -> None:
        if vector.shape != (self.dimensions,):
            raise StoreError(f"vector has shape {vector.shape}, expected ({self.dimensions},)")
        self.require_model(conn)
        cur = conn.execute(
            "INSERT INTO memories (seq, id, space, content, custom_id, metadata, source, session_id, "
            "created_at, updated_at, version, supersedes, state, forgotten_at, expires_at, "
            "content_sha256, embedding, embedding_model) "
            f"VALUES ({_NEXT_SEQ}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', NULL, ?, ?, ?, ?)",
            (
                memory.id, memory.space, memory.content, memory.custom_id,
                json.dumps(memory.metadata, ensure_ascii=False, sort_keys=True), memory.source,
                memory.session_id, memory.created_at, memory.updated_at, memory.version,
                memory.supersedes, memory.expires_at, content_hash(memory.content),
                encode_vector(vector), self.model_name,
            ),
        )
        conn.execute(
            "INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)",
            (cur.lastrowid, index_text(memory.content)),
        )
        self._bump(conn, memory.space, removal=False)

    @staticmethod
    def _retire(conn: sqlite3.Connection, memory: Memory, state: str, at: str) -> None:
        """Move a live row out of the live set and out of the keyword index."""
        seq = conn.execute("SELECT seq FROM memories WHERE id = ?", (memory.id,)).fetchone()[0]
        if state == "forgotten":
            conn.execute(
                "UPDATE memories SET state = 'forgotten', forgotten_at = ?, updated_at = ?, "
                "embedding = NULL, embedding_model = NULL WHERE seq = ?",
                (at, at, seq),
            )
        else:
            conn.execute(
                "UPDATE memories SET state = ?, updated_at = ? WHERE seq = ?", (state, at, seq)
            )
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq,))
        SQLiteStore._bump(conn, memory.space, removal=True)

    def save(
        self,
        content: str,
        vector: np.ndarray,
        *,
        space: str,
        spaces: Sequence[str],
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        source: str = "mcp",
        session_id: str | None = None,
        expires_at: str | None = None,
    ) -> tuple[str, Memory, Memory | None]:
        """Insert, deduplicate or upsert, in one transaction.

        Args:
            content: Normalised content (see :func:`normalise_content`).
            vector: Its embedding, float32 (d,).
            space: Canonical tag the row goes to.
            spaces: Every tag naming the space (duplicates are looked for in all).
            custom_id: Upsert key: a live row with it becomes history of the new row.

        Returns:
            ``(status, live_row, previous)`` with status ``created``, ``duplicate`` or
            ``updated``.
        """
        sha = content_hash(content)
        marks = ",".join("?" * len(spaces))
        at = now_iso()
        with self._write() as conn:
            if custom_id is not None:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE state = 'active' AND custom_id = ? "
                    f"AND space IN ({marks})",
                    (custom_id, *spaces),
                ).fetchone()
                if row is not None:
                    previous = _row_to_memory(row)
                    if content_hash(previous.content) == sha and (
                        metadata is None or metadata == previous.metadata
                    ):
                        return "duplicate", previous, None
                    self._retire(conn, previous, "superseded", at)
                    memory = Memory(
                        id=str(uuid.uuid4()), space=previous.space, content=content,
                        custom_id=custom_id,
                        metadata=metadata if metadata is not None else previous.metadata,
                        source=source, session_id=session_id, created_at=at, updated_at=at,
                        version=previous.version + 1, supersedes=previous.id, expires_at=expires_at,
                    )
                    self._insert(conn, memory, vector)
                    return "updated", memory, previous
            else:
                row = conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE state = 'active' AND content_sha256 = ? "
                    f"AND space IN ({marks}) AND (expires_at IS NULL OR expires_at > ?) ORDER BY seq LIMIT 1",
                    (sha, *spaces, at),
                ).fetchone()
                if row is not None:
                    return "duplicate", _row_to_memory(row), None
            memory = Memory(
                id=str(uuid.uuid4()), space=space, content=content, custom_id=custom_id,
                metadata=metadata or {}, source=source, session_id=session_id, created_at=at,
                updated_at=at, version=1, expires_at=expires_at,
            )
            self._insert(conn, memory, vector)
            return "created", memory, None

    def supersede(self, previous: Memory, content: str, vector: np.ndarray) -> Memory:
        """Replace a live row with a new version pointing at it, in one transaction.

        Raises:
            NotFoundError: ``previous`` is no longer live (another writer got there first).
        """
        at = now_iso()
        with self._write() as conn:
            state = conn.execute("SELECT state FROM memories WHERE id = ?", (previous.id,)).fetchone()
            if state is None or state[0] != "active":
                raise NotFoundError(f"memory {previous.id} is no longer live")
            self._retire(conn, previous, "superseded", at)
            expired = previous.expires_at is not None and previous.expires_at <= at
            memory = replace(
                previous, id=str(uuid.uuid4()), content=content, created_at=at, updated_at=at,
                version=previous.version + 1, supersedes=previous.id, state="active",
                expires_at=None if expired else previous.expires_at,
            )
            self._insert(conn, memory, vector)
        return memory

    def forget(self, memory: Memory) -> Memory:
        """Tombstone a live row: state ``forgotten``, out of the keyword index, vector dropped.

        Raises:
            NotFoundError: it is not live.
        """
        at = now_iso()
        with self._write() as conn:
            state = conn.execute("SELECT state FROM memories WHERE id = ?", (memory.id,)).fetchone()
            if state is None or state[0] != "active":
                raise NotFoundError(f"memory {memory.id} is not live")
            self._retire(conn, memory, "forgotten", at)
        return replace(memory, state="forgotten", forgotten_at=at, updated_at=at)

    def purge(self, id: str) -> int:
        """Erase a memory and every version of it from the file, for secrets saved by mistake.

        Uses ``secure_delete`` and checkpoints the WAL so the bytes leave the disk
        files, not just the live set.

        Returns:
            Number of rows erased.

        Raises:
            NotFoundError: no row has this id.
        """
        chain = self.history(id)
        with self._lock:
            with self._write() as conn:
                for m in chain:
                    seq = conn.execute("SELECT seq FROM memories WHERE id = ?", (m.id,)).fetchone()
                    if seq is None:
                        continue
                    conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq[0],))
                    conn.execute("DELETE FROM memories WHERE seq = ?", (seq[0],))
                    # Never hand this seq out again (see _NEXT_SEQ).
                    conn.execute(
                        "INSERT INTO store_meta (key, value) VALUES ('purged_seq', ?) ON CONFLICT (key) "
                        "DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                        (seq[0],),
                    )
                    self._bump(conn, m.space, removal=True)
                    # A queued or failed extract job may still hold the raw text.
                    conn.execute(
                        "DELETE FROM memory_extract_jobs WHERE space = ? AND instr(text, ?) > 0",
                        (m.space, m.content),
                    )
            self._conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return len(chain)

    # --- extract jobs --------------------------------------------------------------

    def enqueue_job(self, text: str, *, space: str, source: str, session_id: str | None,
                    job_id: str | None = None) -> str:
        """Write one durable ``memory_extract_jobs`` row; returns its id.

        A ``job_id`` already queued (a retried capture) writes nothing.
        """
        job_id = job_id or str(uuid.uuid4())
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO memory_extract_jobs (id, space, text, source, session_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (job_id, space, text, source, session_id, now_iso()),
            )
        return job_id

    def job_counts(self) -> dict[str, int]:
        """Extract jobs per state."""
        with self._read() as conn:
            return dict(
                conn.execute("SELECT state, count(*) FROM memory_extract_jobs GROUP BY state").fetchall()
            )

    def claim_job(self, worker_id: str, *, lease_seconds: float, max_attempts: int) -> ExtractJob | None:
        """Claim the oldest ready extract job for ``worker_id``, in one ``BEGIN IMMEDIATE``.

        Ready means ``queued`` and past its ``not_before``, or ``running`` with an
        expired lease (its worker died between claim and finish: the job is taken
        over, never lost). The write lock makes the select-and-mark atomic across
        processes, so a job is claimed by exactly one worker at a time. A job whose
        lease expired after ``max_attempts`` claims is marked ``failed`` instead.

        Args:
            worker_id: Recorded in ``claimed_by``; finish/fail/extend must name it.
            lease_seconds: The claim holds this long unless extended.
            max_attempts: Claims allowed per job.

        Returns:
            The claimed job (``attempts`` already counts this claim), or None when
            nothing is ready.
        """
        now = datetime.now(UTC)
        at = _iso(now)
        until = _iso(now + timedelta(seconds=lease_seconds))
        ready = (
            "(state = 'queued' AND (not_before IS NULL OR not_before <= ?)) "
            "OR (state = 'running' AND lease_expires_at <= ?)"
        )
        with self._read() as conn:  # an idle poll costs a read, not the write lock
            found = conn.execute(f"SELECT 1 FROM memory_extract_jobs WHERE {ready} LIMIT 1", (at, at))
            if found.fetchone() is None:
                return None
        with self._write() as conn:
            while True:
                row = conn.execute(
                    "SELECT id, space, text, source, session_id, attempts, created_at, state "
                    f"FROM memory_extract_jobs WHERE {ready} ORDER BY created_at, id LIMIT 1",
                    (at, at),
                ).fetchone()
                if row is None:
                    return None
                if row[7] == "running" and int(row[5]) >= max_attempts:
                    conn.execute(
                        "UPDATE memory_extract_jobs SET state = 'failed', finished_at = ?, "
                        "lease_expires_at = NULL, error = ? WHERE id = ?",
                        (at, "lease_expired: the worker stopped during every attempt", row[0]),
                    )
                    continue
                conn.execute(
                    "UPDATE memory_extract_jobs SET state = 'running', claimed_by = ?, "
                    "lease_expires_at = ?, attempts = attempts + 1, not_before = NULL WHERE id = ?",
                    (worker_id, until, row[0]),
                )
                return ExtractJob(
                    id=row[0], space=row[1], text=row[2], source=row[3], session_id=row[4],
                    attempts=int(row[5]) + 1, created_at=row[6], reclaimed=row[7] == "running",
                )

    def extend_lease(self, job_id: str, worker_id: str, *, lease_seconds: float) -> bool:
        """Push a running job's lease ``lease_seconds`` into the future.

        Returns:
            False when the job is no longer this worker's (its lease expired and
            another worker took it over).
        """
        until = _iso(datetime.now(UTC) + timedelta(seconds=lease_seconds))
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE memory_extract_jobs SET lease_expires_at = ? "
                "WHERE id = ? AND claimed_by = ? AND state = 'running'",
                (until, job_id, worker_id),
            )
            return cur.rowcount == 1

    def finish_job(self, job_id: str, worker_id: str, outcome: dict[str, Any]) -> bool:
        """Mark a claimed job ``done`` and record its outcome (JSON) on the row.

        Returns:
            False when the job is no longer this worker's; nothing is changed then.
        """
        at = now_iso()
        with self._write() as conn:
            cur = conn.execute(
                # The raw exchange is not kept once distilled: what was worth keeping now
                # lives in memories, and a secret the redactor missed must not linger.
                "UPDATE memory_extract_jobs SET state = 'done', outcome = ?, finished_at = ?, "
                "lease_expires_at = NULL, error = NULL, text = '' "
                "WHERE id = ? AND claimed_by = ? AND state = 'running'",
                (json.dumps(outcome, sort_keys=True), at, job_id, worker_id),
            )
            return cur.rowcount == 1

    def fail_job(self, job_id: str, worker_id: str, *, error: str, retry_at: str | None) -> bool:
        """Record a failed attempt: back to ``queued`` until ``retry_at``, or ``failed`` for good.

        Args:
            error: A short reason (no memory text, no secret).
            retry_at: UTC ISO time before which the job is not retried; None gives up.

        Returns:
            False when the job is no longer this worker's.
        """
        at = now_iso()
        with self._write() as conn:
            if retry_at is not None:
                cur = conn.execute(
                    "UPDATE memory_extract_jobs SET state = 'queued', not_before = ?, error = ?, "
                    "claimed_by = NULL, lease_expires_at = NULL "
                    "WHERE id = ? AND claimed_by = ? AND state = 'running'",
                    (retry_at, error, job_id, worker_id),
                )
            else:
                cur = conn.execute(
                    "UPDATE memory_extract_jobs SET state = 'failed', error = ?, finished_at = ?, "
                    "lease_expires_at = NULL WHERE id = ? AND claimed_by = ? AND state = 'running'",
                    (error, at, job_id, worker_id),
                )
            return cur.rowcount == 1

    def get_job(self, job_id: str) -> dict[str, Any] | None:
        """One job row as a dict (``outcome`` decoded), or None."""
        with self._read() as conn:
            cur = conn.execute("SELECT * FROM memory_extract_jobs WHERE id = ?", (job_id,))
            row = cur.fetchone()
            if row is None:
                return None
            data = dict(zip([c[0] for c in cur.description], row, strict=True))
        if data.get("outcome"):
            data["outcome"] = json.loads(data["outcome"])
        return data

    def prune_jobs(self, *, finished_before: str) -> int:
        """Delete ``done`` jobs finished before this UTC ISO time; returns how many."""
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM memory_extract_jobs WHERE state = 'done' AND finished_at < ?",
                (finished_before,),
            )
            return cur.rowcount

    # --- inspection, audit, export (memory controls) ---------------------------------

    def list_live(self, spaces: Sequence[str], *, limit: int) -> list[Memory]:
        """Newest live memories of these spaces (same as :meth:`recent`)."""
        return self.recent(spaces, limit=limit)

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Check that the derived indexes agree with the rows; optionally rebuild them.

        Checks: every live row has a keyword-index entry and a usable vector of this
        store's model (``wrong_model`` also counts vectors that are not finite or not of
        unit length, which no cosine can use); no keyword entry points at a missing,
        superseded or forgotten row.

        Returns:
            ``{"counts": {...}, "missing_keyword": n, "stale_keyword": n,
            "missing_vector": n, "wrong_model": n, "ok": bool, "repaired": bool,
            "needs_embedding": [seq, ...]}`` (``needs_embedding``: live rows whose vector
            must be recomputed by the engine).
        """
        with self._read() as conn:
            live = {r[0] for r in conn.execute("SELECT seq FROM memories WHERE state = 'active'")}
            indexed = {r[0] for r in conn.execute("SELECT rowid FROM memory_fts")}
            no_vec = [r[0] for r in conn.execute(
                "SELECT seq FROM memories WHERE state = 'active' AND embedding IS NULL")]
            wrong = [r[0] for r in conn.execute(
                "SELECT seq FROM memories WHERE state = 'active' AND embedding IS NOT NULL "
                "AND (embedding_model IS NOT ? OR length(embedding) != ?)",
                (self.model_name, 4 * self.dimensions))]
            wrong += self._unusable_vectors(conn)
        report: dict[str, Any] = {
            "counts": self.count_by_state(),
            "missing_keyword": len(live - indexed),
            "stale_keyword": len(indexed - live),
            "missing_vector": len(no_vec),
            "wrong_model": len(wrong),
            "needs_embedding": sorted(no_vec + wrong),
        }
        report["ok"] = not any(report[k] for k in ("missing_keyword", "stale_keyword", "missing_vector",
                                                    "wrong_model"))
        report["repaired"] = False
        if repair and not report["ok"]:
            with self._write() as conn:
                conn.execute("DELETE FROM memory_fts")
                for seq, content in conn.execute(
                    "SELECT seq, content FROM memories WHERE state = 'active'"
                ).fetchall():
                    conn.execute(
                        "INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)", (seq, index_text(content))
                    )
                conn.execute(
                    "UPDATE space_generation SET generation = generation + 1, removals = removals + 1"
                )
            report["repaired"] = True
        return report

    def _unusable_vectors(self, conn: sqlite3.Connection) -> list[int]:
        """Seqs of live rows of this model whose vector is not finite or not unit length."""
        import numpy as np

        bad: list[int] = []
        cur = conn.execute(
            "SELECT seq, embedding FROM memories WHERE state = 'active' AND embedding IS NOT NULL "
            "AND embedding_model IS ? AND length(embedding) = ?", (self.model_name, 4 * self.dimensions))
        while rows := cur.fetchmany(10_000):
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
            with np.errstate(all="ignore"):
                norms = np.linalg.norm(matrix.astype(np.float64), axis=1)
            for (seq, _), norm in zip(rows, norms, strict=True):
                if not np.isfinite(norm) or abs(norm - 1.0) > 0.01:
                    bad.append(int(seq))
        return bad

    def set_vector(self, seq: int, vector: np.ndarray) -> None:
        """Store a recomputed vector for a row (audit repair)."""
        with self._write() as conn:
            self.require_model(conn)
            row = conn.execute("SELECT space FROM memories WHERE seq = ?", (seq,)).fetchone()
            if row is None:
                raise NotFoundError(f"no row {seq}")
            conn.execute(
                "UPDATE memories SET embedding = ?, embedding_model = ? WHERE seq = ?",
                (encode_vector(vector), self.model_name, seq),
            )
            self._bump(conn, row[0], removal=True)

    def content_of(self, seq: int) -> str:
        """The content of a row by sequence number."""
        with self._read() as conn:
            row = conn.execute("SELECT content FROM memories WHERE seq = ?", (seq,)).fetchone()
        if row is None:
            raise NotFoundError(f"no row {seq}")
        return str(row[0])

    def export_rows(self, spaces: Sequence[str] | None = None) -> Iterator[dict[str, Any]]:
        """Every row (all states, history included) as JSON-ready dicts, oldest first.

        The embedding is included as base64 float32 with its model name, so an import
        into a store of the same model needs no re-embedding.
        """
        import base64

        where = ""
        args: tuple[str, ...] = ()
        if spaces:
            where, args = f"WHERE space IN ({','.join('?' * len(spaces))})", tuple(spaces)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS}, embedding, embedding_model FROM memories {where} ORDER BY seq", args
            ).fetchall()
        for row in rows:
            record = _row_to_memory(row).to_dict()
            record["embedding"] = base64.b64encode(row[15]).decode("ascii") if row[15] else None
            record["embeddingModel"] = row[16]
            yield record

    def import_rows(
        self, records: Iterable[dict[str, Any]], vectors: dict[str, np.ndarray]
    ) -> dict[str, int]:
        """Insert exported rows as they were (ids, versions, states, timestamps kept).

        Args:
            records: Dicts from :meth:`export_rows` (checked by the caller).
            vectors: The vector of each record by memory id: the record's own when it
                can be trusted, else recomputed (``EmbeddedBackend.import_records``). A
                record without one is stored without a vector (only retired rows).

        Returns:
            ``{"imported": n, "skipped": n}``; a record whose id already exists is skipped.
        """
        imported = skipped = 0
        with self._write() as conn:
            if vectors:
                self.require_model(conn)
            for rec in records:
                if conn.execute("SELECT 1 FROM memories WHERE id = ?", (rec["id"],)).fetchone():
                    skipped += 1
                    continue
                blob = None
                live = (rec.get("state") or "active") == "active"
                if rec["id"] in vectors:
                    blob = encode_vector(vectors[rec["id"]])
                cur = conn.execute(
                    "INSERT INTO memories (seq, id, space, content, custom_id, metadata, source, session_id, "
                    "created_at, updated_at, version, supersedes, state, forgotten_at, expires_at, "
                    "content_sha256, embedding, embedding_model) "
                    f"VALUES ({_NEXT_SEQ}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        rec["id"], rec["space"], rec["content"], rec.get("customId"),
                        json.dumps(rec.get("metadata") or {}, ensure_ascii=False, sort_keys=True),
                        rec.get("source") or "import", rec.get("sessionId"), rec["createdAt"],
                        rec["updatedAt"], int(rec.get("version") or 1), rec.get("supersedes"),
                        rec.get("state") or "active", rec.get("forgottenAt"), rec.get("expiresAt"),
                        content_hash(rec["content"]), blob, self.model_name if blob else None,
                    ),
                )
                if live:
                    conn.execute("INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)",
                                 (cur.lastrowid, index_text(rec["content"])))
                self._bump(conn, rec["space"], removal=False)
                imported += 1
        return {"imported": imported, "skipped": skipped}

    def add_recording(self, text: str, *, space: str, source: str, session_id: str | None) -> str:
        """Write one capture-only recording row; returns its id."""
        rec_id = str(uuid.uuid4())
        with self._write() as conn:
            conn.execute(
                "INSERT INTO session_recordings (id, space, session_id, source, text, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (rec_id, space, session_id, source, text, now_iso()),
            )
        return rec_id

    def recording_count(self, spaces: Sequence[str]) -> int:
        """How many recorded turns these spaces hold."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            return int(conn.execute(
                f"SELECT count(*) FROM session_recordings WHERE space IN ({marks})", tuple(spaces)
            ).fetchone()[0])

    def list_recordings(self, spaces: Sequence[str], *, limit: int) -> list[dict[str, Any]]:
        """Recorded turns of these spaces, newest first: ``{"id", "space", "sessionId",
        "source", "createdAt", "text"}``."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, space, session_id, source, created_at, text FROM session_recordings "
                f"WHERE space IN ({marks}) ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (*spaces, int(limit)),
            ).fetchall()
        keys = ("id", "space", "sessionId", "source", "createdAt", "text")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def delete_recordings(self, spaces: Sequence[str]) -> int:
        """Erase every recorded turn of these spaces (``secure_delete`` is on); returns how many."""
        marks = ",".join("?" * len(spaces))
        with self._write() as conn:
            cur = conn.execute(f"DELETE FROM session_recordings WHERE space IN ({marks})", tuple(spaces))
            n = cur.rowcount
        return int(n)

    # --- experience log ------------------------------------------------------------

    _EXPERIENCE_KEYS = ("store", "verdict", "reason", "created_at")

    def add_experience(self, entry: dict[str, Any]) -> str:
        """Keep one experience entry, with the service door's retry rules, in one transaction.

        Args:
            entry: ``id`` (UUID), ``store``, ``verdict``, ``reason``, ``created_at`` (UTC ISO
                8601), and optionally ``person``, ``device``, ``agent``, ``project``.

        Returns:
            ``created`` (new row; the door's 201), ``identical`` (same id, same
            store/verdict/reason/created_at; 200) or ``conflict`` (same id, other
            content; 409, nothing changed).

        Raises:
            StoreError: the row breaks the table's checks or the write failed.
        """
        values = [str(entry[k]) for k in ("id", *self._EXPERIENCE_KEYS)]
        extra = [str(entry.get(k) or "") for k in ("person", "device", "agent", "project")]
        with self._write() as conn:
            row = conn.execute(
                "SELECT store, verdict, reason, created_at FROM memory_experience WHERE id = ?",
                (values[0],),
            ).fetchone()
            if row is not None:
                return "identical" if list(row) == values[1:] else "conflict"
            conn.execute(
                "INSERT INTO memory_experience (id, store, verdict, reason, created_at, person, "
                "device, agent, project, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*values, *extra, now_iso()),
            )
        return "created"

    def experience_page(
        self, *, since: str, before: tuple[str, str] | None = None, limit: int = 500
    ) -> list[dict[str, Any]]:
        """One page of experience entries at or after ``since``, newest first.

        Rows come in ``(created_at, id)`` order, descending, so a reader that stops
        early (a capped read) has the most recent entries.

        Args:
            since: UTC ISO 8601 lower bound on ``created_at`` (inclusive).
            before: ``(created_at, id)`` of the last row of the previous page (keyset paging).
            limit: Most rows to return.

        Returns:
            Dicts with ``id, store, verdict, reason, created_at, person, device, agent, project``.
        """
        sql = (
            "SELECT id, store, verdict, reason, created_at, person, device, agent, project "
            "FROM memory_experience WHERE created_at >= ?"
        )
        args: list[Any] = [since]
        if before is not None:
            sql += " AND (created_at, id) < (?, ?)"
            args += [before[0], before[1]]
        sql += " ORDER BY created_at DESC, id DESC LIMIT ?"
        args.append(int(limit))
        keys = ("id", "store", "verdict", "reason", "created_at", "person", "device", "agent", "project")
        with self._read() as conn:
            return [dict(zip(keys, row, strict=True)) for row in conn.execute(sql, args)]

    # --- browsing (the memory browser, core/ui) ------------------------------------

    def page_live(
        self, spaces: Sequence[str], *, before_seq: int | None = None, limit: int = 25
    ) -> list[tuple[int, Memory]]:
        """One page of live memories of these spaces, newest first (keyset paging on ``seq``).

        Args:
            spaces: Canonical tag and aliases.
            before_seq: The last ``seq`` of the previous page; None for the first page.
            limit: Rows in the page.

        Returns:
            ``[(seq, memory), ...]``; pass the last seq as ``before_seq`` for the next page.
            Served by the ``(space, state, seq)`` index: a page costs the same at any size.
        """
        marks = ",".join("?" * len(spaces))
        bound = "" if before_seq is None else "AND seq < ? "
        args: list[Any] = [*spaces, now_iso(), *([] if before_seq is None else [int(before_seq)])]
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE state = 'active' AND space IN ({marks}) "
                f"AND (expires_at IS NULL OR expires_at > ?) {bound}ORDER BY seq DESC LIMIT ?",
                (*args, int(limit)),
            ).fetchall()
        return [(int(r[0]), _row_to_memory(r)) for r in rows]

    def space_counts(self, *, limit: int = 500) -> list[tuple[str, dict[str, int]]]:
        """Row counts per state for each space that holds rows, most live rows first.

        Counted from the ``(space, state, seq)`` index without reading any row.

        Returns:
            ``[(space, {"active": n, "superseded": n, "forgotten": n}), ...]``, at most ``limit``.
        """
        with self._read() as conn:
            rows = conn.execute(
                "SELECT space, state, count(*) FROM memories GROUP BY space, state"
            ).fetchall()
        out: dict[str, dict[str, int]] = {}
        for space, state, n in rows:
            out.setdefault(space, {"active": 0, "superseded": 0, "forgotten": 0})[state] = int(n)
        return sorted(out.items(), key=lambda kv: (-kv[1]["active"], kv[0]))[: int(limit)]

    def aliases(self) -> dict[str, list[str]]:
        """Every declared alias: ``{canonical: [alias, ...]}``."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT canonical, alias FROM memory_space_aliases ORDER BY canonical, alias"
            ).fetchall()
        out: dict[str, list[str]] = {}
        for canonical, alias in rows:
            out.setdefault(canonical, []).append(alias)
        return out

    def recent_jobs(self, *, limit: int = 50) -> list[dict[str, Any]]:
        """The newest extract jobs, without their text (it may hold what was not yet redacted).

        Returns:
            Dicts with ``id, space, source, session_id, state, attempts, created_at,
            finished_at, error, outcome`` (``outcome`` decoded: added / updated / unchanged /
            conflicted counts for a ``done`` job, else None).
        """
        keys = ("id", "space", "source", "session_id", "state", "attempts", "created_at",
                "finished_at", "error", "outcome")
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(keys)} FROM memory_extract_jobs "
                "ORDER BY created_at DESC, id DESC LIMIT ?",
                (int(limit),),
            ).fetchall()
        jobs = [dict(zip(keys, row, strict=True)) for row in rows]
        for job in jobs:
            try:
                job["outcome"] = json.loads(job["outcome"]) if job["outcome"] else None
            except ValueError:
                job["outcome"] = None
        return jobs
