"""Memory contract calls as JSON: what the MCP server sends the resident daemon and gets back.

The MCP server answers through the daemon (:mod:`bli_memory.core.mcp.daemon_route`) by
naming a :class:`~bli_memory.core.memory.backend.MemoryBackend` method and its keyword
arguments; the daemon (:mod:`bli_memory.core.daemon.calls`) calls that method on its warm
backend and sends the result back. This module is the one codec of both sides, so a
result read back is equal to the one the backend returned in the daemon
(``decode_result(name, encode_result(name, value)) == value``), and an error raised there
is raised again here with the same class, reason and message (so a tool's ``isError``
text is the same on both routes).

Wire shapes (inside the daemon protocol's one JSON line,
:mod:`bli_memory.core.hooks.daemon_client`)::

    -> {"call": "search", "args": {"query": "...", "space": "...", ...},
        "version": "0.1.0", "config": {...}}
    <- {"result": <encode_result(call, value)>, "version": ..., "pid": ...}
    <- {"raised": {"class": "NotFoundError", "reason": "not_found", "message": "..."}, ...}

Standard library only, like the models it encodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bli_memory.core import errors
from bli_memory.core.models import (
    Conflict,
    ForgetResult,
    Memory,
    Profile,
    SaveResult,
    SearchHit,
    SearchResult,
    UpdateResult,
)

__all__ = [
    "CALLS",
    "decode_error",
    "decode_result",
    "encode_error",
    "encode_result",
    "memory_of",
]


def memory_of(d: dict[str, Any]) -> Memory:
    """The :class:`Memory` of a :meth:`Memory.to_dict` object (its exact inverse).

    Raises:
        KeyError, TypeError, ValueError: ``d`` is not that shape.
    """
    return Memory(
        id=str(d["id"]), space=str(d["space"]), content=str(d["content"]), custom_id=d["customId"],
        metadata=dict(d["metadata"]), source=str(d["source"]), session_id=d["sessionId"],
        created_at=str(d["createdAt"]), updated_at=str(d["updatedAt"]), version=int(d["version"]),
        supersedes=d["supersedes"], state=d["state"], forgotten_at=d["forgottenAt"],
        expires_at=d["expiresAt"],
    )


def _opt_memory(m: Memory | None) -> dict[str, Any] | None:
    return m.to_dict() if m is not None else None


def _opt_memory_of(d: dict[str, Any] | None) -> Memory | None:
    return memory_of(d) if d is not None else None


def _float(x: float | None) -> float | None:
    return float(x) if x is not None else None


def _profile(p: Profile) -> dict[str, Any]:
    return {"space": p.space, "facts": [m.to_dict() for m in p.facts],
            "recent": [m.to_dict() for m in p.recent]}


def _profile_of(d: dict[str, Any]) -> Profile:
    return Profile(space=str(d["space"]), facts=tuple(memory_of(m) for m in d["facts"]),
                   recent=tuple(memory_of(m) for m in d["recent"]))


def _search(r: SearchResult) -> dict[str, Any]:
    return {
        "query": r.query, "space": r.space, "spaces": list(r.spaces),
        "hits": [{"memory": h.memory.to_dict(), "similarity": _float(h.similarity), "score": float(h.score),
                  "channels": list(h.channels)} for h in r.hits],
        "profile": _profile(r.profile) if r.profile is not None else None,
        "conflicts": [c.to_dict() for c in r.conflicts],
    }


def _search_of(d: dict[str, Any]) -> SearchResult:
    return SearchResult(
        query=str(d["query"]), space=str(d["space"]), spaces=tuple(d["spaces"]),
        hits=tuple(SearchHit(memory=memory_of(h["memory"]), similarity=h["similarity"], score=h["score"],
                             channels=tuple(h["channels"])) for h in d["hits"]),
        profile=_profile_of(d["profile"]) if d["profile"] is not None else None,
        conflicts=tuple(Conflict(newer=c["newer"], older=c["older"], similarity=c["similarity"])
                        for c in d["conflicts"]),
    )


def _save(r: SaveResult) -> dict[str, Any]:
    return {"memory": _opt_memory(r.memory), "space": r.space, "status": r.status,
            "previous": _opt_memory(r.previous), "jobId": r.job_id, "masked": r.masked}


def _save_of(d: dict[str, Any]) -> SaveResult:
    return SaveResult(memory=_opt_memory_of(d["memory"]), space=str(d["space"]), status=d["status"],
                      previous=_opt_memory_of(d["previous"]), job_id=d["jobId"],
                      masked=int(d.get("masked") or 0))  # a daemon of an older version sends none


def _update(r: UpdateResult) -> dict[str, Any]:
    return {"memory": r.memory.to_dict(), "previous": r.previous.to_dict(), "status": r.status,
            "named": _opt_memory(r.named)}


def _update_of(d: dict[str, Any]) -> UpdateResult:
    return UpdateResult(memory=memory_of(d["memory"]), previous=memory_of(d["previous"]),
                        status=d["status"], named=_opt_memory_of(d["named"]))


def _forget(r: ForgetResult) -> dict[str, Any]:
    return {"memory": r.memory.to_dict(), "matchedBy": r.matched_by, "similarity": _float(r.similarity),
            "named": _opt_memory(r.named)}


def _forget_of(d: dict[str, Any]) -> ForgetResult:
    return ForgetResult(memory=memory_of(d["memory"]), matched_by=d["matchedBy"],
                        similarity=d["similarity"], named=_opt_memory_of(d["named"]))


def _memories(ms: list[Memory]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in ms]


def _memories_of(ds: list[dict[str, Any]]) -> list[Memory]:
    return [memory_of(d) for d in ds]


def _same(x: Any) -> Any:
    return x


#: ``{method: (encode, decode)}`` of every contract method the daemon answers for the
#: MCP server. Bulk methods (``export``, ``import_records``) are not among them: the
#: MCP tools never call them, and the ``memory`` commands run in their own process.
CALLS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "audit": (_same, _same),
    "clear_recordings": (_same, int),
    "enqueue_extract": (_same, str),
    "forget": (_forget, _forget_of),
    "get_memory": (lambda r: [r[0].to_dict(), _memories(r[1])],
                   lambda d: (memory_of(d[0]), _memories_of(d[1]))),
    "history": (_memories, _memories_of),
    "info": (_same, _same),
    "list_memories": (_memories, _memories_of),
    "profile": (_profile, _profile_of),
    "purge": (_same, int),
    "record_turn": (_same, str),
    "recordings": (_same, _same),
    "save": (_save, _save_of),
    "search": (_search, _search_of),
    "term_frequencies": (lambda r: [[list(t) for t in r[0]], r[1]],
                         lambda d: ([(str(t), int(n)) for t, n in d[0]], int(d[1]))),
    "update": (_update, _update_of),
}


def encode_result(call: str, value: Any) -> Any:
    """``value`` (what the backend's ``call`` method returned) as JSON-ready data.

    Raises:
        KeyError: ``call`` is not in :data:`CALLS`.
    """
    return CALLS[call][0](value)


def decode_result(call: str, data: Any) -> Any:
    """The value :func:`encode_result` encoded, rebuilt as the backend returned it.

    Raises:
        KeyError, TypeError, ValueError, IndexError: ``data`` is not that call's shape.
    """
    return CALLS[call][1](data)


def encode_error(exc: BaseException) -> dict[str, Any]:
    """``{"class", "reason", "message"}`` of an exception a backend method raised.

    A :class:`~bli_memory.core.errors.BliMemoryError` keeps its class name and reason;
    any other exception is sent with ``class`` None and its text as the message (the
    MCP SDK shows a tool's unexpected exception by its text alone).
    """
    if isinstance(exc, errors.BliMemoryError):
        return {"class": type(exc).__name__, "reason": exc.reason, "message": exc.message}
    return {"class": None, "reason": None, "message": str(exc)}


def decode_error(data: Any) -> Exception:
    """The exception :func:`encode_error` described, to raise again.

    A class name outside :mod:`bli_memory.core.errors` becomes its nearest known base,
    :class:`~bli_memory.core.errors.BliMemoryError` (with the same reason and message);
    ``class`` None becomes a ``RuntimeError`` with the message.

    Raises:
        KeyError, TypeError: ``data`` is not that shape.
    """
    name, reason, message = data["class"], data["reason"], str(data["message"])
    if name is None:
        return RuntimeError(message)
    cls = getattr(errors, str(name), None) if str(name) in errors.__all__ else None
    if not (isinstance(cls, type) and issubclass(cls, errors.BliMemoryError)):
        cls = errors.BliMemoryError
    return cls(message, reason=str(reason) if reason is not None else None)
