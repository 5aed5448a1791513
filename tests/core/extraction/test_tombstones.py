"""The tombstone check is complete: every tombstone and purge mark of a space counts.

The stores' side (every tombstone offered, on SQLite and Postgres) is in
``tests/contract/test_tombstones.py``; here the rule itself, on texts and marks.
"""

from __future__ import annotations

from bli_memory.core.extraction.tombstones import TOMBSTONE_LIMIT, Forgotten, fingerprint, restates_mark

OLD = "We decided the staging port is 8443 for the load balancer."
NEWER = [f"We decided service {n} listens on port {10000 + n}." for n in range(TOMBSTONE_LIMIT + 50)]


def test_an_old_tombstone_past_the_window_still_suppresses() -> None:
    gone = Forgotten([*reversed(NEWER), OLD], [])  # newest first: OLD is the oldest
    assert gone.suppresses(OLD)
    assert gone.suppresses("we decided the staging port is 8,443 for the load balancer")  # exact, normalised
    assert gone.suppresses("Reminder: the staging port is 8443.")  # the rule, past the window
    assert not gone.suppresses("We decided the staging port is 9443 for the load balancer.")
    assert not gone.suppresses("The load balancer expects health checks on /healthz.")


def test_an_old_purge_mark_past_the_window_still_suppresses() -> None:
    marks = [fingerprint(t) for t in [*reversed(NEWER), OLD]]
    gone = Forgotten([], marks)
    assert gone.suppresses(OLD)
    assert gone.suppresses("Reminder: the staging port is 8,443.")
    assert gone.suppresses("THE STAGING PORT IS 8443 FOR THE LOAD BALANCER")
    assert not gone.suppresses("We decided the staging port is 9443 for the load balancer.")
    assert restates_mark("Reminder: the staging port is 8443.", marks)


def test_a_mark_of_another_shape_is_ignored_and_an_old_mark_without_forms_still_counts() -> None:
    old = fingerprint("the staging port is 8443")
    del old["forms"]  # a mark made before forms were kept
    gone = Forgotten([], [{"salt": "zz"}, {"nothing": 1}, "text", old])  # type: ignore[list-item]
    assert gone.suppresses("The staging port is 8443.")
    assert gone.suppresses("PORT 8443 is the staging port.")  # the shouted word is one of its terms
    assert len(gone) == 1
