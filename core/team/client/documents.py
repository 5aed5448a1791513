"""The documents index through the team service: search and status, and a client's index run.

The service keeps one documents index per space, shared by everyone who may read the space
(:mod:`bli_memory.core.team.postgres.documents`), but it never reads a repository. So
``documents index`` on a paired machine (:meth:`RemoteDocuments.index`) does the repository's
side here, with the embedded index's own steps (:mod:`bli_memory.core.documents.prepare`:
the same files left out, a secret file never read, no link followed, a path holding a secret
never sent and every listed path masked, each document masked whole before it is cut, each
commit message masked whole and capped), and uploads:

1. ``POST /api/documents/status``: whether this person may change the space's index, its
   forgotten paths, the last commit it read and the last run's globs (a run given none takes
   them);
2. the tracked documents are listed and hashed, and the manifest (each path and its SHA-256) is
   compared with the index in parts of at most :data:`MANIFEST_PART_FILES` paths
   (``POST /api/documents/manifest``), which answer the paths to upload and to remove;
3. the commits since the index's last commit are read; when that commit is no longer in the
   history (an amend, a rebase, a branch switch), the whole history is read again and its ids
   are compared with the index's the same way, in parts of commit ids, which answer the
   commits the index lacks and the ones the history no longer has;
4. ``POST /api/documents/upload`` in parts of at most :data:`UPLOAD_PART_CHUNKS` chunks and
   :data:`UPLOAD_PART_BYTES` of text (a large file spans parts): the paths and commits to
   remove first, then the stale files' chunks (text only: the service embeds them with its
   own model, as it embeds memories), the new commit messages (oldest first), and, in the
   last part, the run's state (with the newest commit read and the run's globs). A run with
   nothing changed sends that last part only.

Every part is idempotent on the service, so a run cut short is finished by running it again.
:class:`DocumentCalls` gives :class:`~bli_memory.core.team.client.remote.RemoteBackend` the
contract's ``search_documents`` and ``document_status`` over these doors (a service from
before them answers no documents).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import NotFoundError
from bli_memory.core.memory.documents import DOCUMENT_KINDS, DocumentHit, DocumentsState
from bli_memory.core.team.client.service_client import BULK_TIMEOUT_S, parsed

if TYPE_CHECKING:
    from bli_memory.core.documents.indexer import IndexReport

__all__ = [
    "MANIFEST_PART_FILES",
    "SKIPPED_SENT",
    "UPLOAD_PART_BYTES",
    "UPLOAD_PART_CHUNKS",
    "DocumentCalls",
    "RemoteDocuments",
    "ServiceIndex",
]

#: Most paths in one manifest part (the service takes 2,000).
MANIFEST_PART_FILES = 1000
#: Most chunks (and commit messages) in one upload part (the service takes 256 of each).
UPLOAD_PART_CHUNKS = 128
#: Most bytes of text in one upload part (the service takes bodies of 4 MB).
UPLOAD_PART_BYTES = 1024 * 1024
#: Most left-out files a run records on the service (the first, in path order).
SKIPPED_SENT = 5000

Call = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class ServiceIndex:
    """The index this person uses for a space on the service: what it holds (None: none yet),
    whose it is, whether they may change it, its last commit read and forgotten paths."""

    state: DocumentsState | None
    owner: str
    writable: bool
    last_commit: str | None
    forgotten: tuple[str, ...]


class RemoteDocuments:
    """The documents doors of one service, for one person (their device token).

    Args:
        call: ``(method, path, body, timeout=...) -> answer`` of the service client.
    """

    def __init__(self, call: Call) -> None:
        self._call = call

    def plan(self, space: str) -> ServiceIndex:
        """The space's index as this person uses it (``POST /api/documents/status``).

        Raises:
            ServiceError: the service failed or answered an unexpected body.
            NotFoundError: a service without documents doors (404).
        """
        from bli_memory.core.memory.document_wire import DocumentsStateRecord

        data = self._call("POST", "/api/documents/status", {"containerTag": space})

        def read(d: dict[str, Any]) -> ServiceIndex:
            state = None if d["state"] is None else DocumentsStateRecord.model_validate(d["state"]).state()
            return ServiceIndex(state=state, owner=str(d["owner"]), writable=bool(d["writable"]),
                                last_commit=d.get("lastCommit"),
                                forgotten=tuple(str(p) for p in d["forgotten"]))

        return parsed(read, data)

    def search(self, query: str, *, space: str, limit: int = 5,
               kinds: Sequence[str] = DOCUMENT_KINDS) -> list[DocumentHit]:
        """Matches of ``query`` in the space's index, best first (``POST /api/documents/search``);
        ``limit`` is clamped to 1..50."""
        from bli_memory.core.memory.document_wire import DocumentHitRecord

        body = {"q": query, "containerTag": space, "limit": max(1, min(int(limit), 50)), "kinds": list(kinds)}
        data = self._call("POST", "/api/documents/search", body)
        return parsed(lambda d: [DocumentHitRecord.model_validate(h).hit(space) for h in d["results"]], data)

    def forget(self, space: str, path: str) -> int:
        """Keep ``path`` (a ``.gitignore`` line: a file, a folder, a glob) out of the space's
        index from now on (``POST /api/documents/forget``); returns the files it dropped.

        Raises:
            InvalidInputError: a path outside the repository.
            NotFoundError: reason ``read_only`` (the index is shared with this person read-only).
        """
        data = self._call("POST", "/api/documents/forget", {"containerTag": space, "path": path})
        return parsed(lambda d: int(d["dropped"]), data)

    def unforget(self, space: str, path: str) -> bool:
        """Let ``path`` back into the space's index (the next run uploads it); False when it was
        not kept out (``POST /api/documents/forget`` with ``undo``).

        Raises:
            NotFoundError: reason ``read_only``.
        """
        body = {"containerTag": space, "path": path, "undo": True}
        data = self._call("POST", "/api/documents/forget", body)
        return parsed(lambda d: bool(d["undone"]), data)

    # --- an index run ------------------------------------------------------------------

    def index(self, root: Path, *, space: str, include: Sequence[str] | None = None,
              exclude: Sequence[str] | None = None,
              progress: Callable[[str, int, int], None] | None = None) -> IndexReport:
        """Bring the space's index on the service up to date with the repository at ``root``
        (the module's steps).

        Args:
            root: A folder in a git work tree.
            include: Globs of the files that are documents (empty: the embedded index's
                defaults).
            exclude: Globs never indexed. With neither ``include`` nor ``exclude`` (both None),
                the index's last run's globs.
            progress: Called as ``(stage, done, total)``: ``documents`` (read and hashed),
                ``upload`` (parts sent).

        Returns:
            :class:`~bli_memory.core.documents.indexer.IndexReport`: ``indexed`` counts the
            files uploaded, ``unchanged`` the ones the service already held.

        Raises:
            ValueError: ``root`` is not in a git work tree.
            NotFoundError: reason ``read_only`` (the index is shared with this person read-only).
            ServiceError: the service failed; running again finishes the run.
        """
        from bli_memory.core.documents.commits import head_commit, web_address
        from bli_memory.core.documents.indexer import IndexReport
        from bli_memory.core.documents.prepare import (
            commit_rows,
            list_sources,
            read_history,
            read_source,
            skip_counts,
        )
        from bli_memory.core.documents.sources import DEFAULT_INCLUDE

        plan = self.plan(space)
        if not plan.writable:
            raise NotFoundError(f"the documents index of space {space} is {plan.owner}'s, shared with you "
                                "read-only: `documents search` reads it; only its writers refresh it",
                                reason="read_only")
        if include is None and exclude is None and plan.state is not None:  # the last run's globs
            include, exclude = plan.state.include, plan.state.exclude
        include = () if tuple(include or ()) == DEFAULT_INCLUDE else tuple(include or ())
        exclude = tuple(exclude or ())
        docs, skipped = list_sources(root, include=include or DEFAULT_INCLUDE, exclude=exclude,
                                     forgotten=plan.forgotten)
        report = IndexReport(documents=len(docs), skipped=skip_counts(skipped))
        manifest: dict[str, str] = {}
        for n, doc in enumerate(docs, 1):
            if progress is not None:
                progress("documents", n, len(docs))
            read = read_source(root, doc)
            if read is not None:
                manifest[doc.path] = read[1]
        stale, extra = self._compare(space, manifest, lambda part: {
            "files": [{"path": p, "sha256": manifest[p]} for p in part]})
        report.unchanged = len(manifest) - len(stale)
        commits, again = read_history(root, plan.last_commit)
        newest = commits[0].sha if commits else (None if again else plan.last_commit)
        gone: list[str] = []
        if again and plan.state is not None and plan.state.commits:  # rewritten: keep one copy of each
            missing, gone = self._compare(space, {c.sha: "" for c in commits}, lambda part: {"commits": part})
            lacking = set(missing)
            commits = [c for c in commits if c.sha in lacking]
        finished = {"root": str(root), "web": web_address(root), "revision": head_commit(root),
                    "skipped": [{"path": s.path, "reason": s.reason} for s in skipped][:SKIPPED_SENT],
                    "lastCommit": newest, "include": list(include), "exclude": list(exclude)}
        report.dropped_commits = len(gone)
        bodies = list(_parts(root, space, stale, (extra, gone), commit_rows(commits), finished, read_source))
        for n, body in enumerate(bodies, 1):
            data = self._call("POST", "/api/documents/upload", body, timeout=BULK_TIMEOUT_S)
            got = parsed(lambda d: (int(d["files"]), int(d["chunks"]), int(d["removed"]),
                                    int(d["commits"])), data)
            report.indexed += got[0]
            report.chunks += got[1]
            report.removed += got[2]
            report.commits += got[3]
            if progress is not None:
                progress("upload", n, len(bodies))
        return report

    def _compare(self, space: str, manifest: Mapping[str, str],
                 listed: Callable[[list[str]], dict[str, Any]]) -> tuple[list[str], list[str]]:
        """``(stale, extra)`` of a whole manifest (``{path: sha256}``, or commit ids), asked for
        in parts that cover every key once; ``listed(part)`` is a part's list in the body."""
        keys = sorted(manifest)
        parts = [keys[i:i + MANIFEST_PART_FILES] for i in range(0, len(keys), MANIFEST_PART_FILES)] or [[]]
        stale: list[str] = []
        extra: list[str] = []
        after: str | None = None
        for k, part in enumerate(parts):
            through = None if k == len(parts) - 1 else part[-1]
            body = {"containerTag": space, **listed(part), "after": after, "through": through}
            data = self._call("POST", "/api/documents/manifest", body, timeout=BULK_TIMEOUT_S)
            got = parsed(lambda d: ([str(p) for p in d["stale"]], [str(p) for p in d["extra"]]), data)
            stale += [p for p in got[0] if p in manifest]
            extra += got[1]
            after = part[-1] if part else None
        return stale, extra


def _parts(root: Path, space: str, stale: Sequence[str], removed: tuple[Sequence[str], Sequence[str]],
           commits: Sequence[tuple[str, str, str]], finished: dict[str, Any],
           read: Callable[..., Any]) -> Iterator[dict[str, Any]]:
    """The upload bodies of a run, each within :data:`UPLOAD_PART_CHUNKS` chunks (or commit
    messages) and :data:`UPLOAD_PART_BYTES` of chunks; the last carries ``finished``. The
    ``removed`` paths and commit ids come first, so a run cut short after its first commit
    part has dropped what the history lost. A stale file is read again and cut when its part
    is made, so a run holds one file's text at a time; a file with more chunks than a part
    holds spans parts (``offset``, ``total``)."""
    from bli_memory.core.documents.prepare import document_pieces
    from bli_memory.core.documents.sources import SourceFile

    def fresh() -> dict[str, Any]:
        return {"containerTag": space, "files": [], "removed": [], "commits": []}

    body, size, count = fresh(), 0, 0
    for key, keys in zip(("removed", "removedCommits"), removed, strict=True):
        for i in range(0, len(keys), MANIFEST_PART_FILES):
            if body.get(key):
                yield body
                body = fresh()
            body[key] = list(keys[i:i + MANIFEST_PART_FILES])
    for path in stale:
        got = read(root, SourceFile(path, 0, 0))
        if got is None:
            continue  # gone since it was hashed: the next run removes it
        raw, sha = got
        pieces = [{"heading": list(h), "startLine": s, "endLine": e, "text": t}
                  for h, s, e, t in document_pieces(path, raw)]
        offset = 0
        while True:
            if count >= UPLOAD_PART_CHUNKS:
                yield body
                body, size, count = fresh(), 0, 0
            take: list[dict[str, Any]] = []
            for piece in pieces[offset:offset + UPLOAD_PART_CHUNKS - count]:
                n = len(json.dumps(piece, ensure_ascii=False).encode("utf-8"))
                if size and size + n > UPLOAD_PART_BYTES:
                    break
                take.append(piece)
                size += n
            if not take and offset < len(pieces):  # this part is full
                yield body
                body, size, count = fresh(), 0, 0
                continue
            body["files"].append({"path": path, "sha256": sha, "size": len(raw), "offset": offset,
                                  "total": len(pieces), "chunks": take})
            count += max(len(take), 1)  # an empty file still takes a place
            offset += len(take)
            if offset >= len(pieces):
                break
    for i in range(0, len(commits), UPLOAD_PART_CHUNKS):
        if body["files"] or body["commits"]:
            yield body
            body = fresh()
        group = commits[i:i + UPLOAD_PART_CHUNKS]
        body["commits"] = [{"sha": sha, "date": date, "text": text} for sha, date, text in group]
        body["lastCommit"] = group[-1][0]
    body["finished"] = finished
    yield body


class DocumentCalls:
    """The documents half of the contract over the service's doors (a base of
    :class:`~bli_memory.core.team.client.remote.RemoteBackend`): ``search_documents`` and
    ``document_status``, and :attr:`documents` for the rest. A service from before the
    documents doors answers 404: then no documents, and this client asks no more."""

    _call: Call
    #: False once the service answered 404 for a documents door.
    _documents_doors = True

    @property
    def documents(self) -> RemoteDocuments:
        """The documents doors of this backend's service, as its person."""
        return RemoteDocuments(self._call)

    def search_documents(self, query: str, *, space: str, limit: int = 5,
                         kinds: Sequence[str] = DOCUMENT_KINDS) -> list[DocumentHit]:
        """The space's documents and commit messages matching ``query`` on the service
        (``POST /api/documents/search``); ``[]`` from a service without the door."""
        if not self._documents_doors:
            return []
        try:
            return self.documents.search(query, space=space, limit=limit, kinds=kinds)
        except NotFoundError:
            self._documents_doors = False
            return []

    def document_status(self, space: str) -> DocumentsState | None:
        """What the space's documents index on the service holds (``POST /api/documents/status``),
        or None (none yet, or a service without the door)."""
        if not self._documents_doors:
            return None
        try:
            return self.documents.plan(space).state
        except NotFoundError:
            self._documents_doors = False
            return None

    def refresh_documents(self, space: str, folder: str | None = None) -> bool:
        """A session start starts no upload run: False. The service's index is refreshed by
        ``documents index`` on a writer's machine (the shared index's recorded folder is the
        last writer's, on their machine)."""
        return False
