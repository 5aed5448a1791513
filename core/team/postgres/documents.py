"""The team store's documents index: a space's documents and commit messages, shared by the team.

The service never reads a repository: a client lists, reads, chunks and masks the documents
(:mod:`bli_memory.core.documents.prepare`, as the embedded index does), and
:class:`PostgresDocuments` keeps what it uploads (schema: revision 0005) and searches it.

**One index per space, shared.** A space is an owner and a tag; its index (a
``memory_doc_indexes`` row) belongs to the space, not to whoever uploaded its rows. The
index a person uses for a tag (:meth:`PostgresDocuments.plan`) is the first that exists of:
one of a space they may write (their own first, then spaces shared with them for writing,
by owner), else one of a space shared with them read-only; with none, their own, created by
their first upload. So a team whose members share the space for writing keeps one index
that every member's ``documents index`` refreshes and every member's agents search; a
read-only share searches the owner's index and is refused a change (``read_only``); a
person without a share sees no index but their own. A search reads that one index, never
several: two indexes of a tag would be copies of one repository, and their hits would
repeat.

**Uploads are idempotent and bounded.** The client compares its manifest (path and
SHA-256 of each document) with the index (:meth:`~PostgresDocuments.manifest`), then
uploads the stale files' chunks in parts (:meth:`~PostgresDocuments.upload`). A chunk row
carries the file version it belongs to (``file_sha256``) and its place in it
(``ordinal``): a part sent twice writes nothing twice, and a file changes at once when its
last part arrives (its old version's chunks are dropped then, and the file's new hash
recorded). Until then a search reads the old version: a chunk counts only when its
version is the file's recorded one. Commit messages are kept once per sha; after a history
rewrite the client compares the history's shas with the index's
(:meth:`~PostgresDocuments.commit_manifest`) and the run drops the ones the history no longer
has, so an amended commit leaves one message. The service masks every text again, as its
save does (a file part whose path holds a secret is left out, and the paths of the files
left out are masked), and embeds it with its own model; a chunk whose heading and text the
file already had keeps its vector.

Search (:meth:`~PostgresDocuments.search`,
:func:`~bli_memory.core.team.postgres.document_search.search_index`) is the memories'
channels over these rows, fused by :func:`bli_memory.core.documents.search.fused_hits`, the
embedded index's own fusion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.memory.documents import DOCUMENT_KINDS, DocumentHit, DocumentsState
from bli_memory.core.team.postgres.base import PgCore, SpaceView, iso_utc, tsvector_text
from bli_memory.core.team.postgres.document_search import CURRENT, search_index
from bli_memory.core.team.postgres.document_writes import (
    FilePart,
    RunState,
    clean,
    embed_texts,
    finish,
    write_part,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["FilePart", "IndexPlan", "PostgresDocuments", "RunState", "UploadReport"]


@dataclass(frozen=True)
class IndexPlan:
    """The index a person uses for a tag: whose it is (``owner``), whether they may change it,
    its last commit read and its forgotten paths (``exists`` False: none yet; their first
    upload creates their own)."""

    owner: str
    writable: bool
    exists: bool
    last_commit: str | None = None
    forgotten: tuple[str, ...] = ()


@dataclass
class UploadReport:
    """What one upload wrote: files completed, chunks written (``embedded`` of them run through
    the model), files removed, commits added and dropped, and parts left out because their
    path is forgotten or holds a secret."""

    files: int = 0
    chunks: int = 0
    embedded: int = 0
    removed: int = 0
    commits: int = 0
    commits_removed: int = 0
    forgotten: int = 0
    secret: int = 0
    paths: list[str] = field(default_factory=list)


class PostgresDocuments:
    """A person's documents index of a tag: a part of
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (``backend.documents``).

    Args:
        pg: The person's handle (its pool, view, transactions and model).
    """

    def __init__(self, pg: PgCore) -> None:
        self._pg = pg

    # --- which index ---------------------------------------------------------------------

    def _target(self, conn: psycopg.Connection[Any], view: SpaceView) -> tuple[int | None, int, bool]:
        """``(index id or None, owner id, writable)`` of the index this person uses (module docstring)."""
        rows = conn.execute(
            "SELECT id, owner_id, space FROM memory_doc_indexes WHERE space = ANY(%s) AND owner_id = ANY(%s)",
            (list(view.spaces), list(view.readers))).fetchall()

        def order(r: Any) -> tuple[bool, int, bool]:
            return (r[1] not in view.writers, view.readers.index(r[1]), r[2] != view.canonical)

        if not rows:
            return None, self._pg._me(), True
        best = min(rows, key=order)
        return int(best[0]), int(best[1]), best[1] in view.writers

    def _writable(self, conn: psycopg.Connection[Any], space: str, *, create: bool) -> int | None:
        """The id of the index this person changes (created when ``create`` and there is none).

        Raises:
            NotFoundError: reason ``read_only``: the index is shared with them read-only.
        """
        view = self._pg._view(conn, space)
        index_id, owner, writable = self._target(conn, view)
        if not writable:
            name = conn.execute("SELECT name FROM memory_people WHERE id = %s", (owner,)).fetchone()
            whose = f"{name[0]}'s" if name else "another person's"
            raise NotFoundError(f"the documents index of space {view.canonical} is {whose}, shared with you "
                                "read-only", reason="read_only")
        if index_id is None and create:
            row = conn.execute(
                "INSERT INTO memory_doc_indexes (space, owner_id) VALUES (%s, %s) ON CONFLICT (space, "
                "owner_id) DO UPDATE SET space = excluded.space RETURNING id",
                (view.canonical, owner)).fetchone()
            index_id = int(row[0]) if row else None
        return index_id

    def plan(self, space: str) -> IndexPlan:
        """The index this person uses for ``space``, whether they may change it, its last commit
        read and forgotten paths (what a client needs before it lists the repository)."""
        with self._pg._conn("read a documents index") as conn:
            index_id, owner, writable = self._target(conn, self._pg._view(conn, space))
            name = conn.execute("SELECT name FROM memory_people WHERE id = %s", (owner,)).fetchone()
            if index_id is None:
                return IndexPlan(owner=name[0] if name else "", writable=writable, exists=False)
            last = conn.execute("SELECT last_commit FROM memory_doc_indexes WHERE id = %s",
                                (index_id,)).fetchone()
            forgotten = _forgotten(conn, index_id)
        return IndexPlan(owner=name[0] if name else "", writable=writable, exists=True,
                         last_commit=last[0] if last else None, forgotten=tuple(forgotten))

    # --- reads ---------------------------------------------------------------------------

    def status(self, space: str) -> DocumentsState | None:
        """What the index this person reads for ``space`` holds, or None when there is none."""
        with self._pg._conn("read a documents index") as conn:
            index_id, _, _ = self._target(conn, self._pg._view(conn, space))
            if index_id is None:
                return None
            row = conn.execute(
                "SELECT root, last_commit, refreshed_at, skipped, web, revision, globs, "
                "(SELECT count(*) FROM memory_doc_files WHERE index_id = i.id) FROM memory_doc_indexes i "
                "WHERE id = %s", (index_id,)).fetchone()
            counts = dict(conn.execute(
                f"SELECT c.kind, count(*) FROM memory_doc_chunks c WHERE c.index_id = %s AND {CURRENT} "
                "GROUP BY c.kind", (index_id,)).fetchall())
        if row is None:
            return None
        root, last, at, skipped, web, revision, globs, files = row
        return DocumentsState(documents=int(files), chunks=int(counts.get("document", 0)),
                              commits=int(counts.get("commit", 0)), last_commit=last,
                              refreshed_at=iso_utc(at), root=root,
                              skipped=tuple((str(p), str(r)) for p, r in (skipped or [])), web=web,
                              revision=revision, include=tuple((globs or {}).get("include", ())),
                              exclude=tuple((globs or {}).get("exclude", ())))

    def search(self, query: str, *, space: str, limit: int = 5,
               kinds: Sequence[str] = DOCUMENT_KINDS) -> list[DocumentHit]:
        """The best ``limit`` chunks of ``kinds`` for ``query`` in the index this person reads,
        best first, each linked to its file and lines (or commit) on the repository's web host.

        An empty query, or no index, gives no hits (the model is not run).
        """
        from bli_memory.core.memory.retrieval import query_text

        q = query_text(query)
        kinds = [k for k in dict.fromkeys(kinds) if k in DOCUMENT_KINDS]
        if not q or limit < 1 or not kinds:
            return []
        with self._pg._conn("search documents") as conn:
            index_id, _, _ = self._target(conn, self._pg._view(conn, space))
            if index_id is None:
                return []
            return search_index(self._pg, conn, index_id, q, space=space, limit=limit, kinds=kinds)

    # --- a client's run: manifest, upload ------------------------------------------------

    def manifest(self, space: str, files: Mapping[str, str], *, after: str | None = None,
                 through: str | None = None) -> tuple[list[str], list[str]]:
        """Compare one part of a client's manifest with the index it would change.

        Args:
            files: ``{path: sha256}`` of the client's documents from ``after`` (exclusive,
                None: the first) through ``through`` (inclusive, None: the last), in
                code-point order: the parts of one manifest cover every path once.

        Returns:
            ``(stale, extra)``: the paths of ``files`` the index lacks or holds another
            version of (forgotten paths left out), and the paths the index holds in the
            part's range that ``files`` does not list (to remove).

        Raises:
            NotFoundError: reason ``read_only`` (the index is shared with this person read-only).
        """
        from bli_memory.core.documents.sources import glob_matches

        with self._pg._conn("compare a documents manifest") as conn:
            index_id = self._writable(conn, space, create=False)
            if index_id is None:
                return sorted(files), []
            # Code-point order (COLLATE "C" compares UTF-8 bytes), as the client sorts its paths.
            held = dict(conn.execute(
                "SELECT path, sha256 FROM memory_doc_files WHERE index_id = %(i)s AND (%(a)s::text IS NULL "
                'OR path COLLATE "C" > %(a)s) AND (%(t)s::text IS NULL OR path COLLATE "C" <= %(t)s)',
                {"i": index_id, "a": after, "t": through}).fetchall())
            forgotten = _forgotten(conn, index_id)
        stale = sorted(p for p, sha in files.items() if held.get(p) != sha and not glob_matches(p, forgotten))
        return stale, sorted(set(held) - set(files))

    def commit_manifest(self, space: str, shas: Sequence[str], *, after: str | None = None,
                        through: str | None = None) -> tuple[list[str], list[str]]:
        """Compare one part of a history (commit ids from ``after``, exclusive, through
        ``through``, inclusive, in id order; None: the first, the last) with the commit
        messages the index holds: a client asks after a history rewrite.

        Returns:
            ``(stale, extra)``: the ids the index lacks (upload them), and the ids it holds in
            the part's range that the history no longer has (remove them).

        Raises:
            NotFoundError: reason ``read_only``.
        """
        with self._pg._conn("compare a history") as conn:
            index_id = self._writable(conn, space, create=False)
            held = {r[0] for r in conn.execute(
                "SELECT sha FROM memory_doc_chunks WHERE index_id = %(i)s AND kind = 'commit' "
                'AND (%(a)s::text IS NULL OR sha COLLATE "C" > %(a)s) '
                'AND (%(t)s::text IS NULL OR sha COLLATE "C" <= %(t)s)',
                {"i": index_id, "a": after, "t": through})} if index_id is not None else set()
        return sorted(set(shas) - held), sorted(held - set(shas))

    def upload(self, space: str, *, files: Sequence[FilePart] = (), removed: Sequence[str] = (),
               commits: Sequence[tuple[str, str, str]] = (), removed_commits: Sequence[str] = (),
               last_commit: str | None = None, finished: RunState | None = None) -> UploadReport:
        """Apply one part of a client's run to the index this person changes (created if none),
        in one transaction.

        Args:
            files: Chunks of files (:class:`FilePart`); a part whose path is forgotten, or holds
                a secret, is left out.
            removed: Paths to drop with their chunks (no longer documents of the repository).
            commits: ``(sha, date, text)`` commit messages; one already kept is left alone.
            removed_commits: Ids of commit messages to drop (no longer in the history).
            last_commit: The newest commit read so far (where the next run starts).
            finished: The run's state, recorded with the time (its last part); its paths are
                masked.

        Returns:
            :class:`UploadReport`.

        Raises:
            NotFoundError: reason ``read_only``.
            InvalidInputError: a part that completes a file whose other chunks never arrived
                (nothing is written).
            StoreError: the database failed.
        """
        from bli_memory.core.documents.prepare import embedding_text
        from bli_memory.core.documents.sources import glob_matches, masked_paths

        report = UploadReport()
        with self._pg._tx("open a documents index") as conn:
            index_id = self._writable(conn, space, create=True)
            forgotten = _forgotten(conn, index_id)
        kept = [f for f in files if not glob_matches(f.path, forgotten)]
        report.forgotten = len(files) - len(kept)
        secret = masked_paths([f.path for f in kept])
        kept = [f for f in kept if f.path not in secret]  # a client that masks no path: never stored
        report.secret = len(secret)
        parts = [(f, [(tuple(clean(h) for h in heading), s, e, clean(t)) for heading, s, e, t in f.chunks])
                 for f in kept]
        rows = [(clean(t) if t else "", sha, date) for sha, date, t in commits]
        with self._pg._conn("read a documents index") as conn:
            texts = [t for _, pieces in parts for _, _, _, t in pieces]
            reuse: dict[tuple[str, tuple[str, ...], str], str] = {}
            if texts:
                for path, heading, text, vector in conn.execute(
                        "SELECT path, heading, text, embedding::text FROM memory_doc_chunks "
                        "WHERE index_id = %s AND kind = 'document' AND path = ANY(%s) AND text = ANY(%s)",
                        (index_id, [f.path for f, _ in parts], texts)):
                    reuse[(path, tuple(heading or ()), text)] = vector
            have = {r[0] for r in conn.execute(
                "SELECT sha FROM memory_doc_chunks WHERE index_id = %s AND kind = 'commit' AND sha = ANY(%s)",
                (index_id, [sha for _, sha, _ in rows]))} if rows else set()
        rows = [r for r in rows if r[1] not in have]
        wanted = list(dict.fromkeys(
            (f.path, p[0], p[3]) for f, pieces in parts for p in pieces if (f.path, p[0], p[3]) not in reuse))
        made = embed_texts(self._pg, [embedding_text(h, t) for _, h, t in wanted] + [t for t, _, _ in rows])
        reuse.update(zip(wanted, made, strict=False))
        commit_vectors = made[len(wanted):]
        report.embedded = len(made)
        with self._pg._tx("write a documents index", bulk=True) as conn:
            _lock(conn, index_id)
            for f, pieces in parts:
                write_part(conn, index_id, f, pieces, reuse, self._pg.model_name)
                report.chunks += len(pieces)
                if f.offset + len(pieces) >= f.total:
                    report.files += 1
                    report.paths.append(f.path)
            if removed:
                conn.execute("DELETE FROM memory_doc_chunks WHERE index_id = %s AND kind = 'document' "
                             "AND path = ANY(%s)", (index_id, list(removed)))
                cur = conn.execute("DELETE FROM memory_doc_files WHERE index_id = %s AND path = ANY(%s)",
                                   (index_id, list(removed)))
                report.removed = int(cur.rowcount)
            if removed_commits:
                cur = conn.execute("DELETE FROM memory_doc_chunks WHERE index_id = %s AND kind = 'commit' "
                                   "AND sha = ANY(%s)", (index_id, list(removed_commits)))
                report.commits_removed = int(cur.rowcount)
            for (text, sha, date), vector in zip(rows, commit_vectors, strict=True):
                cur = conn.execute(
                    "INSERT INTO memory_doc_chunks (index_id, kind, sha, date, text, terms, embedding, "
                    "embedding_model) VALUES (%s, 'commit', %s, %s, %s, %s::tsvector, %s::vector, %s) "
                    "ON CONFLICT (index_id, sha) WHERE kind = 'commit' DO NOTHING",
                    (index_id, sha, date, text, tsvector_text(text), vector, self._pg.model_name))
                report.commits += int(cur.rowcount)
            if last_commit is not None:
                conn.execute("UPDATE memory_doc_indexes SET last_commit = %s WHERE id = %s",
                             (last_commit, index_id))
            if finished is not None:
                finish(conn, index_id, finished, self._pg._me())
        return report

    # --- forget --------------------------------------------------------------------------

    def forget(self, space: str, path: str) -> int:
        """Keep ``path`` (a file, a folder ending in ``/``, or a glob) out of the index this
        person changes from now on, and drop what it holds of it; returns the files dropped.

        Raises:
            InvalidInputError: an empty path, or one outside the repository (absolute, ``..``).
            NotFoundError: reason ``read_only``.
        """
        from bli_memory.core.documents.sources import glob_matches

        path = _pattern(path)
        with self._pg._tx("forget a document") as conn:
            index_id = self._writable(conn, space, create=True)
            _lock(conn, index_id)
            conn.execute("INSERT INTO memory_doc_forgotten (index_id, path) VALUES (%s, %s) "
                         "ON CONFLICT (index_id, path) DO UPDATE SET at = now()", (index_id, path))
            paths = [r[0] for r in conn.execute("SELECT path FROM memory_doc_files WHERE index_id = %s",
                                                (index_id,)) if glob_matches(r[0], [path])]
            if paths:
                conn.execute("DELETE FROM memory_doc_chunks WHERE index_id = %s AND kind = 'document' "
                             "AND path = ANY(%s)", (index_id, paths))
                conn.execute("DELETE FROM memory_doc_files WHERE index_id = %s AND path = ANY(%s)",
                             (index_id, paths))
        return len(paths)

    def unforget(self, space: str, path: str) -> bool:
        """Let ``path`` back into the index this person changes (the next run uploads it);
        False when it was not kept out.

        Raises:
            InvalidInputError: as :meth:`forget`.
            NotFoundError: reason ``read_only``.
        """
        path = _pattern(path)
        with self._pg._tx("let a document back in") as conn:
            index_id = self._writable(conn, space, create=False)
            return index_id is not None and conn.execute(
                "DELETE FROM memory_doc_forgotten WHERE index_id = %s AND path = %s",
                (index_id, path)).rowcount > 0


def _pattern(raw: str) -> str:
    """A forget path as kept (:func:`~bli_memory.core.documents.globs.forget_pattern`).

    Raises:
        InvalidInputError: empty, absolute, or leading out of the repository.
    """
    from bli_memory.core.documents.globs import forget_pattern

    try:
        return clean(forget_pattern(raw or ""))  # shown to every reader: never a secret
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None


def _forgotten(conn: psycopg.Connection[Any], index_id: int | None) -> list[str]:
    """The paths kept out of an index (``documents forget``)."""
    return [r[0] for r in conn.execute(
        "SELECT path FROM memory_doc_forgotten WHERE index_id = %s ORDER BY path", (index_id,))]


def _lock(conn: psycopg.Connection[Any], index_id: int | None) -> None:
    """Serialise the writes to one index (a transaction-scoped advisory lock)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"documents\x1f{index_id}",))
