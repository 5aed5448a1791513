"""The embedded documents index: one SQLite file beside the memory store, never mixed into it.

Kept apart on purpose: documents are derived data, rebuilt from the repository at will, so
deleting the index is deleting this file, and the memory store's rules (dedup, versions,
tombstones) never apply to them. Per space (container tag):

- ``doc_files``: each indexed file's size, mtime and content hash (an unchanged file costs a
  stat on the next run);
- ``doc_chunks``: the chunks of documents and the commit messages, each with its kind
  (``document`` or ``commit``), path and lines or sha and date, heading trail, text (its
  secrets masked before it is stored) and embedding (float32 blob);
- ``doc_fts``: FTS5 over the chunks' terms, as the memory store indexes memories
  (:mod:`bli_memory.core.memory.terms`);
- ``doc_forgotten``: paths the person keeps out (``documents forget PATH``);
- ``doc_state``: the repository root, the last commit read, when it was refreshed, and what
  was skipped and why.

Every write is one ``BEGIN IMMEDIATE`` transaction. Standard library only (numpy arrives
with the vectors the caller gives).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bli_memory.core.documents.sources import glob_matches
from bli_memory.core.errors import StoreError
from bli_memory.core.memory.documents import DocumentChunk, DocumentsState
from bli_memory.core.memory.terms import FTS_TOKENIZE, index_text

__all__ = ["DocumentIndex"]

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS doc_files (
    space TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL, PRIMARY KEY (space, path));
CREATE TABLE IF NOT EXISTS doc_chunks (
    seq INTEGER PRIMARY KEY, space TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('document', 'commit')),
    path TEXT NOT NULL DEFAULT '', sha TEXT, date TEXT, heading TEXT NOT NULL DEFAULT '[]',
    start_line INTEGER, end_line INTEGER, text TEXT NOT NULL, embedding BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS doc_chunks_file ON doc_chunks (space, kind, path);
CREATE VIRTUAL TABLE IF NOT EXISTS doc_fts USING fts5 (terms, tokenize = "{FTS_TOKENIZE}");
CREATE VIRTUAL TABLE IF NOT EXISTS doc_vocab USING fts5vocab (doc_fts, 'row');
CREATE TABLE IF NOT EXISTS doc_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO doc_meta (key, value) VALUES ('chunks', 0);
CREATE TABLE IF NOT EXISTS doc_forgotten (space TEXT NOT NULL, path TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (space, path));
CREATE TABLE IF NOT EXISTS doc_state (space TEXT PRIMARY KEY, root TEXT, last_commit TEXT,
    refreshed_at TEXT, skipped TEXT NOT NULL DEFAULT '[]', web TEXT, revision TEXT,
    globs TEXT NOT NULL DEFAULT '{{}}');
"""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class DocumentIndex:
    """The documents index file (created on first use, mode 0600 in a 0700 folder).

    Args:
        path: The SQLite file.
        timeout: Seconds a statement waits for another connection's lock (an index run
            writes in short transactions; a search in a hook's deadline waits 1 s at most).

    Raises:
        StoreError: the file cannot be opened.

    Thread-safe (one connection behind a lock).
    """

    def __init__(self, path: Path, *, timeout: float = 10.0) -> None:
        from bli_memory.core.private_files import make_own_private_dir, make_private_file

        self.path = path
        self._lock = threading.RLock()
        #: ``{(space, kinds): (generation, seqs, matrix)}``: the vectors of a search, kept until
        #: a chunk is written or removed (by any connection: the ``chunks`` generation in
        #: ``doc_meta``; a run that changes nothing but the state keeps them).
        self._vectors: dict[tuple[str, tuple[str, ...]], tuple[Any, list[int], Any]] = {}
        try:
            make_own_private_dir(path.parent)
            make_private_file(path)
            self._conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA secure_delete = ON")
            self._conn.executescript(_SCHEMA)
            self._identity = self._file_identity()
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the documents index: {exc}", reason="store_unavailable") from exc

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def is_current(self) -> bool:
        """Whether the file this handle has open is still the one at :attr:`path`: False once
        ``documents delete`` removed it (or it was replaced), so a long-lived process (the
        daemon) lets go of the deleted file instead of answering from it."""
        return self._identity is not None and self._file_identity() == self._identity

    def close(self) -> None:
        """Close the file. Idempotent."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"the documents index is busy: {exc}", reason="store_busy") from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    # --- files ---------------------------------------------------------------------

    def files(self, space: str) -> dict[str, tuple[int, int, str]]:
        """``{path: (size, mtime_ns, sha256)}`` of the indexed documents of a space."""
        with self._lock:
            rows = self._conn.execute("SELECT path, size, mtime_ns, sha256 FROM doc_files WHERE space = ?",
                                      (space,)).fetchall()
        return {str(r[0]): (int(r[1]), int(r[2]), str(r[3])) for r in rows}

    def file_vectors(self, space: str, path: str) -> dict[tuple[tuple[str, ...], str], Any]:
        """``{(heading, text): vector}`` of a file's chunks as indexed: a changed file's
        unchanged chunks keep their vectors, so only what changed is embedded again."""
        import numpy as np

        with self._lock:
            rows = self._conn.execute(
                "SELECT heading, text, embedding FROM doc_chunks "
                "WHERE space = ? AND kind = 'document' AND path = ?", (space, path)).fetchall()
        return {(tuple(json.loads(h)), t): np.frombuffer(e, dtype="<f4") for h, t, e in rows}

    def touch_file(self, space: str, path: str, size: int, mtime_ns: int) -> None:
        """Record a new size and mtime for a file whose content did not change."""
        with self._write() as conn:
            conn.execute("UPDATE doc_files SET size = ?, mtime_ns = ? WHERE space = ? AND path = ?",
                         (size, mtime_ns, space, path))

    def replace_file(self, space: str, path: str, *, size: int, mtime_ns: int, sha256: str,
                     chunks: Sequence[tuple[tuple[str, ...], int, int, str]], vectors: Any) -> None:
        """Put a file's chunks (``(heading, start, end, text)``, text already masked) and
        their vectors (float32, one row each) in place of its old ones, in one transaction."""
        with self._write() as conn:
            self._drop(conn, space, "document", path)
            for (heading, start, end, text), vector in zip(chunks, vectors, strict=True):
                self._insert(conn, space, "document", path, None, None, heading, start, end, text, vector)
            conn.execute("INSERT INTO doc_files (space, path, size, mtime_ns, sha256) VALUES (?, ?, ?, ?, ?) "
                         "ON CONFLICT (space, path) DO UPDATE SET size = excluded.size, "
                         "mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256",
                         (space, path, size, mtime_ns, sha256))

    def remove_file(self, space: str, path: str) -> None:
        """Drop a file and its chunks (deleted from the repository, or forgotten)."""
        with self._write() as conn:
            self._drop(conn, space, "document", path)
            conn.execute("DELETE FROM doc_files WHERE space = ? AND path = ?", (space, path))

    @staticmethod
    def _drop(conn: sqlite3.Connection, space: str, kind: str, path: str) -> None:
        seqs = [r[0] for r in conn.execute(
            "SELECT seq FROM doc_chunks WHERE space = ? AND kind = ? AND path = ?", (space, kind, path))]
        for seq in seqs:
            conn.execute("DELETE FROM doc_fts WHERE rowid = ?", (seq,))
        conn.execute("DELETE FROM doc_chunks WHERE space = ? AND kind = ? AND path = ?", (space, kind, path))
        if seqs:
            DocumentIndex._bump(conn)

    @staticmethod
    def _bump(conn: sqlite3.Connection) -> None:
        """A chunk was written or removed: cached vectors are stale."""
        conn.execute("UPDATE doc_meta SET value = value + 1 WHERE key = 'chunks'")

    @staticmethod
    def _insert(conn: sqlite3.Connection, space: str, kind: str, path: str, sha: str | None, date: str | None,
                heading: tuple[str, ...], start: int | None, end: int | None, text: str, vector: Any) -> None:
        import numpy as np

        cur = conn.execute(
            "INSERT INTO doc_chunks (space, kind, path, sha, date, heading, start_line, end_line, text, "
            "embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (space, kind, path, sha, date, json.dumps(list(heading), ensure_ascii=False), start, end, text,
             np.asarray(vector, dtype="<f4").tobytes()))
        terms = index_text(" ".join((*heading, path, text)))
        conn.execute("INSERT INTO doc_fts (rowid, terms) VALUES (?, ?)", (cur.lastrowid, terms))
        DocumentIndex._bump(conn)

    # --- commits -------------------------------------------------------------------

    def add_commits(self, space: str, commits: Sequence[tuple[str, str, str]], vectors: Any,
                    last_commit: str | None) -> None:
        """Append commit messages (``(sha, date, text)``, text already masked; a sha already
        stored is skipped) and record the newest sha read (None: no commit)."""
        with self._write() as conn:
            stored = {r[0] for r in conn.execute(
                "SELECT sha FROM doc_chunks WHERE space = ? AND kind = 'commit'", (space,))}
            for (sha, date, text), vector in zip(commits, vectors, strict=True):
                if sha not in stored:
                    stored.add(sha)
                    self._insert(conn, space, "commit", "", sha, date, (), None, None, text, vector)
            conn.execute("INSERT INTO doc_state (space, last_commit) VALUES (?, ?) ON CONFLICT (space) "
                         "DO UPDATE SET last_commit = excluded.last_commit", (space, last_commit))

    def commit_shas(self, space: str) -> set[str]:
        """The ids of the space's stored commit messages."""
        with self._lock:
            return {r[0] for r in self._conn.execute(
                "SELECT sha FROM doc_chunks WHERE space = ? AND kind = 'commit'", (space,))}

    def drop_commits(self, space: str, shas: Sequence[str]) -> None:
        """Remove these commit messages (no longer in the history, after a rewrite)."""
        with self._write() as conn:
            for sha in shas:
                for (seq,) in conn.execute("SELECT seq FROM doc_chunks WHERE space = ? AND kind = 'commit' "
                                           "AND sha = ?", (space, sha)).fetchall():
                    conn.execute("DELETE FROM doc_fts WHERE rowid = ?", (seq,))
                    conn.execute("DELETE FROM doc_chunks WHERE seq = ?", (seq,))
                    self._bump(conn)

    # --- forget, state ---------------------------------------------------------------

    def forget_path(self, space: str, path: str) -> int:
        """Keep ``path`` (a gitignore-like pattern: a file, a folder, a glob) out of the space's
        index from now on, and drop what is indexed under it; returns the files dropped."""
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO doc_forgotten (space, path, at) VALUES (?, ?, ?)",
                         (space, path, _now()))
            paths = [r[0] for r in conn.execute("SELECT path FROM doc_files WHERE space = ?", (space,))
                     if glob_matches(r[0], [path])]
            for p in paths:
                self._drop(conn, space, "document", p)
                conn.execute("DELETE FROM doc_files WHERE space = ? AND path = ?", (space, p))
        return len(paths)

    def unforget_path(self, space: str, path: str) -> bool:
        """Let ``path`` back in (the next run indexes it again); False when it was not kept out."""
        with self._write() as conn:
            return conn.execute("DELETE FROM doc_forgotten WHERE space = ? AND path = ?",
                                (space, path)).rowcount > 0

    def forgotten_paths(self, space: str) -> list[str]:
        """The paths kept out of the space's index (a folder ends in ``/``)."""
        with self._lock:
            return [r[0] for r in self._conn.execute(
                "SELECT path FROM doc_forgotten WHERE space = ? ORDER BY path", (space,))]

    def set_state(self, space: str, *, root: str, skipped: Sequence[tuple[str, str]], web: str | None = None,
                  revision: str | None = None, include: Sequence[str] = (),
                  exclude: Sequence[str] = ()) -> None:
        """Record a finished run: the root, its time, what was skipped, the web address and
        commit links point at, and the globs it ran with (the next run's defaults)."""
        globs = json.dumps({"include": list(include), "exclude": list(exclude)})
        with self._write() as conn:
            conn.execute("INSERT INTO doc_state (space, root, refreshed_at, skipped, web, revision, globs) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?) "
                         "ON CONFLICT (space) DO UPDATE SET root = excluded.root, "
                         "refreshed_at = excluded.refreshed_at, skipped = excluded.skipped, "
                         "web = excluded.web, revision = excluded.revision, globs = excluded.globs",
                         (space, root, _now(), json.dumps([list(s) for s in skipped]), web, revision, globs))

    def links(self, space: str) -> tuple[str | None, str | None, str | None]:
        """``(root, web address, revision)`` the space's links are made from (one row read; no
        counts, unlike :meth:`state`)."""
        with self._lock:
            row = self._conn.execute("SELECT root, web, revision FROM doc_state WHERE space = ?",
                                     (space,)).fetchone()
        return (row[0], row[1], row[2]) if row else (None, None, None)

    def state(self, space: str) -> DocumentsState:
        """The space's counts and state."""
        with self._lock:
            conn = self._conn
            docs = conn.execute("SELECT count(*) FROM doc_files WHERE space = ?", (space,)).fetchone()[0]
            counts = dict(conn.execute(
                "SELECT kind, count(*) FROM doc_chunks WHERE space = ? GROUP BY kind", (space,)).fetchall())
            row = conn.execute("SELECT root, last_commit, refreshed_at, skipped, web, revision, globs "
                               "FROM doc_state WHERE space = ?", (space,)).fetchone()
        nothing = (None, None, None, "[]", None, None, "{}")
        root, last, at, skipped, web, revision, globs = row if row else nothing
        ran = json.loads(globs)
        return DocumentsState(documents=int(docs), chunks=int(counts.get("document", 0)),
                          commits=int(counts.get("commit", 0)), last_commit=last, refreshed_at=at, root=root,
                          skipped=tuple((str(p), str(r)) for p, r in json.loads(skipped)), web=web,
                          revision=revision, include=tuple(ran.get("include", ())),
                          exclude=tuple(ran.get("exclude", ())))

    # --- reads for search ----------------------------------------------------------------

    def vectors(self, space: str, kinds: Sequence[str]) -> tuple[list[int], Any]:
        """``(seqs, matrix)``: every chunk of these kinds in the space and its unit vector, read
        once and kept until the file changes."""
        import numpy as np

        key = (space, tuple(kinds))
        marks = ",".join("?" * len(kinds))
        with self._lock:
            version = self._conn.execute("SELECT value FROM doc_meta WHERE key = 'chunks'").fetchone()[0]
            kept = self._vectors.get(key)
            if kept is not None and kept[0] == version:
                return kept[1], kept[2]
            rows = self._conn.execute(
                f"SELECT seq, embedding FROM doc_chunks WHERE space = ? AND kind IN ({marks})",
                (space, *kinds)).fetchall()
            if not rows:
                return [], np.zeros((0, 0), dtype=np.float32)
            seqs = [int(r[0]) for r in rows]
            matrix = np.vstack([np.frombuffer(r[1], dtype="<f4") for r in rows])
            if len(self._vectors) >= 16:
                self._vectors.clear()
            self._vectors[key] = (version, seqs, matrix)
            return seqs, matrix

    def keyword(self, space: str, kinds: Sequence[str], match: str, *, limit: int) -> list[int]:
        """Chunks matching an FTS5 expression, best (bm25) first."""
        marks = ",".join("?" * len(kinds))
        with self._lock:
            return [int(r[0]) for r in self._conn.execute(
                "SELECT c.seq FROM doc_fts f JOIN doc_chunks c ON c.seq = f.rowid WHERE doc_fts MATCH ? "
                f"AND c.space = ? AND c.kind IN ({marks}) ORDER BY bm25(doc_fts) LIMIT ?",
                (match, space, *kinds, int(limit)))]

    def term_chunks(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """``({term: chunks holding it}, chunks in all)`` over the whole index (every space),
        for the encoded index terms given (FTS5's own counts, ``fts5vocab``)."""
        if not terms:
            return {}, 0
        marks = ",".join("?" * len(terms))
        with self._lock:
            counts = dict(self._conn.execute(f"SELECT term, doc FROM doc_vocab WHERE term IN ({marks})",
                                             tuple(terms)).fetchall())
            total = self._conn.execute("SELECT count(*) FROM doc_chunks").fetchone()[0]
        return {str(k): int(v) for k, v in counts.items()}, int(total)

    def chunks(self, seqs: Sequence[int]) -> dict[int, DocumentChunk]:
        """Chunks by seq."""
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, space, kind, path, sha, date, heading, start_line, end_line, text "
                f"FROM doc_chunks WHERE seq IN ({marks})", tuple(seqs)).fetchall()
        return {int(r[0]): DocumentChunk(int(r[0]), r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6])),
                                        r[7], r[8], r[9]) for r in rows}
