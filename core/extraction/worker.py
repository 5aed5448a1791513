"""The extract worker: claims queued extract jobs and runs extract + reconcile on them.

This module owns :func:`drain`, which every process that works the queue calls (the
``bli-memory-mcp worker`` command, :mod:`bli_memory.core.cli.worker`, the MCP server's
background thread, the resident daemon and the team service).

Guarantees, on the embedded store (:class:`~bli_memory.core.embedded.store.SQLiteStore`):

- **Exactly one claim at a time.** A job is claimed inside one ``BEGIN IMMEDIATE``
  transaction that selects it and marks it ``running`` with a lease, so two workers
  (threads or processes) never hold the same job.
- **Never lost.** A claim is a lease (:data:`DEFAULT_LEASE_SECONDS`), extended by a
  heartbeat while the job runs. A worker that dies between claim and finish (kill -9,
  power loss) stops extending it; once it expires the next worker takes the job over.
  A job whose worker died :data:`MAX_ATTEMPTS` times is marked ``failed``.
- **Retries with backoff.** A failed attempt goes back to ``queued`` with
  ``not_before`` = now + :func:`retry_delay` (15 s doubling to 15 min); after
  :data:`MAX_ATTEMPTS` attempts it is ``failed`` with its reason. When an optional
  model endpoint keeps failing, the last attempt falls back to the offline rules so
  the exchange is still distilled.
- **Outcome on the row and in the log.** ``done`` jobs record ``{added, updated,
  unchanged, conflicted, corrected, extract_ms, reconcile_ms}`` in ``outcome`` (with the
  ``host`` extractor also ``extraction``: its spend, or the reason the rules answered
  instead, :mod:`~bli_memory.core.extraction.host_model`) and write one
  stderr line ``[bli-memory] extract job done {"job": ..., "added": ..., ...}``; a
  failed attempt writes ``[bli-memory] extract job failed {"job", "reason",
  "attempts", "retry_in_s"}`` (reasons from the closed set, never text or secrets).

Reconciling twice is harmless (a statement already stored is ``unchanged``), so even
the rare double run after a lease expired under a stalled worker writes nothing twice.

The same loop works the team service's Postgres queue
(:class:`~bli_memory.core.team.postgres.jobs.PostgresJobs`): both stores satisfy
:class:`~bli_memory.core.memory.job_queue.JobQueue`, and the service passes
``backend_for`` so each job is distilled as the person whose space it is.

A backend without a job queue of its own (the memory service client: the service
drains its queue itself) makes :func:`drain` return 0.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import BliMemoryError, InvalidInputError, ServiceError
from bli_memory.core.memory.job_queue import ExtractJob, JobQueue

if TYPE_CHECKING:
    from bli_memory.core.extraction.statements import Extractor
    from bli_memory.core.memory.backend import MemoryBackend

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "MAX_ATTEMPTS",
    "default_worker_id",
    "drain",
    "job_queue",
    "retry_delay",
]

#: How long a claim holds before another worker may take the job over; the
#: heartbeat extends it every third of that while the job runs.
DEFAULT_LEASE_SECONDS = 120.0
#: Claims per job before it is given up (``failed``).
MAX_ATTEMPTS = 5
#: First retry delay and its ceiling, in seconds (doubling in between).
BACKOFF_BASE_SECONDS = 15.0
BACKOFF_CAP_SECONDS = 900.0
#: ``done`` jobs (and their redacted text) are deleted this long after finishing.
KEEP_DONE_DAYS = 14

_last_prune = 0.0
_prune_lock = threading.Lock()


def retry_delay(attempts: int) -> float:
    """Seconds to wait before retrying a job that failed ``attempts`` times (>= 1)."""
    return float(min(BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0), BACKOFF_CAP_SECONDS))


def default_worker_id() -> str:
    """``host:pid:random``, unique per worker (recorded in ``claimed_by``)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def job_queue(backend: MemoryBackend) -> JobQueue | None:
    """The :class:`~bli_memory.core.memory.job_queue.JobQueue` of ``backend``, or None
    (:attr:`MemoryBackend.job_queue`: the service's client has none)."""
    return backend.job_queue


def _log(what: str, fields: dict[str, Any]) -> None:
    try:
        sys.stderr.write(f"[bli-memory] extract job {what} {json.dumps(fields, sort_keys=False)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed stderr must never fail a job
        pass


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BliMemoryError):
        return exc.reason
    return f"unknown_internal:{type(exc).__name__}"


