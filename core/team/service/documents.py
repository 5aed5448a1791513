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
    """``POST /api/documents/manifest``: which paths of a manifest part to upload and which to remove."""
    files = {f.path: f.sha256 for f in req.files}
    stale, extra = acting(request, p).documents.manifest(req.containerTag, files, after=req.after,
                                                         through=req.through)
    return 200, d.ManifestAnswer(stale=stale, extra=extra)


def upload(request: Request, p: Principal, req: d.UploadRequest) -> tuple[int, d.UploadAnswer]:
    """``POST /api/documents/upload``: one part of a run (file chunks, removed paths, commits, state)."""
    from bli_memory.core.team.postgres.documents import FilePart, RunState

    files = [FilePart(path=f.path, sha256=f.sha256, size=f.size, offset=f.offset, total=f.total,
                      chunks=[(tuple(c.heading), c.startLine, c.endLine, c.text) for c in f.chunks])
             for f in req.files]
    fin = req.finished
    finished = None if fin is None else RunState(
        root=fin.root, skipped=[(s.path, s.reason) for s in fin.skipped], web=fin.web, revision=fin.revision)
    report = acting(request, p).documents.upload(
        req.containerTag, files=files, removed=req.removed,
        commits=[(c.sha, c.date, c.text) for c in req.commits], last_commit=req.lastCommit, finished=finished)
    return 200, d.UploadAnswer(files=report.files, chunks=report.chunks, embedded=report.embedded,
                               removed=report.removed, commits=report.commits, forgotten=report.forgotten)


def forget(request: Request, p: Principal,
           req: d.DocumentForgetRequest) -> tuple[int, d.DocumentForgetAnswer]:
    """``POST /api/documents/forget``: keep a path out of the space's index and drop what it holds of it."""
    path = req.path.strip().removeprefix("./")
    dropped = acting(request, p).documents.forget(req.containerTag, path)
    return 200, d.DocumentForgetAnswer(containerTag=req.containerTag, path=path, dropped=dropped)
