"""The documents doors of the service: search, status, manifest, upload and forget.

A space's documents index on the service (:mod:`bli_memory.core.team.postgres.documents`) is
shared by everyone who may read the space (search, status) and refreshed by everyone who may
write it (manifest, upload, forget; a read-only share answers 403 ``read_only``). The service
never reads a repository: the client's ``documents index`` lists, chunks and masks the files
and uploads them (:mod:`bli_memory.core.team.client.documents`). Module-level handlers
(:data:`~bli_memory.core.team.service.door.Handler`), each acting as the person the request's
token proved (:func:`~bli_memory.core.team.service.door.acting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bli_memory.core.memory.document_wire import DocumentHitRecord, DocumentsStateRecord
from bli_memory.core.memory.documents import DOCUMENT_KINDS
from bli_memory.core.team.service import document_models as d
from bli_memory.core.team.service.door import acting

if TYPE_CHECKING:
    from starlette.requests import Request

    from bli_memory.core.team.postgres.access import Principal
    from bli_memory.core.team.service.models import SpaceRequest

__all__ = ["forget", "manifest", "search", "status", "upload"]


def search(request: Request, p: Principal,
           req: d.DocumentSearchRequest) -> tuple[int, d.DocumentSearchAnswer]:
    """``POST /api/documents/search``: the space's documents and commit messages matching ``q``."""
    hits = acting(request, p).search_documents(req.text, space=req.containerTag, limit=req.limit,
                                               kinds=tuple(req.kinds or DOCUMENT_KINDS))
    return 200, d.DocumentSearchAnswer(containerTag=req.containerTag,
                                       results=[DocumentHitRecord.of(h) for h in hits])


def status(request: Request, p: Principal, req: SpaceRequest) -> tuple[int, d.DocumentStatusAnswer]:
    """``POST /api/documents/status``: what the space's index holds, whose it is, and what a run needs."""
    docs = acting(request, p).documents
    plan = docs.plan(req.containerTag)
    state = docs.status(req.containerTag) if plan.exists else None
    return 200, d.DocumentStatusAnswer(
        containerTag=req.containerTag, state=DocumentsStateRecord.of(state) if state is not None else None,
        owner=plan.owner, writable=plan.writable, lastCommit=plan.last_commit, forgotten=list(plan.forgotten))


def manifest(request: Request, p: Principal, req: d.ManifestRequest) -> tuple[int, d.ManifestAnswer]:
    """``POST /api/documents/manifest``: which paths of a manifest part to upload and which to
    remove; or, for a part of a history (``commits``), which commits to upload and which to drop."""
    docs, space, after, through = acting(request, p).documents, req.containerTag, req.after, req.through
    if req.commits is not None:
        stale, extra = docs.commit_manifest(space, req.commits, after=after, through=through)
    else:
        files = {f.path: f.sha256 for f in req.files}
        stale, extra = docs.manifest(space, files, after=after, through=through)
    return 200, d.ManifestAnswer(stale=stale, extra=extra)


def upload(request: Request, p: Principal, req: d.UploadRequest) -> tuple[int, d.UploadAnswer]:
    """``POST /api/documents/upload``: one part of a run (file chunks, removed paths, commits, state)."""
    from bli_memory.core.team.postgres.document_writes import FilePart, RunState

    files = [FilePart(path=f.path, sha256=f.sha256, size=f.size, offset=f.offset, total=f.total,
                      chunks=[(tuple(c.heading), c.startLine, c.endLine, c.text) for c in f.chunks])
             for f in req.files]
    fin = req.finished
    finished = None if fin is None else RunState(
        root=fin.root, skipped=[(s.path, s.reason) for s in fin.skipped], web=fin.web, revision=fin.revision,
        last_commit=fin.lastCommit, include=fin.include, exclude=fin.exclude)
    report = acting(request, p).documents.upload(
        req.containerTag, files=files, removed=req.removed,
        commits=[(c.sha, c.date, c.text) for c in req.commits], removed_commits=req.removedCommits,
        last_commit=req.lastCommit, finished=finished)
    return 200, d.UploadAnswer(files=report.files, chunks=report.chunks, embedded=report.embedded,
                               removed=report.removed, commits=report.commits,
                               commitsRemoved=report.commits_removed, forgotten=report.forgotten,
                               secret=report.secret)


def forget(request: Request, p: Principal,
           req: d.DocumentForgetRequest) -> tuple[int, d.DocumentForgetAnswer]:
    """``POST /api/documents/forget``: keep a path out of the space's index and drop what it holds
    of it; with ``undo``, let it back in. A path outside the repository is refused (400)."""
    from bli_memory.core.documents.globs import forget_pattern
    from bli_memory.core.errors import InvalidInputError

    try:
        path = forget_pattern(req.path)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    docs = acting(request, p).documents
    if req.undo:
        undone = docs.unforget(req.containerTag, path)
        return 200, d.DocumentForgetAnswer(containerTag=req.containerTag, path=path, dropped=0, undone=undone)
    dropped = docs.forget(req.containerTag, path)
    return 200, d.DocumentForgetAnswer(containerTag=req.containerTag, path=path, dropped=dropped)