class _Heartbeat:
    """Extends a job's lease every third of the lease until stopped."""

    def __init__(self, queue: JobQueue, job_id: str, worker_id: str, lease_seconds: float) -> None:
        self._stop = threading.Event()
        self.lost = False

        def beat() -> None:
            interval = max(lease_seconds / 3, 0.05)
            while not self._stop.wait(interval):
                try:
                    if not queue.extend_lease(job_id, worker_id, lease_seconds=lease_seconds):
                        self.lost = True
                        return
                except Exception:  # a busy store: try again next beat
                    continue

        self._thread = threading.Thread(target=beat, name=f"lease-{job_id[:8]}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _prune(queue: JobQueue) -> None:
    global _last_prune
    with _prune_lock:
        if time.monotonic() - _last_prune < 3600 and _last_prune:
            return
        _last_prune = time.monotonic()
    prune = getattr(queue, "prune_jobs", None)  # the embedded store deletes old done jobs
    if prune is not None:
        before = (datetime.now(UTC) - timedelta(days=KEEP_DONE_DAYS)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        try:
            prune(finished_before=before)
        except BliMemoryError:
            pass


def _run_job(
    queue: JobQueue,
    backend: MemoryBackend,
    job: ExtractJob,
    *,
    worker_id: str,
    extractor: Extractor,
    lease_seconds: float,
    max_attempts: int,
) -> str:
    """Distil one claimed job and record the result; returns done/retry/failed/lost."""
    from bli_memory.core.extraction.reconcile import distil

    heartbeat = _Heartbeat(queue, job.id, worker_id, lease_seconds)
    trace: list[dict[str, Any]] = []
    report: dict[str, Any] = {}
    try:
        try:
            outcome = distil(
                job.text, backend=backend, space=job.space, source=job.source,
                session_id=job.session_id, extractor=extractor, trace=trace, report=report,
            )
        except ServiceError:
            if job.attempts < max_attempts or getattr(extractor, "name", "") == "default":
                raise
            from bli_memory.core.extraction.rule_extractor import RuleExtractor

            # Last attempt and the model endpoint still fails: the offline rules
            # still keep what they can, rather than losing the exchange.
            trace.clear()
            outcome = distil(
                job.text, backend=backend, space=job.space, source=job.source,
                session_id=job.session_id, extractor=RuleExtractor(), trace=trace,
            )
    except Exception as exc:
        heartbeat.stop()
        reason = _reason(exc)
        final = job.attempts >= max_attempts or isinstance(exc, InvalidInputError)
        delay = None if final else retry_delay(job.attempts)
        retry_at = None
        if delay is not None:
            retry_at = (datetime.now(UTC) + timedelta(seconds=delay)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        message = exc.message if isinstance(exc, BliMemoryError) else type(exc).__name__
        queue.fail_job(job.id, worker_id, error=f"{reason}: {message}"[:500], retry_at=retry_at)
        _log("failed", {"job": job.id, "reason": reason, "attempts": job.attempts,
                        "retry_in_s": delay})
        return "failed" if final else "retry"
    heartbeat.stop()
    recorded: dict[str, Any] = {**outcome, "memories": _written(trace)}
    if report:  # the host extractor's request: its spend, or why the rules answered
        recorded["extraction"] = report
    if not queue.finish_job(job.id, worker_id, recorded):
        _log("lost", {"job": job.id, "reason": "lease_expired", "attempts": job.attempts})
        return "lost"
    said = {k: report[k] for k in ("extractor", "fallback") if report.get(k)}
    _log("done", {"job": job.id, **outcome, **said})
    return "done"


#: Most memories a finished job lists (the captures page links each).
WRITTEN_SHOWN = 20


def _written(trace: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The memories a job wrote, as the captures page links them:
    ``[{"id", "action"}]`` with ``action`` ``added``, ``updated`` or ``conflicted``."""
    names = {"add": "added", "update": "updated", "correct": "updated", "conflict": "conflicted"}
    return [{"id": str(t["id"]), "action": names[t["action"]]} for t in trace
            if t.get("id") and t.get("action") in names][:WRITTEN_SHOWN]


def drain(
    backend: MemoryBackend,
    *,
    max_jobs: int,
    worker_id: str,
    extractor: Extractor | None = None,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    max_attempts: int = MAX_ATTEMPTS,
    stop: threading.Event | None = None,
    backend_for: Callable[[ExtractJob], MemoryBackend] | None = None,
    on_result: Callable[[str], None] | None = None,
) -> int:
    """Claim and run ready extract jobs until none is ready or ``max_jobs`` were run.

    Safe to call from several threads and processes at once on one store.

    Args:
        backend: The memory backend; its job queue is found by :func:`job_queue`.
        max_jobs: Most jobs to run in this call.
        worker_id: Recorded on each claimed job (see :func:`default_worker_id`).
        extractor: Extractor to use; default :func:`~bli_memory.core.extraction.extractors.get_extractor`,
            resolved when the first job is claimed.
        lease_seconds: Lease of each claim (kept alive by a heartbeat while running).
        max_attempts: Claims allowed per job before it is ``failed``.
        stop: When set, no further job is claimed.
        backend_for: The backend a job is distilled with (default ``backend``); the
            service gives the job owner's view of its store.
        on_result: Called with each job's result (``done``, ``retry``, ``failed``,
            ``lost``), for metrics.

    Returns:
        How many jobs were claimed and run (done, retried or failed); 0 when the
        queue had nothing ready or the backend has no queue.

    Raises:
        StoreError: the queue itself cannot be read or written.
    """
    queue = job_queue(backend)
    if queue is None or max_jobs <= 0:
        return 0
    _prune(queue)
    ran = 0
    chosen = extractor
    while ran < max_jobs and not (stop is not None and stop.is_set()):
        job = queue.claim_job(worker_id, lease_seconds=lease_seconds, max_attempts=max_attempts)
        if job is None:
            break
        ran += 1
        if chosen is None:
            try:
                from bli_memory.core.extraction.extractors import get_extractor

                chosen = get_extractor()
            except BliMemoryError as exc:
                reason = exc.reason
                delay = retry_delay(job.attempts) if job.attempts < max_attempts else None
                retry_at = None
                if delay is not None:
                    retry_at = (datetime.now(UTC) + timedelta(seconds=delay)).strftime(
                        "%Y-%m-%dT%H:%M:%S.%fZ"
                    )
                queue.fail_job(job.id, worker_id, error=f"{reason}: {exc.message}"[:500], retry_at=retry_at)
                _log("failed", {"job": job.id, "reason": reason, "attempts": job.attempts,
                                "retry_in_s": delay})
                break
        result = _run_job(queue, backend_for(job) if backend_for else backend, job, worker_id=worker_id,
                          extractor=chosen, lease_seconds=lease_seconds, max_attempts=max_attempts)
        if on_result is not None:
            on_result(result)
    return ran
