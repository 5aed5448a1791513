"""Extract job ids chosen by the client, so a retried capture is queued once.

The stop hook gives each exchange one id before it first tries to queue it
(:mod:`bli_memory.core.team.client.spool`); every backend's ``enqueue_extract(job_id=...)``
queues a job of an id it already holds only once and answers that id again. An id
is a UUID in its canonical text form (as Postgres stores the ``uuid`` column).
"""

from __future__ import annotations

import uuid

from bli_memory.core.errors import InvalidInputError

__all__ = ["checked_job_id", "new_job_id"]


def new_job_id() -> str:
    """A fresh random job id (UUID 4, canonical text)."""
    return str(uuid.uuid4())


def checked_job_id(value: object) -> str | None:
    """``value`` as a canonical UUID string; ``None`` stays ``None``.

    Raises:
        InvalidInputError: ``value`` is not a UUID string.
    """
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise InvalidInputError("jobId must be a UUID string")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidInputError("jobId must be a UUID string") from None
