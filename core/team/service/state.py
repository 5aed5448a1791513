"""One service process's state and its extract-job worker.

:class:`ServiceState` is what ``app.state.service`` holds: the administrative backend,
the Prometheus metrics and the job slots. :func:`run_extract_jobs` works the service's
queue with the one drain, :func:`bli_memory.core.extraction.worker.drain`.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import TYPE_CHECKING

from bli_memory.core.errors import StoreError

if TYPE_CHECKING:
    from bli_memory.core.memory.job_queue import ExtractJob
    from bli_memory.core.team.postgres.store import PostgresBackend

__all__ = ["JOB_CONCURRENCY", "JOB_SWEEP_SECONDS", "ServiceState", "run_extract_jobs"]

#: How often a service process looks for extract jobs nobody is working on (left by a
#: process that stopped, or waiting for a retry).
JOB_SWEEP_SECONDS = 5.0
#: Extract jobs one process distils at the same time.
JOB_CONCURRENCY = 2


class ServiceState:
    """What one service process holds: the root backend, metrics, the job worker.

    Args:
        backend: The administrative :class:`PostgresBackend` (no person); requests act
            through :meth:`PostgresBackend.for_person`.
        run_jobs: Distil extract jobs in this process (after each 202, and every
            :data:`JOB_SWEEP_SECONDS`).
    """

    def __init__(self, backend: PostgresBackend, *, run_jobs: bool = True) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.backend = backend
        self.run_jobs = run_jobs
        self.model_ready = False
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self._job_slots = threading.BoundedSemaphore(JOB_CONCURRENCY)
        self.registry = CollectorRegistry()
        self.requests = Counter("bli_memory_requests", "Requests answered, by door and status.",
                                ["door", "status"], registry=self.registry)
        self.latency = Histogram(
            "bli_memory_request_seconds", "Time to answer a door, in seconds.", ["door"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0), registry=self.registry,
        )
        self.auth_failures = Counter("bli_memory_auth_failures",
                                     "Requests refused for a missing or bad token.", registry=self.registry)
        self.jobs = Counter("bli_memory_extract_jobs", "Extract job attempts finished, by outcome.",
                            ["outcome"], registry=self.registry)
        self.queue = Gauge("bli_memory_extract_queue", "Extract jobs by state (read at scrape time).",
                           ["state"], registry=self.registry)

    # --- extract jobs --------------------------------------------------------------

    def run_pending_jobs(self, max_jobs: int = 20) -> int:
        """Claim and distil ready jobs until none is left or ``max_jobs`` ran.

        At most :data:`JOB_CONCURRENCY` threads of a process do this at once; a caller
        that finds no free slot returns 0 at once (the sweep comes back).

        Returns:
            Jobs finished (done or failed) by this call.
        """
        if not self.run_jobs or not self._job_slots.acquire(blocking=False):
            return 0
        try:
            return run_extract_jobs(self.backend, worker=self.worker_id, max_jobs=max_jobs, state=self)
        finally:
            self._job_slots.release()


def run_extract_jobs(
    backend: PostgresBackend, *, worker: str, max_jobs: int = 20, state: ServiceState | None = None
) -> int:
    """Claim ready extract jobs (``FOR UPDATE SKIP LOCKED``) and distil each one.

    The one drain, :func:`bli_memory.core.extraction.worker.drain`, on the service's
    queue: each job runs :func:`bli_memory.core.extraction.reconcile.distil` with the
    backend acting as the job's owner, in the job's canonical space, under a lease of
    :data:`~bli_memory.core.team.postgres.jobs.JOB_LEASE` kept alive while it runs, with the
    drain's retries and backoff. The outcome lands on the job row and in one stderr
    line, ``[bli-memory] extract job done {...}`` (BLI Memory spec).

    Args:
        backend: The administrative backend.
        worker: This worker's name (recorded as ``claimed_by``).
        max_jobs: Stop after this many jobs.
        state: For metrics, when run inside the service.

    Returns:
        Jobs claimed and run (done, retried or failed).

    Raises:
        StoreError: the queue itself cannot be read or written.
    """
    from bli_memory.core.extraction.worker import drain
    from bli_memory.core.team.postgres.jobs import JOB_LEASE, JOB_MAX_ATTEMPTS

    def count(result: str) -> None:
        if state is not None:
            state.jobs.labels(outcome=_JOB_STATES.get(result, result)).inc()

    return drain(
        backend, max_jobs=max_jobs, worker_id=worker, lease_seconds=JOB_LEASE.total_seconds(),
        max_attempts=JOB_MAX_ATTEMPTS, on_result=count,
        backend_for=lambda job: backend.for_person(_owner(job), device_id=job.device_id),
    )


def _owner(job: ExtractJob) -> int:
    if job.owner_id is None:  # every team job row has an owner (NOT NULL)
        raise StoreError("an extract job without an owner", reason="store_failed")
    return job.owner_id


#: The job state a drain result leaves (the ``outcome`` label of the jobs counter).
_JOB_STATES = {"retry": "queued"}
