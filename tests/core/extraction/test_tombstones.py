"""The tombstone check is complete: every tombstone and purge mark of a space counts.

The stores' side (every tombstone offered, on SQLite and Postgres) is in
``tests/contract/test_tombstones.py``; here the rule itself, on texts and marks.
"""

from __future__ import annotations

import json

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


#: The purge mark of "the staging port is 8443" as a store kept it (``purge_marks.mark``)
#: before marks held ``forms`` or ``rules`` (lower case, numbers and compatibility
#: characters hashed as written). Made by that code's ``fingerprint`` with this salt; a
#: literal, so a change of the hashing or of how a mark is read cannot pass unseen.
MARK_WITHOUT_FORMS = (
    '{"negated": false, "norm": "2c3aea0575594865", "salt": "00112233445566778899aabbccddeeff", '
    '"specifics": ["a41d0c983fbd9199"], "terms": ["27165c8358b68287", "56a135b4f1cf3520", '
    '"a41d0c983fbd9199"]}'
)

#: The purge mark of "the staging port is 8 443" as a store kept it before dot and
#: plain-space grouping (no ``rules``): "8 443" hashed as written, as two values. A literal,
#: as :data:`MARK_WITHOUT_FORMS`.
MARK_BEFORE_SPACE_GROUPING = (
    '{"forms": ["441848c170ae492a", "45bf5958950adedc", "64f5d76b4a7b1553", "80e4fe2c34375940", '
    '"ab95c433193754ce", "d2b57ae1baaa608f"], "negated": false, "norm": "7c08d85d232b81a2", '
    '"salt": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "specifics": ["64f5d76b4a7b1553", '
    '"80e4fe2c34375940"], "terms": ["45bf5958950adedc", "64f5d76b4a7b1553", "80e4fe2c34375940", '
    '"90ea0b86cacd0f40"]}'
)


def test_a_mark_of_another_shape_is_ignored_and_an_old_mark_without_forms_still_counts() -> None:
    old = json.loads(MARK_WITHOUT_FORMS)
    gone = Forgotten([], [{"salt": "zz"}, {"nothing": 1}, "text", old])  # type: ignore[list-item]
    assert gone.suppresses("The staging port is 8443.")
    assert gone.suppresses("PORT 8443 is the staging port.")  # the shouted word is one of its terms
    assert len(gone) == 1


GROUPED = ["8 443", "8.443", "8_443", "8\u2009443", "8\u202f443", "8\u00a0443", "8'443", "8,443"]


def test_a_number_written_with_any_digit_grouping_is_the_forgotten_number() -> None:
    gone = Forgotten(["the staging port is 8443"], [])
    for written in GROUPED:
        assert gone.suppresses(f"the staging port is {written}"), written
        assert gone.suppresses(f"Reminder: the staging port is {written}."), written
    grouped = Forgotten(["the staging port is 8 443"], [fingerprint("the cache holds 1.234.567 rows")])
    assert grouped.suppresses("The staging port is 8443.")
    assert grouped.suppresses("the cache holds 1234567 rows")
    assert grouped.suppresses("the cache holds 1 234 567 rows")


def test_numbers_that_are_not_one_grouped_number_stay_apart() -> None:
    pairs = [("8.4", "84"), ("8.44", "844"), ("1.2.3", "123"), ("1.100.0", "11000"),
             ("2024.01.15", "20240115"), ("555 123 4567", "5551234567"), ("8.443.5", "84435")]
    for forgotten, said in pairs:
        for a, b in ((forgotten, said), (said, forgotten)):
            gone = Forgotten([f"the staging port is {a}"], [fingerprint(f"the staging port is {a}")])
            assert not gone.suppresses(f"the staging port is {b}"), (a, b)
    assert not Forgotten(["the tag is v1234"], []).suppresses("the tag is v1.234")
    assert not Forgotten(["we open ports 80443"], []).suppresses("we open ports 80, 443")


def test_a_purge_mark_made_before_dot_and_space_grouping_still_counts() -> None:
    old = json.loads(MARK_BEFORE_SPACE_GROUPING)  # "8 443" read as written
    assert Forgotten([], [old]).suppresses("The staging port is 8 443.")
    assert not Forgotten([], [old]).suppresses("The staging port is 9 443.")


def test_a_subject_word_in_place_of_another_is_another_fact_on_texts_and_marks() -> None:
    for old in ("The staging port is 8443.", "We decided staging uses port 8443 for the load balancer."):
        for gone in (Forgotten([old], []), Forgotten([], [fingerprint(old)])):
            assert not gone.suppresses("The production port is 8443."), old
            assert not gone.suppresses("The metrics port is 8443."), old
            assert not gone.suppresses("Reminder: the metrics port is 8 443."), old
            # the same words in another order, case or grouping; adding or dropping words only
            assert gone.suppresses("PORT 8,443 is the staging port."), old
            assert gone.suppresses("Reminder: the staging port is 8443."), old  # a framing word
            assert gone.suppresses("The staging port is 8443 for the load balancer."), old
    database = "The staging database is Postgres 16."
    gone = Forgotten([database], [fingerprint(database)])
    assert not gone.suppresses("The production database is Postgres 16.")
    assert gone.suppresses("Postgres 16 is the staging database.")


def test_a_port_with_its_protocol_or_a_zero_fraction_is_the_forgotten_number() -> None:
    for old in ("The staging port is 8443.", "The staging port is 8443/tcp."):
        gone = Forgotten([old], [fingerprint(old)])
        for said in ("The staging port is 8443/TCP.", "The staging port is 8443.0.",
                     "Staging port: 8443/tcp"):
            assert gone.suppresses(said), (old, said)
    gone = Forgotten(["The staging port is 8443/tcp."], [fingerprint("The staging port is 8443/tcp.")])
    assert not gone.suppresses("The staging port is 8443/udp.")  # another protocol in its place
    assert not Forgotten(["The staging port is 8443.5."], []).suppresses("The staging port is 8443.")
    assert not Forgotten(["We run version 2.0.1."], []).suppresses("We run version 2.1.")


def test_a_dot_in_a_version_or_a_quantity_is_no_grouping() -> None:
    pairs = [("The p99 latency is 1,250 ms.", "The p99 latency is 1.250 ms."),
             ("We pin Version 1234.", "We pin Version 1.234."),
             ("We pin Python 3120.", "We pin Python 3.120."),
             ("A lookup takes 1,250 \u00b5s.", "A lookup takes 1.250 \u00b5s.")]  # NFKC: the micro sign is mu
    for a, b in pairs:
        for forgotten, said in ((a, b), (b, a)):
            assert not Forgotten([forgotten], [fingerprint(forgotten)]).suppresses(said), (forgotten, said)
            assert Forgotten([forgotten], [fingerprint(forgotten)]).suppresses(forgotten.upper()), forgotten
    # Elsewhere a dot still groups, and a space or comma before a unit does too.
    assert Forgotten(["The p99 latency is 1250 ms."], []).suppresses("The p99 latency is 1 250 ms.")
    assert Forgotten(["The cache holds 1234567 rows."], []).suppresses("The cache holds 1.234.567 rows.")
