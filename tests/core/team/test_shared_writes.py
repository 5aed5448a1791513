"""Writes between people who share spaces, on the real Postgres store: no deadlock when two
people change each other's rows at once, no "no longer live" when a row's owner changes it
meanwhile, a writable row preferred to a read-only one, and a retried forget never another
person's."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest


def _person(admin: Any, name: str) -> tuple[str, Any]:
    """A new person's name and their handle on the store."""
    name = f"{name}-{uuid.uuid4().hex[:8]}"
    return name, admin.for_person(admin.ensure_person(name))


@pytest.fixture
def pair(admin: Any, space: str) -> tuple[Any, Any]:
    """Alice and Bob, each sharing the space with the other for writing."""
    (a, alice), (b, bob) = _person(admin, "alice"), _person(admin, "bob")
    admin.share_space(owner=a, space=space, grantee=b, access="write")
    admin.share_space(owner=b, space=space, grantee=a, access="write")
    return alice, bob


def test_two_people_changing_each_others_rows_at_once_both_get_through(pair: tuple[Any, Any],
                                                                         space: str) -> None:
    alice, bob = pair
    rows = {who: who.save(f"Row {n} of {i}.", space=space, custom_id=f"k{i}-{n}").memory
            for i, who in enumerate((alice, bob)) for n in range(1)}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def edit(me: Any, theirs: Any, tag: str) -> None:
        start.wait()
        try:
            for n in range(15):  # each updates the other's row, again and again
                me.update(f"{tag} edit {n}.", space=space, custom_id=theirs.custom_id)
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever it was
            errors.append(exc)

    threads = [threading.Thread(target=edit, args=(alice, rows[bob], "alice")),
               threading.Thread(target=edit, args=(bob, rows[alice], "bob"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for row in rows.values():
        chain = alice.history(row.id)
        assert [m.version for m in chain] == list(range(16, 0, -1))
        assert [m.state for m in chain].count("active") == 1


def test_a_save_under_a_key_another_person_is_updating_waits_and_writes(pair: tuple[Any, Any],
                                                                        space: str) -> None:
    alice, bob = pair
    alice.save("The key's first text.", space=space, custom_id="shared-key")
    errors: list[BaseException] = []

    def run(who: Any, tag: str) -> None:
        try:
            for n in range(10):
                who.save(f"{tag} says {n}.", space=space, custom_id="shared-key")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(alice, "alice")),
               threading.Thread(target=run, args=(bob, "bob"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    live = [m for m in alice.list_memories(space=space, limit=100) if m.custom_id == "shared-key"]
    assert len(live) == 1 and live[0].version == 21


def test_a_writable_row_is_chosen_over_a_read_only_one_and_a_retry_is_never_anothers(
        admin: Any, space: str) -> None:
    (a, alice), (b, bob), (c, carol) = _person(admin, "alice"), _person(admin, "bob"), _person(admin, "carol")
    admin.share_space(owner=a, space=space, grantee=b, access="write")
    admin.share_space(owner=c, space=space, grantee=b, access="read")
    mine = alice.save("Deploys go out on Tuesdays.", space=space, custom_id="deploy-day").memory
    carol.save("Deploys go out on Tuesdays.", space=space, custom_id="deploy-day")
    done = bob.update("Deploys go out on Wednesdays.", space=space, custom_id="deploy-day")
    assert done.previous.id == mine.id
    since = time.time()
    carol.forget(space=space, content="Deploys go out on Tuesdays.")  # carol's own row
    assert bob.forgotten_by(space=space, since=since, content="Deploys go out on Tuesdays.") is None
    assert bob.forgotten_by(space=space, since=since, query="Deploys go out on Tuesdays.") is None
