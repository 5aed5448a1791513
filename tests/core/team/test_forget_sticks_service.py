"""A forget sticks on the team service too: its job drain runs the same distil (real Postgres)."""

from __future__ import annotations

from typing import Any

from bli_memory.core.team.service.app import run_extract_jobs

DECISION = "We decided the public API listens on port 8443 because the load balancer expects it."
EXCHANGE = f"User: {DECISION}\n\nAssistant: Noted."


def _live(backend: Any, space: str) -> list[str]:
    return [m.content for m in backend.profile(space=space, limit=50).recent]


def test_a_job_queued_before_the_forget_does_not_bring_it_back(admin: Any, new_person, space: str) -> None:
    person = new_person()
    backend = admin.for_person(admin.ensure_person(person.name))
    first = backend.enqueue_extract(EXCHANGE, space=space, source="hook:claude")
    # Drain everything pending (other tests share this database's queue), so the
    # first job is surely done before the second is queued.
    assert run_extract_jobs(admin, worker="w", max_jobs=1000) >= 1
    assert admin.jobs.job(first)["outcome"]["added"] == 1
    (content,) = [c for c in _live(backend, space) if "8443" in c]
    second = backend.enqueue_extract(EXCHANGE, space=space, source="hook:claude")

    backend.forget(space=space, content=content)
    assert run_extract_jobs(admin, worker="w", max_jobs=1000) >= 1
    outcome = admin.jobs.job(second)["outcome"]
    assert outcome["added"] == 0 and outcome["unchanged"] == 1, outcome
    assert not [c for c in _live(backend, space) if "8443" in c]

    later = backend.enqueue_extract("User: Reminder: " + DECISION + "\n\nAssistant: Thanks.", space=space,
                                    source="hook:claude")
    run_extract_jobs(admin, worker="w", max_jobs=1000)
    assert admin.jobs.job(later)["outcome"]["added"] == 0
    assert not [c for c in _live(backend, space) if "8443" in c]

    saved = backend.save(content, space=space)  # asked for explicitly: saved
    assert saved.memory is not None and saved.memory.content == content


def test_a_purge_sticks_against_a_queued_restatement_and_keeps_no_text(admin: Any, new_person,
                                                                       space: str) -> None:
    person = new_person()
    backend = admin.for_person(admin.ensure_person(person.name))
    staging = "We decided staging uses port 8443 for the load balancer."
    first = backend.enqueue_extract(f"User: {staging}\n\nAssistant: Noted.", space=space,
                                    source="hook:claude")
    run_extract_jobs(admin, worker="w", max_jobs=1000)
    assert admin.jobs.job(first)["outcome"]["added"] == 1
    (memory,) = [m for m in backend.profile(space=space, limit=50).recent if "8443" in m.content]
    queued = backend.enqueue_extract("User: Reminder: the staging port is 8443.\n\nAssistant: Right.",
                                     space=space, source="hook:claude")

    assert backend.purge(memory.id) == 1
    run_extract_jobs(admin, worker="w", max_jobs=1000)
    outcome = admin.jobs.job(queued)["outcome"]
    assert outcome["added"] == 0 and outcome["unchanged"] == 1, outcome
    assert not [c for c in _live(backend, space) if "8443" in c]

    with admin._conn("read marks") as conn:  # what the purge left: hashes, no words
        marks = [str(r[0]) for r in conn.execute(
            "SELECT mark::text FROM memory_purge_marks WHERE space = %s", (space,))]
    assert len(marks) == 1 and "balancer" not in marks[0] and "8443" not in marks[0]
    other = admin.for_person(admin.ensure_person(new_person().name))
    assert other.purge_marks(space) == []  # marks are the owner's, like the tombstones
