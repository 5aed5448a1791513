"""The memory doors of the service: search, save, update, forget, profile, history, purge,
info, terms, list and get.

Module-level handlers (:data:`~bli_memory.core.team.service_door.Handler`) that
:func:`~bli_memory.core.team.service_door.door` serves; each acts as the person the
request's token proved (:func:`~bli_memory.core.team.service_door.acting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.records import check_key_lengths
from bli_memory.core.memory.redaction import redact
from bli_memory.core.memory.retrieval_writes import check_extract_size
from bli_memory.core.models import Memory, Profile, SearchResult
from bli_memory.core.team.service_door import (
    acting,
    body_bool,
    body_int,
    body_str,
    body_tag,
    service_state,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from bli_memory.core.team.pg_access import Principal

__all__ = [
    "background",
    "forget",
    "get",
    "history",
    "info",
    "list_",
    "profile",
    "profile_json",
    "purge",
    "recall",
    "save",
    "search",
    "search_json",
    "terms",
    "update",
]


# --- JSON shapes -------------------------------------------------------------------


def _memory_json(memory: Memory | None) -> dict[str, Any] | None:
    return memory.to_dict() if memory is not None else None


def profile_json(profile: Profile) -> dict[str, Any]:
    """The wire shape of a profile: ``{"containerTag", "facts", "recent"}``."""
    return {
        "containerTag": profile.space,
        "facts": [m.to_dict() for m in profile.facts],
        "recent": [m.to_dict() for m in profile.recent],
    }


def search_json(res: SearchResult) -> dict[str, Any]:
    """The wire shape of a search answer (see :class:`~bli_memory.core.team.service_models.SearchAnswer`)."""
    return {
        "query": res.query,
        "containerTag": res.space,
        "searchedTags": list(res.spaces),
        "count": len(res.hits),
        "results": [
            {"memory": h.memory.to_dict(), "similarity": h.similarity, "score": h.score,
             "channels": list(h.channels)}
            for h in res.hits
        ],
        "profile": profile_json(res.profile) if res.profile is not None else None,
        "conflicts": [c.to_dict() for c in res.conflicts],
    }


# --- the doors -----------------------------------------------------------------------


def search(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/search``: hybrid search of a space and its aliases."""
    query = body_str(body, "q", alt="query") or ""
    res = acting(request, p).search(query, space=body_tag(body), limit=body_int(body, "limit", 10, 1, 100),
                                    include_profile=body_bool(body, "includeProfile"))
    return 200, search_json(res)


def recall(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/recall``: a prompt's search and the gate's inputs, one request."""
    query = body_str(body, "q", alt="query") or ""
    got = acting(request, p).recall(query, space=body_tag(body), limit=body_int(body, "limit", 10, 1, 100))
    return 200, {**search_json(got.result), "terms": [{"term": t, "count": c} for t, c in got.term_counts],
                 "live": got.live, "background": got.background}


def save(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any, Any]:
    """``POST /api/memory/save``: save (201, 200 duplicate); ``extract: true`` queues a job (202)."""
    be = acting(request, p)
    raw = body_str(body, "content", required=True) or ""
    check_key_lengths({k: body.get(k) for k in ("customId", "sessionId", "source")})
    tag = body_tag(body)
    source = body_str(body, "source") or "api"
    session_id = body_str(body, "sessionId")
    if body_bool(body, "extract"):
        # Not even the queue row holds secrets; the size first: masking reads the whole text.
        check_extract_size(raw)
        clean = redact(raw)
        job_id = be.enqueue_extract(clean.text, space=tag, source=source, session_id=session_id,
                                    job_id=body.get("jobId"))
        canonical, _ = be.resolve_space(tag)
        return 202, {"status": "queued", "jobId": job_id, "containerTag": canonical, "memory": None,
                     "previous": None, "masked": clean.masked}, service_state(request).run_pending_jobs
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInputError("metadata must be a JSON object")
    # Everyone who can see the space reads what is saved: the store's write path checks the
    # size, then masks secrets (the one place every save takes).
    res = be.save(raw, space=tag, custom_id=body_str(body, "customId"), metadata=metadata, source=source,
                  session_id=session_id, expires_at=body_str(body, "expiresAt"))
    payload = {"status": res.status, "containerTag": res.space, "memory": _memory_json(res.memory),
               "previous": _memory_json(res.previous), "jobId": None, "masked": res.masked}
    return (200 if res.status == "duplicate" else 201), payload, None


def update(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/update``: replace a memory, keeping history (secrets masked by the store)."""
    raw = body_str(body, "content", required=True) or ""
    check_key_lengths({k: body.get(k) for k in ("customId", "source")})
    res = acting(request, p).update(raw, space=body_tag(body), id=body_str(body, "id"),
                                    custom_id=body_str(body, "customId"), source=body_str(body, "source"))
    return 200, {"status": res.status, "memory": res.memory.to_dict(), "previous": res.previous.to_dict(),
                 "named": _memory_json(res.named), "masked": res.masked}


def forget(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/forget``: tombstone by id, exact text or closest match."""
    res = acting(request, p).forget(space=body_tag(body), id=body_str(body, "id"),
                                    content=body_str(body, "content"), query=body_str(body, "query"))
    return 200, {"matchedBy": res.matched_by, "similarity": res.similarity,
                 "memory": res.memory.to_dict(), "named": _memory_json(res.named)}


def profile(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/v4/profile``: User Profile + Recent Context of a space."""
    res = acting(request, p).profile(space=body_tag(body), limit=body_int(body, "limit", 10, 1, 100))
    return 200, profile_json(res)


def history(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/history``: every version of a memory, newest first."""
    versions = acting(request, p).history(body_str(body, "id", required=True) or "")
    return 200, {"versions": [m.to_dict() for m in versions]}


def purge(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/purge``: erase a memory and its versions."""
    return 200, {"erased": acting(request, p).purge(body_str(body, "id", required=True) or "")}


def info(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/info``: the space, aliases, counts, the store (the person and device)."""
    answer = acting(request, p).info(space=body_tag(body))
    answer["store"] = {"kind": "service", "person": p.person, "device": p.device}
    return 200, answer


def terms(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/terms``: document frequency of each content term of ``q`` in a space."""
    counts, size = acting(request, p).term_frequencies(body_str(body, "q", alt="query") or "",
                                                       space=body_tag(body))
    return 200, {"terms": [{"term": t, "count": c} for t, c in counts], "live": size}


def background(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/background``: mean cosine between two live memories of a space."""
    return 200, {"background": acting(request, p).space_background(space=body_tag(body))}


def list_(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/list``: newest live memories of a space."""
    tag = body_tag(body)
    rows = acting(request, p).list_memories(space=tag, limit=body_int(body, "limit", 20, 1, 100))
    return 200, {"containerTag": tag, "memories": [m.to_dict() for m in rows]}


def get(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/get``: one memory and its version history."""
    memory, versions = acting(request, p).get_memory(body_str(body, "id", required=True) or "",
                                                     include_inactive=body_bool(body, "includeInactive"))
    return 200, {"memory": memory.to_dict(), "history": [m.to_dict() for m in versions]}
