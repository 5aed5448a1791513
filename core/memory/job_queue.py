"""The extract-job queue protocol: what both stores offer the one drain.

An extract job is one exchange (or ``save_memory`` text with ``extract: true``) waiting
to be distilled. Both stores keep jobs as durable rows and hand them out under a lease:
the embedded store (:class:`~bli_memory.core.embedded.store.SQLiteStore`, ``BEGIN
IMMEDIATE``) and the team store
(:class:`~bli_memory.core.team.postgres.jobs.PostgresJobs`, ``FOR UPDATE SKIP LOCKED``).
:func:`bli_memory.core.extraction.worker.drain` is the one loop that works either.

Standard library only: the embedded store imports :class:`ExtractJob` on every hook run. It
lives with the memory contract because both stores and the drain share it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["ExtractJob", "JobQueue", "ShipReport", "capture_here"]


@dataclass(frozen=True)
class ExtractJob:
    """One claimed extract job.

    Attributes:
        id: Job id (UUID).
        space: Canonical container tag the text belongs to.
        text: The redacted text to distil.
        source: Who queued it (``hook:claude``, ``mcp``, ...).
        session_id: The host session, when known.
        attempts: Claims so far, this one included.
        created_at: When it was queued (UTC ISO 8601), when the store reports it.
        reclaimed: True when this claim took the job over from a worker whose lease expired.
        owner_id: The team store's ``memory_people.id`` whose space it is (the job is
            distilled acting as that person); None on the embedded store.
        device_id: The device token the job came with (team store), else None.
    """

    id: str
    space: str
    text: str
    source: str
    session_id: str | None
    attempts: int
    created_at: str | None = None
    reclaimed: bool = False
    owner_id: int | None = None
    device_id: str | None = None


@runtime_checkable
class JobQueue(Protocol):
    """A durable queue of extract jobs, claimed one at a time under a lease.

    Every method names the worker: a job that is no longer this worker's (its lease
    expired and another worker took it over) is left alone and the method answers False.
    """

    def claim_job(self, worker_id: str, *, lease_seconds: float, max_attempts: int) -> ExtractJob | None:
        """Claim the oldest ready job (queued and due, or running with an expired lease).

        ``attempts`` of the answer counts this claim; a job whose lease expired after
        ``max_attempts`` claims is given up instead of claimed. None: nothing is ready.
        """
        ...

    def extend_lease(self, job_id: str, worker_id: str, *, lease_seconds: float) -> bool:
        """Push a running job's lease ``lease_seconds`` into the future."""
        ...

    def finish_job(self, job_id: str, worker_id: str, outcome: dict[str, Any]) -> bool:
        """Mark the job ``done`` with its outcome."""
        ...

    def fail_job(self, job_id: str, worker_id: str, *, error: str, retry_at: str | None) -> bool:
        """Record a failed attempt: ``queued`` again until ``retry_at`` (UTC ISO), or, with
        None, ``failed`` for good; ``error`` is a short reason, never text or secrets."""
        ...


@dataclass(frozen=True)
class ShipReport:
    """What one pass of sending spooled captures to the team service did
    (:meth:`~bli_memory.core.memory.backend.MemoryBackend.ship_spool`,
    :mod:`bli_memory.core.team.client.spool`).

    Attributes:
        shipped: Job ids the service queued (or already held).
        rejected: Entries the service refused as invalid (400), removed.
        left: Entries still spooled for this service.
        error: The service's failure reason that stopped the pass, if any.
    """

    shipped: tuple[str, ...] = ()
    rejected: int = 0
    left: int = 0
    error: str | None = None


class _LocalCapture(Protocol):
    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None) -> str: ...

    def enqueue_extract(self, text: str, *, space: str, source: str, session_id: str | None = None,
                        job_id: str | None = None) -> str: ...


def capture_here(store: _LocalCapture, text: str, *, space: str, source: str, session_id: str | None,
                 record: bool) -> dict[str, Any]:
    """The stop hook's capture on a store in this process: a recorded turn (``record``) or
    one extract job, in the store's own file or database; nothing is spooled.

    Returns:
        Receipt fields: ``{"recorded": True}`` or ``{"queued": True}``.
    """
    if record:
        store.record_turn(text, space=space, source=source, session_id=session_id)
        return {"recorded": True}
    store.enqueue_extract(text, space=space, source=source, session_id=session_id)
    return {"queued": True}
