"""The capture doors of the service: session recordings, the experience log, whoami."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.team.service import models as m
from bli_memory.core.team.service.door import acting
from bli_memory.core.team.service.http import DoorError
from bli_memory.core.team.service.models import EXPERIENCE_STORES, EXPERIENCE_VERDICTS

if TYPE_CHECKING:
    from starlette.requests import Request

    from bli_memory.core.team.postgres.access import Principal

__all__ = [
    "EXPERIENCE_STORES",
    "EXPERIENCE_VERDICTS",
    "clear_recordings",
    "experience",
    "experience_entry",
    "record",
    "recordings",
    "whoami",
]



def record(request: Request, p: Principal, req: m.RecordRequest) -> tuple[int, m.RecordAnswer]:
    """``POST /api/memory/record``: keep one turn of a recorded session (201 with its id).

    A caller's ``id`` is kept once: a retry with it records nothing new and answers it again.
    """
    from bli_memory.core.memory.job_ids import checked_job_id
    from bli_memory.core.memory.records import check_key_lengths
    check_key_lengths({"sessionId": req.sessionId, "source": req.source}, nothing="recorded")
    be = acting(request, p)
    try:
        wanted = checked_job_id(req.id)
    except InvalidInputError:
        raise InvalidInputError("id must be a UUID string") from None
    rec_id = be.record_turn(req.text, space=req.containerTag, source=req.source or "api",
                            session_id=req.sessionId, record_id=wanted)
    canonical, _ = be.resolve_space(req.containerTag)
    return 201, m.RecordAnswer(id=rec_id, containerTag=canonical)


def recordings(request: Request, p: Principal, req: m.SpaceLimitRequest) -> tuple[int, m.RecordingsAnswer]:
    """``POST /api/memory/recordings``: the caller's recorded turns of a space, newest first."""
    rows = acting(request, p).recordings(space=req.containerTag, limit=req.limit or 20)
    return 200, m.RecordingsAnswer(recordings=[m.Recording.model_validate(r) for r in rows], count=len(rows))


def clear_recordings(request: Request, p: Principal,
                     req: m.SpaceRequest) -> tuple[int, m.ClearRecordingsAnswer]:
    """``POST /api/memory/recordings/clear``: erase the caller's recorded turns of a space."""
    return 200, m.ClearRecordingsAnswer(cleared=acting(request, p).clear_recordings(space=req.containerTag))


def whoami(_: Request, p: Principal, req: None) -> tuple[int, m.WhoAmI]:
    """``GET /api/memory/whoami``: the person and device the token proves."""
    return 200, m.WhoAmI(person=p.person, device=p.device, deviceId=p.device_id)


def experience(request: Request, p: Principal, req: m.ExperienceRequest) -> tuple[int, m.ExperienceAnswer]:
    """``POST /api/memory/experience``: one experience opinion (201, 200 identical retry, 409)."""
    entry = experience_entry(req.model_dump(exclude_none=True))
    status, stored = acting(request, p).experience.record_experience(entry)
    if status == "conflict":
        raise DoorError(409, "conflict", "an opinion with this id exists with other content")
    answer = m.ExperienceAnswer.model_validate({**stored, "status": status})
    return (201 if status == "created" else 200), answer


def experience_entry(body: dict[str, Any]) -> dict[str, Any]:
    """Validate an experience opinion (BLI Memory spec, "Live A/B: agent experience").

    Raises:
        InvalidInputError: unknown store or verdict, a reason that is empty, longer than
            500 characters or more than one line, a bad id or time.
    """
    raw_id = body.get("id")
    if raw_id is None:
        entry_id = str(uuid.uuid4())
    else:
        try:
            entry_id = str(uuid.UUID(str(raw_id)))
        except ValueError as exc:
            raise InvalidInputError("id must be a UUID") from exc
    store, verdict, reason = body.get("store"), body.get("verdict"), body.get("reason")
    if store not in EXPERIENCE_STORES:
        raise InvalidInputError(f"store must be one of {', '.join(EXPERIENCE_STORES)}")
    if verdict not in EXPERIENCE_VERDICTS:
        raise InvalidInputError(f"verdict must be one of {', '.join(EXPERIENCE_VERDICTS)}")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInputError("reason is required")
    from bli_memory.core.memory.redaction import redact

    reason = redact(reason.strip()).text  # everyone the log is shared with reads it
    if len(reason) > 500 or "\n" in reason or "\r" in reason:
        raise InvalidInputError("reason must be one line of at most 500 characters")
    created = body.get("created_at", body.get("createdAt"))
    if created is None:
        created_at = datetime.now(UTC)
    else:
        try:
            created_at = datetime.fromisoformat(str(created))
        except ValueError as exc:
            raise InvalidInputError("created_at must be an ISO 8601 time") from exc
        if created_at.tzinfo is None:
            created_at = created_at.replace(tzinfo=UTC)
    return {"id": entry_id, "store": store, "verdict": verdict, "reason": reason, "created_at": created_at}
