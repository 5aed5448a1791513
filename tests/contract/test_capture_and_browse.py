"""Capture, the job queue and the browsing reads, as the memory contract declares them.

Every caller reaches these through :class:`~bli_memory.core.memory.backend.MemoryBackend`
(no probing for methods): the stop hook's ``capture``, the drain's ``job_queue`` and the
memory browser's ``browse``. A backend that cannot do one still answers, honestly.
"""

from __future__ import annotations

import pytest

from bli_memory.core.errors import ConfigError

EXCHANGE = "User: the staging deploy runs at noon.\n\nAssistant: Noted."


def test_capture_keeps_the_exchange_as_one_extract_job(subject, space: str) -> None:
    backend = subject.backend
    kept = backend.capture(EXCHANGE, space=space, source="hook:claude", session_id="s-1")
    assert kept["queued"] is True
    if subject.kind == "remote":  # spooled first, then shipped within the hook's budget
        assert kept["spooled"] is False and kept["backlog"] == 0 and kept["job"]
    assert sum(backend.info(space=space)["extractJobs"].values()) == 1


def test_capture_of_a_recorded_turn_is_a_recording_not_a_job(subject, space: str) -> None:
    backend = subject.backend
    kept = backend.capture(EXCHANGE, space=space, source="hook:claude", session_id="s-1", record=True)
    assert kept["recorded"] is True and "queued" not in kept
    assert [r["text"] for r in backend.recordings(space=space)] == [EXCHANGE]
    assert sum(backend.info(space=space)["extractJobs"].values()) == 0


def test_the_job_queue_is_the_stores_own_and_none_on_the_client(subject, space: str) -> None:
    queue = subject.backend.job_queue
    if subject.kind == "remote":
        assert queue is None and subject.backend.ship_spool() is None
        return
    job_id = subject.backend.enqueue_extract(EXCHANGE, space=space, source="hook:claude")
    assert queue is not None
    if subject.kind == "embedded":  # the file holds this test's job alone
        assert queue.job_counts() == {"queued": 1}
    else:  # one database for every test: this job, by its id
        assert queue.job(job_id)["space"] == space


def test_browse_reads_a_space_as_the_person_sees_it(subject, space: str) -> None:
    backend = subject.backend
    if subject.kind == "remote":
        with pytest.raises(ConfigError, match="/ui"):
            _ = backend.browse
        return
    first = backend.save("The staging deploy runs at noon.", space=space).memory
    second = backend.save("The release train leaves on Thursdays.", space=space).memory
    browse = backend.browse
    canonical, spaces = browse.resolve_space(space)
    assert canonical == space
    assert [m.id for _, m in browse.page_live(spaces, limit=10)] == [second.id, first.id]
    seq = browse.page_live(spaces, limit=1)[0][0]
    assert [m.id for _, m in browse.page_live(spaces, before_seq=seq, limit=10)] == [first.id]
    assert dict(browse.space_counts())[space]["active"] == 2
    assert browse.owners(space) == []
    assert browse.count_by_state(spaces)["active"] == 2
    assert browse.get(first.id) == first and browse.writable(first)
    assert [m.id for m in browse.history(first.id)] == [first.id]
    assert browse.get("0b6f6c1e-4f1e-4c4a-9d61-3a6f2e8b7c10") is None


GITHUB_TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


def test_a_recorded_turn_and_a_queued_job_keep_no_secret(subject, space: str) -> None:
    """Whoever calls (the stop hook masks first; another client of the doors may not), a
    recorded turn keeps its text and labels masked and a job its labels, and a container
    tag that looks like a secret is refused."""
    from bli_memory.core.errors import InvalidInputError

    backend = subject.backend
    backend.record_turn(f"User: the CI token is {GITHUB_TOKEN}\n\nAssistant: Noted.", space=space,
                        source=f"hook:{GITHUB_TOKEN}", session_id=f"s-{GITHUB_TOKEN}")
    [kept] = backend.recordings(space=space)
    assert GITHUB_TOKEN not in str(kept) and "[REDACTED" in kept["text"]
    backend.enqueue_extract("User: we ship on Fridays.\n\nAssistant: Noted.", space=space,
                            source=f"hook:{GITHUB_TOKEN}", session_id=f"s-{GITHUB_TOKEN}")
    if subject.kind == "embedded":  # the file holds this test's job alone
        job = backend.job_queue.claim_job("w-1", lease_seconds=60, max_attempts=3)
        assert job is not None and GITHUB_TOKEN not in f"{job.source} {job.session_id}"
    for call in (lambda: backend.record_turn("User: hi\n\nAssistant: hello", space=GITHUB_TOKEN,
                                             source="hook:claude"),
                 lambda: backend.enqueue_extract("User: hi\n\nAssistant: hello", space=GITHUB_TOKEN,
                                                 source="hook:claude")):
        with pytest.raises(InvalidInputError, match="looks like a secret"):
            call()
