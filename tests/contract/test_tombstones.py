"""Tombstones cover every version of a forgotten memory, on the stores that run capture.

Automatic capture runs inside the embedded engine and inside the team service (on
Postgres), so both must name the older wording of a memory that was updated and then
forgotten; the HTTP client runs no capture of its own and offers no tombstones.
"""

from __future__ import annotations

import pytest


def test_the_versions_a_forgotten_memory_replaced_are_tombstones_too(backend, space: str) -> None:
    if backend.job_queue is None:  # capture runs on the service it talks to
        pytest.skip("this backend runs no capture: the service it talks to holds the tombstones")
    first = backend.save("The team decided the API port is 8443 for the billing service.", space=space)
    updated = backend.update("The API listens on port 8443 behind nginx.", space=space, id=first.memory.id)
    backend.forget(space=space, id=updated.memory.id)
    texts = backend.tombstones(space)
    assert texts[:2] == ["The API listens on port 8443 behind nginx.",
                         "The team decided the API port is 8443 for the billing service."]
    assert len(texts) == len(set(texts))


STAGING = "the staging port is 8443"


def _capture(backend, space: str, said: str) -> dict:
    from bli_memory.core.extraction.reconcile import distil

    trace: list[dict] = []
    counts = distil(f"User: {said}\n\nAssistant: Noted.", backend=backend, space=space,
                    source="hook:claude", session_id=None, trace=trace)
    return {"counts": counts, "trace": trace}


@pytest.mark.parametrize("restated", ["The staging port is 8,443.", "THE STAGING PORT IS 8443.",
                                      "PORT 8443 is the staging port.", "The staging port is 8\u202f443.",
                                      "The staging port is 8 443.", "The staging port is 8.443.",
                                      "The staging port is 8_443.", "The staging port is 8\u2009443."])
def test_a_forget_sticks_when_only_case_or_digit_grouping_differs(backend, space: str, restated: str) -> None:
    if backend.job_queue is None:  # capture runs on the service it talks to
        pytest.skip("this backend runs no capture: the service it talks to holds the tombstones")
    saved = backend.save(STAGING, space=space)
    backend.forget(space=space, id=saved.memory.id)
    got = _capture(backend, space, restated)
    assert got["counts"]["added"] == 0 and got["counts"]["unchanged"] >= 1, got
    assert [t["suppressed"] for t in got["trace"]] == [True] * len(got["trace"]), got
    # The agent asks for it explicitly: that is saved.
    again = backend.save(restated, space=space)
    assert again.status == "created" and again.memory is not None


@pytest.mark.parametrize("restated", ["The staging port is 8,443.", "THE STAGING PORT IS 8443."])
def test_a_purge_sticks_when_only_case_or_digit_grouping_differs(backend, space: str, restated: str) -> None:
    if backend.job_queue is None:  # capture runs on the service it talks to
        pytest.skip("this backend runs no capture: the service it talks to holds the purge marks")
    saved = backend.save("We decided the staging port is 8443 for the load balancer.", space=space)
    assert backend.purge(saved.memory.id) == 1
    got = _capture(backend, space, restated)
    assert got["counts"]["added"] == 0 and got["counts"]["unchanged"] >= 1, got


def test_another_value_or_another_name_is_still_captured_after_a_forget(backend, space: str) -> None:
    if backend.job_queue is None:  # capture runs on the service it talks to
        pytest.skip("this backend runs no capture: the service it talks to holds the tombstones")
    lead = "We decided the tech lead for the payments team is Alice."
    backend.forget(space=space, id=backend.save(lead, space=space).memory.id)
    backend.forget(space=space, id=backend.save(STAGING, space=space).memory.id)
    bob = "We decided the tech lead for the payments team is Bob."
    assert _capture(backend, space, bob)["counts"]["added"] == 1
    assert _capture(backend, space, "The staging port is 9,443.")["counts"]["added"] == 1
    # A decimal or a version is not a grouped number (number_forms.ungroup).
    backend.forget(space=space, id=backend.save("The staging build is 8.4", space=space).memory.id)
    backend.forget(space=space, id=backend.save("The staging release is 1.2.3", space=space).memory.id)
    assert _capture(backend, space, "The staging build is 84.")["counts"]["added"] == 1
    assert _capture(backend, space, "The staging release is 123.")["counts"]["added"] == 1


#: A forgotten fact, and facts that share its value but name another subject in its place.
OTHER_SUBJECT = [
    ("The staging port is 8443.", ["The production port is 8443.", "And the metrics port is 8443."]),
    ("The staging database is Postgres 16.", ["The production database is Postgres 16."]),
]


@pytest.mark.parametrize("how", ["forget", "purge"])
@pytest.mark.parametrize(("gone", "others"), OTHER_SUBJECT)
def test_a_fact_that_shares_only_a_value_with_a_forgotten_one_is_captured(
        backend, space: str, how: str, gone: str, others: list[str]) -> None:
    if backend.job_queue is None:  # capture runs on the service it talks to
        pytest.skip("this backend runs no capture: the service it talks to holds the tombstones")
    saved = backend.save(gone, space=space)
    if how == "forget":
        backend.forget(space=space, id=saved.memory.id)
    else:
        assert backend.purge(saved.memory.id) == 1
    restated = gone.replace("8443", "8 443").replace("The staging", "Reminder: the staging")
    said = " ".join([restated, *others])
    got = _capture(backend, space, said)
    assert got["counts"]["added"] == len(others) and got["counts"]["unchanged"] == 1, got
    assert [bool(t.get("suppressed")) for t in got["trace"]] == [True] + [False] * len(others), got


def _forgotten_records(space: str, texts: list[str]) -> list[dict]:
    """Forgotten export records, the first the oldest forget."""
    import uuid

    out = []
    for n, text in enumerate(texts):
        at = f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000000Z"
        out.append({"id": str(uuid.uuid4()), "space": space, "content": text, "createdAt": at,
                    "updatedAt": at, "forgottenAt": at, "state": "forgotten", "version": 1})
    return out


def test_an_old_forget_sticks_however_many_forgets_came_after_it(backend, space: str) -> None:
    if backend.job_queue is None:  # capture runs on the service it talks to
        pytest.skip("this backend runs no capture: the service it talks to holds the tombstones")
    from bli_memory.core.extraction.tombstones import TOMBSTONE_LIMIT

    newer = [f"We decided service {n} listens on port {10000 + n}." for n in range(TOMBSTONE_LIMIT + 100)]
    backend.import_records(_forgotten_records(space, ["We decided the staging port is 8443.", *newer]))
    assert len(backend.tombstones(space, limit=None)) == TOMBSTONE_LIMIT + 101
    assert len(backend.tombstones(space, limit=3)) == 3
    for restated in ("We decided the staging port is 8443.", "Reminder: the staging port is 8,443."):
        got = _capture(backend, space, restated)
        assert got["counts"]["added"] == 0 and got["counts"]["unchanged"] == 1, (restated, got)
    assert _capture(backend, space, "We decided the staging port is 9443.")["counts"]["added"] == 1


def test_every_purge_mark_is_offered_to_capture(backend, space: str) -> None:
    if backend.job_queue is None:  # capture runs on the service it talks to
        pytest.skip("this backend runs no capture: the service it talks to holds the purge marks")
    for n in range(3):
        saved = backend.save(f"The cache of service {n} holds {n + 5} GB.", space=space)
        assert backend.purge(saved.memory.id) == 1
    assert len(backend.purge_marks(space, limit=None)) == 3
    assert len(backend.purge_marks(space, limit=2)) == 2
