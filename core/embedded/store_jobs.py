"""The durable extract-job queue (``memory_extract_jobs``): enqueue, claim with a
lease, finish, fail, prune.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from bli_memory.core.embedded.store_base import StoreBase, iso, now_iso
from bli_memory.core.memory.job_queue import ExtractJob  # the one job record, shared with the team store

__all__ = ["SQLiteJobs"]


class SQLiteJobs:
    """The file's extract-job queue (:class:`~bli_memory.core.memory.job_queue.JobQueue`): a part of
    :class:`~bli_memory.core.embedded.store.SQLiteStore` (``store.jobs``) over its connection.

    Args:
        db: The store whose connection and transactions it uses.
    """

    def __init__(self, db: StoreBase) -> None:
        self._db = db

    def enqueue_job(self, text: str, *, space: str, source: str, session_id: str | None,
                    job_id: str | None = None) -> str:
        """Write one durable ``memory_extract_jobs`` row; returns its id.

        A ``job_id`` already queued (a retried capture) writes nothing.
        """
        job_id = job_id or str(uuid.uuid4())
        with self._db._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO memory_extract_jobs (id, space, text, source, session_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (job_id, space, text, source, session_id, now_iso()),
            )
        return job_id

    def job_counts(self) -> dict[str, int]:
        """Extract jobs per state."""
        with self._db._read() as conn:
            return dict(
                conn.execute("SELECT state, count(*) FROM memory_extract_jobs GROUP BY state").fetchall()
            )

    def claim_job(self, worker_id: str, *, lease_seconds: float, max_attempts: int) -> ExtractJob | None:
        """Claim the oldest ready extract job for ``worker_id``, in one ``BEGIN IMMEDIATE``.

        Ready means ``queued`` and past its ``not_before``, or ``running`` with an
        expired lease (its worker died between claim and finish: the job is taken
        over, never lost). The write lock makes the select-and-mark atomic across
        processes, so a job is claimed by exactly one worker at a time. A job whose
        lease expired after ``max_attempts`` claims is marked ``failed`` instead.

        Args:
            worker_id: Recorded in ``claimed_by``; finish/fail/extend must name it.
            lease_seconds: The claim holds this long unless extended.
            max_attempts: Claims allowed per job.

        Returns:
            The claimed job (``attempts`` already counts this claim), or None when
            nothing is ready.
        """
        now = datetime.now(UTC)
        at = iso(now)
        until = iso(now + timedelta(seconds=lease_seconds))
        ready = (
            "(state = 'queued' AND (not_before IS NULL OR not_before <= ?)) "
            "OR (state = 'running' AND lease_expires_at <= ?)"
        )
        with self._db._read() as conn:  # an idle poll costs a read, not the write lock
            found = conn.execute(f"SELECT 1 FROM memory_extract_jobs WHERE {ready} LIMIT 1", (at, at))
            if found.fetchone() is None:
                return None
        with self._db._write() as conn:
            while True:
                row = conn.execute(
                    "SELECT id, space, text, source, session_id, attempts, created_at, state "
                    f"FROM memory_extract_jobs WHERE {ready} ORDER BY created_at, id LIMIT 1",
                    (at, at),
                ).fetchone()
                if row is None:
                    return None
                if row[7] == "running" and int(row[5]) >= max_attempts:
                    conn.execute(
                        "UPDATE memory_extract_jobs SET state = 'failed', finished_at = ?, "
                        "lease_expires_at = NULL, error = ? WHERE id = ?",
                        (at, "lease_expired: the worker stopped during every attempt", row[0]),
                    )
                    continue
                conn.execute(
                    "UPDATE memory_extract_jobs SET state = 'running', claimed_by = ?, "
                    "lease_expires_at = ?, attempts = attempts + 1, not_before = NULL WHERE id = ?",
                    (worker_id, until, row[0]),
                )
                return ExtractJob(
                    id=row[0], space=row[1], text=row[2], source=row[3], session_id=row[4],
                    attempts=int(row[5]) + 1, created_at=row[6], reclaimed=row[7] == "running",
                )

    def extend_lease(self, job_id: str, worker_id: str, *, lease_seconds: float) -> bool:
        """Push a running job's lease ``lease_seconds`` into the future.

        Returns:
            False when the job is no longer this worker's (its lease expired and
            another worker took it over).
        """
        until = iso(datetime.now(UTC) + timedelta(seconds=lease_seconds))
        with self._db._write() as conn:
            cur = conn.execute(
                "UPDATE memory_extract_jobs SET lease_expires_at = ? "
                "WHERE id = ? AND claimed_by = ? AND state = 'running'",
                (until, job_id, worker_id),
            )
            return cur.rowcount == 1

    def finish_job(self, job_id: str, worker_id: str, outcome: dict[str, Any]) -> bool:
        """Mark a claimed job ``done`` and record its outcome (JSON) on the row.

        Returns:
            False when the job is no longer this worker's; nothing is changed then.
        """
        at = now_iso()
        with self._db._write() as conn:
            cur = conn.execute(
                # The raw exchange is not kept once distilled: what was worth keeping now
                # lives in memories, and a secret the redactor missed must not linger.
                "UPDATE memory_extract_jobs SET state = 'done', outcome = ?, finished_at = ?, "
                "lease_expires_at = NULL, error = NULL, text = '' "
                "WHERE id = ? AND claimed_by = ? AND state = 'running'",
                (json.dumps(outcome, sort_keys=True), at, job_id, worker_id),
            )
            return cur.rowcount == 1

    def fail_job(self, job_id: str, worker_id: str, *, error: str, retry_at: str | None) -> bool:
        """Record a failed attempt: back to ``queued`` until ``retry_at``, or ``failed`` for good.

        Args:
            error: A short reason (no memory text, no secret).
            retry_at: UTC ISO time before which the job is not retried; None gives up.

        Returns:
            False when the job is no longer this worker's.
        """
        at = now_iso()
        with self._db._write() as conn:
            if retry_at is not None:
                cur = conn.execute(
                    "UPDATE memory_extract_jobs SET state = 'queued', not_before = ?, error = ?, "
                    "claimed_by = NULL, lease_expires_at = NULL "
                    "WHERE id = ? AND claimed_by = ? AND state = 'running'",
                    (retry_at, error, job_id, worker_id),
                )
            else:
                cur = conn.execute(
                    "UPDATE memory_extract_jobs SET state = 'failed', error = ?, finished_at = ?, "
                    "lease_expires_at = NULL WHERE id = ? AND claimed_by = ? AND state = 'running'",
                    (error, at, job_id, worker_id),
                )
            return cur.rowcount == 1

    def get_job(self, job_id: str) -> dict[str, Any] | None:
        """One job row as a dict (``outcome`` decoded), or None."""
        with self._db._read() as conn:
            cur = conn.execute("SELECT * FROM memory_extract_jobs WHERE id = ?", (job_id,))
            row = cur.fetchone()
            if row is None:
                return None
            data = dict(zip([c[0] for c in cur.description], row, strict=True))
        if data.get("outcome"):
            data["outcome"] = json.loads(data["outcome"])
        return data

    def prune_jobs(self, *, finished_before: str) -> int:
        """Delete ``done`` jobs finished before this UTC ISO time; returns how many."""
        with self._db._write() as conn:
            cur = conn.execute(
                "DELETE FROM memory_extract_jobs WHERE state = 'done' AND finished_at < ?",
                (finished_before,),
            )
            return cur.rowcount

    def recent_jobs(self, *, limit: int = 50) -> list[dict[str, Any]]:
        """The newest extract jobs, without their text (it may hold what was not yet redacted).

        Returns:
            Dicts with ``id, space, source, session_id, state, attempts, created_at,
            finished_at, error, outcome`` (``outcome`` decoded: added / updated / unchanged /
            conflicted counts for a ``done`` job, else None).
        """
        keys = ("id", "space", "source", "session_id", "state", "attempts", "created_at",
                "finished_at", "error", "outcome")
        with self._db._read() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(keys)} FROM memory_extract_jobs "
                "ORDER BY created_at DESC, id DESC LIMIT ?",
                (int(limit),),
            ).fetchall()
        jobs = [dict(zip(keys, row, strict=True)) for row in rows]
        for job in jobs:
            try:
                job["outcome"] = json.loads(job["outcome"]) if job["outcome"] else None
            except ValueError:
                job["outcome"] = None
        return jobs
