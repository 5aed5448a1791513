"""The memory doors of the service: search, save, update, forget, profile, history, purge,
info, terms, list and get.

Module-level handlers (:data:`~bli_memory.core.team.service.door.Handler`) that
:func:`~bli_memory.core.team.service.door.door` serves; each acts as the person the
request's token proved (:func:`~bli_memory.core.team.service.door.acting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bli_memory.core.memory.records import check_key_lengths
from bli_memory.core.memory.redaction import redact
from bli_memory.core.memory.retrieval_writes import check_extract_size
from bli_memory.core.memory.wire import MemoryRecord, ProfileRecord, RecallRecord, SearchRecord
from bli_memory.core.team.service import models as m
from bli_memory.core.team.service.door import acting, service_state

if TYPE_CHECKING:
    from starlette.requests import Request

    from bli_memory.core.models import Memory
    from bli_memory.core.team.postgres.access import Principal

__all__ = [
    "background",
    "forget",
    "get",
    "history",
    "info",
    "list_",
    "profile",
    "purge",
    "recall",
    "save",
    "search",
    "terms",
    "update",
]


def _record(memory: Memory | None) -> MemoryRecord | None:
    return MemoryRecord.of(memory) if memory is not None else None


# --- the doors -----------------------------------------------------------------------


def search(request: Request, p: Principal, req: m.SearchRequest) -> tuple[int, m.SearchAnswer]:
    """``POST /api/memory/search``: hybrid search of a space and its aliases."""
    res = acting(request, p).search(req.text, space=req.containerTag, limit=req.limit,
                                    include_profile=req.includeProfile)
    return 200, m.SearchAnswer.model_construct(**dict(SearchRecord.of(res)))


def recall(request: Request, p: Principal, req: m.RecallRequest) -> tuple[int, m.RecallAnswer]:
    """``POST /api/memory/recall``: a prompt's search and the gate's inputs, one request."""
    got = acting(request, p).recall(req.text, space=req.containerTag, limit=req.limit)
    return 200, m.RecallAnswer.model_construct(**dict(RecallRecord.of_recall(got)))


def save(request: Request, p: Principal, req: m.SaveRequest) -> tuple[int, m.SaveAnswer, Any]:
    """``POST /api/memory/save``: save (201, 200 duplicate); ``extract: true`` queues a job (202)."""
    be = acting(request, p)
    check_key_lengths({"customId": req.customId, "sessionId": req.sessionId, "source": req.source})
    source = req.source or "api"
    if req.extract:
        # Not even the queue row holds secrets; the size first: masking reads the whole text.
        check_extract_size(req.content)
        clean = redact(req.content)
        job_id = be.enqueue_extract(clean.text, space=req.containerTag, source=source,
                                    session_id=req.sessionId, job_id=req.jobId)
        canonical, _ = be.resolve_space(req.containerTag)
        return 202, m.SaveAnswer(status="queued", jobId=job_id, containerTag=canonical, memory=None,
                                 previous=None, masked=clean.masked), service_state(request).run_pending_jobs
    # Everyone who can see the space reads what is saved: the store's write path checks the
    # size, then masks secrets (the one place every save takes).
    res = be.save(req.content, space=req.containerTag, custom_id=req.customId, metadata=req.metadata,
                  source=source, session_id=req.sessionId, expires_at=req.expiresAt)
    answer = m.SaveAnswer(status=res.status, containerTag=res.space, memory=_record(res.memory),
                          previous=_record(res.previous), jobId=None, masked=res.masked)
    return (200 if res.status == "duplicate" else 201), answer, None


def update(request: Request, p: Principal, req: m.UpdateRequest) -> tuple[int, m.UpdateAnswer]:
    """``POST /api/memory/update``: replace a memory, keeping history (secrets masked by the store)."""
    check_key_lengths({"customId": req.customId, "source": req.source})
    res = acting(request, p).update(req.content, space=req.containerTag, id=req.id, custom_id=req.customId,
                                    source=req.source)
    return 200, m.UpdateAnswer(status=res.status, memory=MemoryRecord.of(res.memory),
                               previous=MemoryRecord.of(res.previous), named=_record(res.named),
                               masked=res.masked)


def forget(request: Request, p: Principal, req: m.ForgetRequest) -> tuple[int, m.ForgetAnswer]:
    """``POST /api/memory/forget``: tombstone by id, exact text or closest match."""
    res = acting(request, p).forget(space=req.containerTag, id=req.id, content=req.content, query=req.query)
    return 200, m.ForgetAnswer(matchedBy=res.matched_by, similarity=res.similarity,
                               memory=MemoryRecord.of(res.memory), named=_record(res.named))


def profile(request: Request, p: Principal, req: m.SpaceLimitRequest) -> tuple[int, ProfileRecord]:
    """``POST /api/memory/v4/profile``: User Profile + Recent Context of a space."""
    res = acting(request, p).profile(space=req.containerTag, limit=req.limit or 10)
    return 200, ProfileRecord.of(res)


def history(request: Request, p: Principal, req: m.IdRequest) -> tuple[int, m.HistoryAnswer]:
    """``POST /api/memory/history``: every version of a memory, newest first."""
    versions = acting(request, p).history(req.id)
    return 200, m.HistoryAnswer(versions=[MemoryRecord.of(v) for v in versions])


def purge(request: Request, p: Principal, req: m.IdRequest) -> tuple[int, m.Erased]:
    """``POST /api/memory/purge``: erase a memory and its versions."""
    return 200, m.Erased(erased=acting(request, p).purge(req.id))


def info(request: Request, p: Principal, req: m.SpaceRequest) -> tuple[int, m.InfoAnswer]:
    """``POST /api/memory/info``: the space, aliases, counts, the store (the person and device)."""
    answer = acting(request, p).info(space=req.containerTag)
    answer["store"] = {"kind": "service", "person": p.person, "device": p.device}
    return 200, m.InfoAnswer.model_validate(answer)


def terms(request: Request, p: Principal, req: m.TermsRequest) -> tuple[int, m.TermsAnswer]:
    """``POST /api/memory/terms``: document frequency of each content term of ``q`` in a space."""
    counts, size = acting(request, p).term_frequencies(req.text, space=req.containerTag)
    return 200, m.TermsAnswer(terms=[m.TermCount(term=t, count=c) for t, c in counts], live=size)


def background(request: Request, p: Principal, req: m.SpaceRequest) -> tuple[int, m.BackgroundAnswer]:
    """``POST /api/memory/background``: mean cosine between two live memories of a space."""
    return 200, m.BackgroundAnswer(background=acting(request, p).space_background(space=req.containerTag))


def list_(request: Request, p: Principal, req: m.SpaceLimitRequest) -> tuple[int, m.ListAnswer]:
    """``POST /api/memory/list``: newest live memories of a space."""
    rows = acting(request, p).list_memories(space=req.containerTag, limit=req.limit or 20)
    return 200, m.ListAnswer(containerTag=req.containerTag, memories=[MemoryRecord.of(r) for r in rows])


def get(request: Request, p: Principal, req: m.GetRequest) -> tuple[int, m.GetAnswer]:
    """``POST /api/memory/get``: one memory and its version history."""
    memory, versions = acting(request, p).get_memory(req.id, include_inactive=req.includeInactive)
    return 200, m.GetAnswer(memory=MemoryRecord.of(memory), history=[MemoryRecord.of(v) for v in versions])
