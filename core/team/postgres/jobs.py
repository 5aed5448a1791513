"""The team store's extract-job queue: durable rows claimed with ``FOR UPDATE SKIP LOCKED``.

Any number of service processes work one queue; a claim is a lease (default
:data:`JOB_LEASE`, extended by the drain's heartbeat), so a job whose worker died is
claimed again. :class:`PostgresJobs` is a
:class:`~bli_memory.core.memory.job_queue.JobQueue`: the service works it with the
one drain, :func:`bli_memory.core.extraction.worker.drain`.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.job_queue import ExtractJob
from bli_memory.core.team.postgres.base import PgCore, iso_utc

if TYPE_CHECKING:
    from bli_memory.core.memory.engine_writes import ExtractInput

__all__ = ["JOB_LEASE", "JOB_MAX_ATTEMPTS", "PostgresJobs"]

#: Extract job lease: a claimed job not finished by then is claimed again.
JOB_LEASE = timedelta(minutes=5)
#: Attempts before an extract job is marked ``failed``.
JOB_MAX_ATTEMPTS = 5


class PostgresJobs:
    """The database's extract-job queue (:class:`~bli_memory.core.memory.job_queue.JobQueue`): a part of
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (``backend.jobs``) over one
    person's handle.

    Args:
        pg: The person's handle (its pool, view and transactions).
    """

    def __init__(self, pg: PgCore) -> None:
        self._pg = pg

    def enqueue_extract(self, job: ExtractInput, *, space: str) -> str:
        """Write one durable ``memory_extract_jobs`` row for the canonical space of ``space``;
        returns its id.

        ``job`` was checked by the engine
        (:meth:`~bli_memory.core.memory.engine_writes.EngineWrites.checked_extract`). A job id
        of the caller's (a retried capture) is queued once; one another person holds is
        refused (InvalidInputError), never disclosed or overwritten.
        """
        text, source, session_id = job.text, job.source, job.session_id
        job_id = job.job_id or str(uuid.uuid4())
        with self._pg._tx("queue an extract job") as conn:
            view = self._pg._view(conn, space)
            cur = conn.execute(
                "INSERT INTO memory_extract_jobs (id, space, owner_id, device_id, text, source, session_id) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (job_id, view.canonical, self._pg._me(), self._pg.device_id, text, source, session_id),
            )
            if cur.rowcount == 0:
                owner = conn.execute("SELECT owner_id FROM memory_extract_jobs WHERE id = %s",
                                     (job_id,)).fetchone()
                if owner is None or owner[0] != self._pg._me():
                    raise InvalidInputError("jobId is already in use; choose another")
        return job_id

    def claim_job(self, worker_id: str, *, lease_seconds: float = JOB_LEASE.total_seconds(),
                  max_attempts: int = JOB_MAX_ATTEMPTS) -> ExtractJob | None:
        """Claim the oldest ready extract job (``FOR UPDATE SKIP LOCKED``), or None.

        Ready: ``queued`` and past its ``not_before``, or ``running`` with an expired
        lease (its worker died). The claim sets a lease of ``lease_seconds`` (default
        :data:`JOB_LEASE`). A job whose lease expired after ``max_attempts`` claims is
        marked ``failed`` instead of claimed again (as the embedded store does).
        """
        lease = timedelta(seconds=lease_seconds)
        with self._pg._tx("claim an extract job") as conn:
            conn.execute(
                "UPDATE memory_extract_jobs SET state = 'failed', finished_at = now(), "
                "lease_expires_at = NULL, error = 'lease_expired: the worker stopped during every attempt' "
                "WHERE state = 'running' AND lease_expires_at < now() AND attempts >= %s",
                (max_attempts,),
            )
            row = conn.execute(
                """
                UPDATE memory_extract_jobs SET state = 'running', claimed_by = %(w)s,
                       attempts = attempts + 1, lease_expires_at = now() + %(lease)s
                WHERE id = (
                    SELECT id FROM memory_extract_jobs
                    WHERE (state = 'queued' AND (not_before IS NULL OR not_before <= now()))
                       OR (state = 'running' AND lease_expires_at < now())
                    ORDER BY created_at, id
                    FOR UPDATE SKIP LOCKED
                    LIMIT 1
                )
                RETURNING id, space, owner_id, device_id, text, source, session_id, attempts, created_at
                """,
                {"w": worker_id, "lease": lease},
            ).fetchone()
        if row is None:
            return None
        return ExtractJob(id=str(row[0]), space=row[1], owner_id=int(row[2]),
                          device_id=str(row[3]) if row[3] else None, text=row[4], source=row[5],
                          session_id=row[6], attempts=int(row[7]), created_at=iso_utc(row[8]))

    def extend_lease(self, job_id: str, worker_id: str, *, lease_seconds: float) -> bool:
        """Push a running job's lease ``lease_seconds`` into the future; False when the job
        is no longer ``worker_id``'s."""
        with self._pg._tx("extend an extract job's lease") as conn:
            cur = conn.execute(
                "UPDATE memory_extract_jobs SET lease_expires_at = now() + %s "
                "WHERE id = %s AND claimed_by = %s AND state = 'running'",
                (timedelta(seconds=lease_seconds), job_id, worker_id),
            )
            return cur.rowcount == 1

    def finish_job(self, job_id: str, worker_id: str, outcome: dict[str, Any]) -> bool:
        """Record a job's outcome (``done``); False when the job is no longer ``worker_id``'s."""
        from psycopg.types.json import Jsonb

        with self._pg._tx("finish an extract job") as conn:
            cur = conn.execute(
                "UPDATE memory_extract_jobs SET state = 'done', outcome = %s, error = NULL, "
                "finished_at = now(), lease_expires_at = NULL "
                "WHERE id = %s AND claimed_by = %s AND state = 'running'",
                (Jsonb(outcome), job_id, worker_id),
            )
            return cur.rowcount == 1

    def fail_job(self, job_id: str, worker_id: str, *, error: str, retry_at: str | None) -> bool:
        """Record a failed attempt: ``queued`` again until ``retry_at`` (UTC ISO 8601), or
        ``failed`` for good when it is None; False when the job is no longer ``worker_id``'s."""
        final = retry_at is None
        with self._pg._tx("record an extract job failure") as conn:
            cur = conn.execute(
                "UPDATE memory_extract_jobs SET state = %s, error = %s, lease_expires_at = NULL, "
                "not_before = %s::timestamptz, "
                "finished_at = CASE WHEN %s THEN now() ELSE NULL END "
                "WHERE id = %s AND claimed_by = %s AND state = 'running'",
                ("failed" if final else "queued", error[:500], retry_at, final, job_id, worker_id),
            )
            return cur.rowcount == 1

    def job(self, job_id: str) -> dict[str, Any] | None:
        """One job's state, attempts, outcome and error (for tests and operators)."""
        with self._pg._conn("read an extract job") as conn:
            row = conn.execute(
                "SELECT state, attempts, outcome, error, space, owner_id FROM memory_extract_jobs "
                "WHERE id = %s",
                (job_id,),
            ).fetchone()
        if row is None:
            return None
        return {"state": row[0], "attempts": row[1], "outcome": row[2], "error": row[3],
                "space": row[4], "owner_id": row[5]}

    def job_counts(self) -> dict[str, int]:
        """Extract jobs per state."""
        with self._pg._conn("count extract jobs") as conn:
            return {r[0]: int(r[1]) for r in conn.execute(
                "SELECT state, count(*) FROM memory_extract_jobs GROUP BY state")}

    # --- experience log ----------------------------------------------------------------
