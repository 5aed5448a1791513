"""The memory tool contract, with identical expectations for every backend.

Each test runs three times (see ``conftest.py``): the embedded SQLite engine, the
Postgres store, and the HTTP client against the real service. A difference in
behaviour between the stores is a failure here.
"""

from __future__ import annotations

import base64
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.models import ForgetResult, SaveResult, SearchResult, UpdateResult


def test_save_then_recall_by_meaning(backend, space: str) -> None:
    res = backend.save(
        "The team chose Postgres for the shared memory because it already runs our billing.",
        space=space,
        metadata={"kind": "decision"},
    )
    assert isinstance(res, SaveResult)
    assert res.status == "created" and res.space == space
    assert res.memory is not None and res.memory.version == 1 and res.memory.state == "active"
    assert res.memory.metadata == {"kind": "decision"}
    uuid.UUID(res.memory.id)

    found = backend.search("which database did we pick for team memory?", space=space)
    assert isinstance(found, SearchResult)
    assert found.space == space and space in found.spaces
    assert [h.memory.id for h in found.hits] == [res.memory.id]
    hit = found.hits[0]
    assert hit.similarity is not None and 0.3 < hit.similarity <= 1.0
    assert "vector" in hit.channels


def test_identical_content_is_one_memory(backend, space: str) -> None:
    first = backend.save("Run the linter before every commit.", space=space)
    again = backend.save("  Run the linter before every commit.  ", space=space)
    assert again.status == "duplicate"
    assert again.memory.id == first.memory.id
    assert len(backend.search("linter commit", space=space).hits) == 1


def test_identifier_matches_lexically(backend, space: str) -> None:
    backend.save("Deploys to eu-west-1 fail until BLI-3580 is merged.", space=space)
    backend.save("The getUserName helper lives in accounts/names.py.", space=space)
    backend.save("Lunch is at noon on Fridays.", space=space)

    res = backend.search("BLI-3580", space=space)
    assert res.hits and "BLI-3580" in res.hits[0].memory.content
    assert res.hits[0].exact_keyword

    res = backend.search("getUserName", space=space)
    assert res.hits and "getUserName" in res.hits[0].memory.content
    assert "keyword_all" in res.hits[0].channels


def test_zero_hits_is_a_normal_answer(backend, space: str) -> None:
    backend.save("The staging database is refreshed every Monday.", space=space)
    assert backend.search("", space=space).hits == ()
    assert backend.search("   ", space=space).hits == ()
    assert backend.search("zebra migration patterns across the serengeti", space=space).hits == ()


def test_spaces_do_not_leak(backend, space: str) -> None:
    backend.save("Only this project uses tabs for indentation.", space=space)
    other = space + "_other"
    assert backend.search("tabs indentation", space=other).hits == ()
    assert backend.profile(space=other).recent == ()


def test_custom_id_upserts_and_keeps_history(backend, space: str) -> None:
    first = backend.save("Release train leaves on Tuesday.", space=space, custom_id="release-day")
    second = backend.save("Release train leaves on Wednesday.", space=space, custom_id="release-day")
    assert second.status == "updated"
    assert second.previous is not None and second.previous.id == first.memory.id
    assert second.memory.version == 2 and second.memory.supersedes == first.memory.id
    assert second.memory.custom_id == "release-day"

    same = backend.save("Release train leaves on Wednesday.", space=space, custom_id="release-day")
    assert same.status == "duplicate" and same.memory.id == second.memory.id

    history = backend.history(first.memory.id)
    assert [m.id for m in history] == [second.memory.id, first.memory.id]
    assert [m.state for m in history] == ["active", "superseded"]

    hits = backend.search("when does the release train leave?", space=space).hits
    assert [h.memory.content for h in hits] == ["Release train leaves on Wednesday."]


def test_update_replaces_and_links_versions(backend, space: str) -> None:
    saved = backend.save("The cache TTL is 60 seconds.", space=space).memory
    res = backend.update("The cache TTL is 300 seconds.", space=space, id=saved.id)
    assert isinstance(res, UpdateResult)
    assert res.status == "updated"
    assert res.previous.id == saved.id
    assert res.memory.version == 2 and res.memory.supersedes == saved.id

    unchanged = backend.update("The cache TTL is 300 seconds.", space=space, id=res.memory.id)
    assert unchanged.status == "unchanged" and unchanged.memory.id == res.memory.id

    by_custom = backend.save("Default branch is main.", space=space, custom_id="branch").memory
    res2 = backend.update("Default branch is trunk.", space=space, custom_id="branch")
    assert res2.previous.id == by_custom.id and res2.memory.custom_id == "branch"

    contents = [h.memory.content for h in backend.search("cache TTL seconds", space=space).hits]
    assert "The cache TTL is 300 seconds." in contents
    assert "The cache TTL is 60 seconds." not in contents


def test_update_refuses_what_it_cannot_do(backend, space: str) -> None:
    saved = backend.save("Tests run in parallel.", space=space).memory
    with pytest.raises(InvalidInputError):
        backend.update("x", space=space)
    with pytest.raises(InvalidInputError):
        backend.update("x", space=space, id=saved.id, custom_id="c")
    with pytest.raises(InvalidInputError):
        backend.update("   ", space=space, id=saved.id)
    with pytest.raises(NotFoundError):
        backend.update("x", space=space, id=str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        backend.update("x", space=space, custom_id="never-saved")
    with pytest.raises(NotFoundError):  # the right id, the wrong space
        backend.update("x", space=space + "_elsewhere", id=saved.id)


def test_forget_by_id_content_and_close_match(backend, space: str) -> None:
    a = backend.save("The VPN password rotates monthly.", space=space).memory
    b = backend.save("Code review needs two approvals.", space=space).memory
    c = backend.save("Integration tests need Docker running locally.", space=space).memory

    res = backend.forget(space=space, id=a.id)
    assert isinstance(res, ForgetResult)
    assert res.matched_by == "id" and res.memory.id == a.id and res.memory.state == "forgotten"
    assert res.memory.forgotten_at

    res = backend.forget(space=space, content="Code review needs two approvals.")
    assert res.matched_by == "content" and res.memory.id == b.id

    res = backend.forget(space=space, query="Integration tests need Docker running locally")
    assert res.matched_by == "query" and res.memory.id == c.id
    assert res.similarity is not None and res.similarity >= 0.85

    assert backend.search("VPN password", space=space).hits == ()
    assert backend.search("code review approvals", space=space).hits == ()
    assert backend.history(a.id)[0].state == "forgotten"


def test_forget_never_guesses(backend, space: str) -> None:
    backend.save("Feature flags live in LaunchDarkly.", space=space)
    with pytest.raises(NotFoundError):
        backend.forget(space=space, query="what time is the standup meeting")
    with pytest.raises(NotFoundError):
        backend.forget(space=space, id=str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        backend.forget(space=space, content="Feature flags live somewhere else.")
    with pytest.raises(InvalidInputError):
        backend.forget(space=space)
    with pytest.raises(InvalidInputError):
        backend.forget(space=space, id="x", query="y")
    assert len(backend.search("feature flags", space=space).hits) == 1


def test_forgotten_memory_can_be_saved_again(backend, space: str) -> None:
    first = backend.save("Use UTC in every log line.", space=space).memory
    backend.forget(space=space, id=first.id)
    again = backend.save("Use UTC in every log line.", space=space)
    assert again.status == "created"
    assert again.memory.id != first.id


def test_a_forget_whose_answer_was_lost_is_found_as_done_or_not_at_all(subject, space: str) -> None:
    # forgotten_by answers a forget run again (its answer lost with the daemon) as it was
    # answered: the stores (the engine's rule) can tell; the service's client answers None, and
    # the caller runs the forget. Never another memory's forget, nor one done before the
    # request was sent.
    backend = subject.backend
    backend.save("Staging deploys need the VPN on.", space=space)
    gone = backend.save("Code review needs two approvals.", space=space).memory
    since = time.time()
    backend.forget(space=space, content="Code review needs two approvals.")

    found = backend.forgotten_by(space=space, since=since, content="Code review needs two approvals.")
    by_query = backend.forgotten_by(space=space, since=since, query="Code review needs two approvals.")
    if subject.kind in ("embedded", "postgres"):
        assert found is not None and found.matched_by == "content" and found.memory.id == gone.id
        assert found.memory.state == "forgotten"
        assert by_query is not None and by_query.matched_by == "query" and by_query.memory.id == gone.id
    else:
        assert found is None and by_query is None
    assert backend.forgotten_by(space=space, since=since, content="Staging deploys need the VPN on.") is None
    later = time.time() + 60
    assert backend.forgotten_by(space=space, since=later, content="Code review needs two approvals.") is None


def test_aliases_answer_from_every_tag_and_save_to_the_canonical(subject, space: str) -> None:
    backend = subject.backend
    alias = space + "_vendor"
    subject.add_alias(alias, space)
    backend.save("Imported from the vendor: the on-call rotation is weekly.", space=space)

    res = backend.search("on-call rotation", space=alias)
    assert res.space == space
    assert set(res.spaces) == {space, alias}
    assert len(res.hits) == 1

    saved = backend.save("Pager duty hands over on Monday mornings.", space=alias)
    assert saved.status == "created"
    assert saved.space == space and saved.memory.space == space


def test_profile_has_facts_and_recent_context(backend, space: str) -> None:
    backend.save("Prefers small pull requests.", space=space, metadata={"kind": "preference"})
    backend.save("Fixed the flaky login test today.", space=space)
    backend.save("Convention: snake_case for module names.", space=space, metadata={"kind": "convention"})
    profile = backend.profile(space=space)
    assert profile.space == space
    assert [m.content for m in profile.facts] == [
        "Convention: snake_case for module names.",
        "Prefers small pull requests.",
    ]
    assert [m.content for m in profile.recent] == [
        "Convention: snake_case for module names.",
        "Fixed the flaky login test today.",
        "Prefers small pull requests.",
    ]
    assert len(backend.profile(space=space, limit=1).recent) == 1

    res = backend.search("pull requests", space=space, include_profile=True)
    assert res.profile is not None and len(res.profile.recent) == 3


def test_a_durable_fact_stays_in_the_profile_however_many_memories_follow(backend, space: str) -> None:
    # The profile rule (core/memory/retrieval_writes.py PROFILE_KINDS): facts of any age.
    # A store that looked only at its newest rows (Postgres took max(limit * 5, 50))
    # would lose this preference once 60 ordinary memories came after it.
    old = backend.save("Prefers tabs over spaces in every repository.", space=space,
                       metadata={"kind": "Preference"})
    for n in range(60):
        backend.save(f"Worked on ticket OPS-{n} in the afternoon.", space=space)
    newer = backend.save("Decision: releases are cut on Thursdays.", space=space,
                         metadata={"kind": "decision"})
    profile = backend.profile(space=space)
    assert [m.id for m in profile.facts] == [newer.memory.id, old.memory.id]
    assert len(profile.recent) == 10 and profile.recent[0].id == newer.memory.id
    assert [m.id for m in backend.profile(space=space, limit=1).facts] == [newer.memory.id]

    res = backend.search("which indentation", space=space, include_profile=True)
    assert res.profile is not None
    assert [m.id for m in res.profile.facts] == [newer.memory.id, old.memory.id]

    backend.forget(space=space, id=old.memory.id)
    assert [m.id for m in backend.profile(space=space).facts] == [newer.memory.id]


def _soon(seconds: float = 1.5) -> tuple[str, float]:
    """An expiry ``seconds`` from now (a save refuses one in the past), and when it passes
    on ``time.monotonic``'s clock; :func:`_until` waits for it."""
    when = datetime.now(UTC) + timedelta(seconds=seconds)
    return when.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z", time.monotonic() + seconds


def _until(passes: float) -> None:
    time.sleep(max(0.0, passes - time.monotonic()) + 0.05)


def test_profile_facts_follow_updates_and_leave_when_expired(backend, space: str) -> None:
    expiry, passes = _soon()
    first = backend.save("Convention: one commit per change.", space=space, metadata={"kind": "convention"})
    backend.save("Preference: dark mode.", space=space, metadata={"kind": "preference"}, expires_at=expiry)
    backend.save("Note: the build took four minutes.", space=space, metadata={"kind": "note"})
    updated = backend.update("Convention: one commit per logical change.", space=space, id=first.memory.id)
    _until(passes)
    assert [m.content for m in backend.profile(space=space).facts] == [updated.memory.content]


def test_expired_memories_leave_search_and_profile(backend, space: str) -> None:
    expiry, passes = _soon()
    backend.save("The conference discount code is valid.", space=space, expires_at=expiry)
    backend.save(
        "The office wifi is called guest-net.", space=space, expires_at="2999-01-01T00:00:00.000000Z"
    )
    assert len(backend.search("discount code wifi", space=space).hits) == 2  # both live until then
    _until(passes)
    assert [h.memory.content for h in backend.search("discount code wifi", space=space).hits] == [
        "The office wifi is called guest-net."
    ]
    assert [m.content for m in backend.profile(space=space).recent] == [
        "The office wifi is called guest-net."
    ]


def test_saving_an_expired_fact_again_brings_it_back(backend, space: str) -> None:
    """An expired memory is out of the live set: the same text saved again is a new live
    memory (``created``), found by search, never a ``duplicate`` of a row no one sees."""
    backend.save("The deploy window opens at noon.", space=space)  # model and rules loaded first
    expiry, passes = _soon()
    first = backend.save("The staging database is read-only this week.", space=space, expires_at=expiry)
    same = backend.save("The staging database is read-only this week.", space=space, expires_at=expiry)
    assert same.status == "duplicate" and same.memory.id == first.memory.id
    _until(passes)
    again = backend.save("The staging database is read-only this week.", space=space)
    assert again.status == "created" and again.memory.id != first.memory.id
    assert [h.memory.id for h in backend.search("staging database read-only", space=space).hits] == [
        again.memory.id]
    assert backend.save("The staging database is read-only this week.", space=space).status == "duplicate"


def test_an_expired_memory_is_not_live_to_update_or_forget_but_its_key_brings_it_back(
        backend, space: str) -> None:
    """Past its expiry a memory is out of the live set for every write, on every store (the
    engine's one rule): get, update and forget by id or text find nothing, and a save under
    its ``customId``, even of the same text, writes a new live version over it. A save of
    the same text that would live longer than its live twin gives that memory the later
    expiry, so nothing said to be remembered is lost when the twin expires."""
    backend.save("The deploy window opens at noon.", space=space)  # model and rules loaded first
    expiry, passes = _soon()
    first = backend.save("The freeze lasts until Friday.", space=space, custom_id="freeze", expires_at=expiry)
    brief = backend.save("Staging is read-only today.", space=space, expires_at=expiry)
    kept = backend.save("Staging is read-only today.", space=space)
    assert kept.status == "updated" and kept.previous is not None
    assert kept.previous.id == brief.memory.id and kept.memory.expires_at is None
    _until(passes)
    with pytest.raises(NotFoundError):
        backend.get_memory(first.memory.id)
    with pytest.raises(NotFoundError):
        backend.update("The freeze lasts until Monday.", space=space, id=first.memory.id)
    with pytest.raises(NotFoundError):
        backend.forget(space=space, id=first.memory.id)
    with pytest.raises(NotFoundError):
        backend.forget(space=space, content="The freeze lasts until Friday.")
    again = backend.save("The freeze lasts until Friday.", space=space, custom_id="freeze")
    assert again.status == "updated" and again.memory.supersedes == first.memory.id
    assert again.memory.expires_at is None
    assert [h.memory.id for h in backend.search("freeze lasts", space=space).hits] == [again.memory.id]
    assert [h.memory.id for h in backend.search("staging read-only", space=space).hits] == [kept.memory.id]


@pytest.mark.parametrize("content", ["", "   \n\t "])
def test_empty_content_is_refused(backend, space: str, content: str) -> None:
    with pytest.raises(InvalidInputError):
        backend.save(content, space=space)


def test_oversized_content_and_bad_metadata_are_refused(backend, space: str) -> None:
    with pytest.raises(InvalidInputError):
        backend.save("x" * 20_001, space=space)
    with pytest.raises(InvalidInputError):
        backend.save("fine", space=space, metadata=["not", "an", "object"])  # type: ignore[arg-type]
    assert backend.profile(space=space).recent == ()


def test_history_of_unknown_id(backend) -> None:
    with pytest.raises(NotFoundError):
        backend.history(str(uuid.uuid4()))


def test_purge_erases_every_version(backend, space: str) -> None:
    v1 = backend.save("The door code 7731 was pasted by mistake.", space=space, custom_id="oops").memory
    backend.save("The door code 7732 was pasted by mistake.", space=space, custom_id="oops")
    assert backend.purge(v1.id) == 2
    with pytest.raises(NotFoundError):
        backend.history(v1.id)
    assert backend.search("door code 7731 pasted", space=space).hits == ()


def test_enqueue_extract_queues_a_job(backend, space: str) -> None:
    job_id = backend.enqueue_extract(
        "User: we use ruff\n\nAssistant: noted", space=space, source="hook:claude", session_id="s-1"
    )
    uuid.UUID(job_id)
    with pytest.raises(InvalidInputError):
        backend.enqueue_extract("  ", space=space, source="hook:claude")
    # Queuing saves nothing by itself.
    assert backend.profile(space=space).recent == ()


def test_an_extract_job_is_checked_alike_on_every_store(backend, space: str) -> None:
    """The engine checks a job once for every store: a text that is only a block we
    injected earlier (recalled memories) leaves nothing to extract, and an oversized one is
    refused before anything is queued."""
    from bli_memory.core.memory.retrieval_writes import MAX_EXTRACT_CHARS

    def jobs() -> int:
        return sum(backend.info(space=space)["extractJobs"].values())

    before = jobs()
    recalled = "<bli-memory-recall>\n- The frontend uses pnpm.\n</bli-memory-recall>\n"
    with pytest.raises(InvalidInputError, match="nothing to extract"):
        backend.enqueue_extract(recalled, space=space, source="hook:claude")
    with pytest.raises(InvalidInputError, match="extract takes at most"):
        backend.enqueue_extract("User: " + "a" * MAX_EXTRACT_CHARS, space=space, source="hook:claude")
    assert jobs() == before


def test_contradictory_saves_are_flagged_as_a_conflict(backend, space: str) -> None:
    older = backend.save("User loves Chinese food", space=space).memory
    backend.save("The frontend uses pnpm workspaces.", space=space)
    time.sleep(0.01)  # created_at orders them on every store
    newer = backend.save("User hates Chinese food", space=space).memory
    res = backend.search("what does the user think of Chinese food?", space=space)
    assert {h.memory.id for h in res.hits[:2]} == {newer.id, older.id}
    assert [(c.newer, c.older) for c in res.conflicts] == [(newer.id, older.id)]
    assert res.conflicts[0].similarity >= 0.8
    # Unrelated memories are never paired, whichever hits a search returns.
    other = backend.search("which package manager does the frontend use?", space=space)
    assert all({c.newer, c.older} == {newer.id, older.id} for c in other.conflicts)


def test_enqueue_extract_with_the_callers_job_id_queues_it_once(backend, space: str) -> None:
    def jobs() -> int:
        return sum(backend.info(space=space)["extractJobs"].values())

    before = jobs()
    chosen = str(uuid.uuid4())
    for _ in range(3):  # a capture retried after a timeout, or shipped by two processes
        assert backend.enqueue_extract("User: we pin ruff\n\nAssistant: noted", space=space,
                                       source="hook:claude", job_id=chosen) == chosen
    assert jobs() == before + 1
    with pytest.raises(InvalidInputError):
        backend.enqueue_extract("User: a\n\nAssistant: b", space=space, source="hook:claude",
                                job_id="not-a-uuid")
    assert jobs() == before + 1


def test_many_memories_rank_the_right_one_first(backend, space: str) -> None:
    facts = [
        "The frontend is written in TypeScript with React.",
        "Database migrations are applied with Alembic.",
        "The mobile app ships every two weeks.",
        "Our error tracker is Sentry.",
        "Secrets live in Vault, never in the repository.",
        "Load tests run against the staging cluster.",
        "The design system uses eight pixel spacing.",
        "Nightly backups are kept for thirty days.",
    ]
    ids = {backend.save(f, space=space).memory.content: None for f in facts}
    assert len(ids) == len(facts)
    cases = {
        "where do we keep credentials?": "Secrets live in Vault, never in the repository.",
        "how are database schema changes applied?": "Database migrations are applied with Alembic.",
        "which tool reports exceptions?": "Our error tracker is Sentry.",
        "how long do we retain backups": "Nightly backups are kept for thirty days.",
    }
    for query, expected in cases.items():
        hits = backend.search(query, space=space, limit=3).hits
        assert hits and hits[0].memory.content == expected, (query, [h.memory.content for h in hits])
        assert all(h.similarity is not None for h in hits)


# --- memory controls: info, list, get, audit, export, import ----------------------------

EXPORT_KEYS = {"id", "space", "content", "customId", "metadata", "source", "sessionId", "createdAt",
               "updatedAt", "version", "supersedes", "state", "forgottenAt", "expiresAt", "embedding",
               "embeddingModel"}


def test_list_and_get_with_history_after_two_updates(backend, space: str) -> None:
    v1 = backend.save("The cache TTL is 60 seconds.", space=space).memory
    other = backend.save("Logs go to /var/log/app.", space=space).memory
    v2 = backend.update("The cache TTL is 120 seconds.", space=space, id=v1.id).memory
    v3 = backend.update("The cache TTL is 300 seconds.", space=space, id=v2.id).memory

    listed = backend.list_memories(space=space)
    assert [m.id for m in listed] == [v3.id, other.id]  # newest first, live only
    assert [m.id for m in backend.list_memories(space=space, limit=1)] == [v3.id]
    assert backend.list_memories(space=space + "_other") == []

    memory, history = backend.get_memory(v3.id)
    assert memory.id == v3.id and memory.content == "The cache TTL is 300 seconds." and memory.version == 3
    assert [(m.id, m.version, m.state) for m in history] == [
        (v2.id, 2, "superseded"), (v1.id, 1, "superseded")]

    head, head_history = backend.get_memory(v1.id)  # an old version's id reads the live memory
    assert head.id == v3.id and [m.id for m in head_history] == [v2.id, v1.id]
    old, old_history = backend.get_memory(v1.id, include_inactive=True)
    assert old.state == "superseded" and [m.id for m in old_history] == [v3.id, v2.id]

    backend.forget(space=space, id=v3.id)
    with pytest.raises(NotFoundError):
        backend.get_memory(v3.id)
    gone, _ = backend.get_memory(v3.id, include_inactive=True)
    assert gone.state == "forgotten"
    for unknown in (str(uuid.uuid4()), "not-a-uuid"):
        with pytest.raises(NotFoundError):
            backend.get_memory(unknown, include_inactive=True)


def test_info_counts_the_space_by_state(subject, space: str) -> None:
    backend = subject.backend
    alias = space + "_old"
    subject.add_alias(alias, space)
    a = backend.save("Deploys happen from the main branch.", space=space).memory
    backend.update("Deploys happen from the release branch.", space=space, id=a.id)
    b = backend.save("The on-call phone is in the drawer.", space=space).memory
    backend.forget(space=space, id=b.id)

    info = backend.info(space=alias)
    assert info["space"] == space and info["aliases"] == [alias]
    assert info["counts"] == {"active": 1, "superseded": 1, "forgotten": 1}
    assert info["embeddingModel"] == "all-MiniLM-L6-v2-int8"
    assert info["store"]["kind"] == {"embedded": "embedded", "postgres": "postgres", "remote": "service"}[
        subject.kind]
    assert isinstance(info["recordings"], int) and isinstance(info["extractJobs"], dict)
    empty = backend.info(space=space + "_empty")
    assert empty["counts"] == {"active": 0, "superseded": 0, "forgotten": 0}


def test_recorded_turns_are_counted_and_never_become_memories(subject, space: str) -> None:
    backend = subject.backend
    alias = space + "_rec"
    subject.add_alias(alias, space)
    kept = backend.save("The build runs on Buildkite.", space=space).memory
    turn = "User: where does the nightly build run?\n\nAssistant: On the zebrafish cluster, since May."
    first = backend.record_turn(turn, space=alias, source="hook:claude", session_id="s-rec")
    second = backend.record_turn("User: and tests?\n\nAssistant: Zebrafish too.", space=space,
                                 source="hook:claude")
    uuid.UUID(first)
    assert first != second

    info = backend.info(space=space)
    assert info["recordings"] == 2  # the alias' turn landed in the canonical space
    assert backend.info(space=alias)["recordings"] == 2
    assert backend.info(space=space + "_other")["recordings"] == 0
    assert info["counts"] == {"active": 1, "superseded": 0, "forgotten": 0}
    assert sum(info["extractJobs"].values()) == 0  # recorded, not queued for extraction

    # Capture-only: a recording is never searched, listed, profiled or exported.
    for query in ("zebrafish cluster", "where does the nightly build run?"):
        assert [h.memory.id for h in backend.search(query, space=space).hits] in ([], [kept.id])
    assert [m.id for m in backend.list_memories(space=space)] == [kept.id]
    assert [m.id for m in backend.profile(space=space).recent] == [kept.id]
    assert [r["id"] for r in backend.export(space=space)] == [kept.id]

    # Nobody else's count includes them.
    other = subject.another()
    assert other.info(space=space)["recordings"] == 0
    assert other.recordings(space=space) == []
    assert other.clear_recordings(space=space) == 0

    # The person who recorded them can read them back, newest first, and erase them.
    recs = backend.recordings(space=alias)
    assert [r["id"] for r in recs] == [second, first]
    assert recs[1]["text"] == turn and recs[1]["sessionId"] == "s-rec" and recs[1]["space"] == space
    assert backend.clear_recordings(space=alias) == 2
    assert backend.recordings(space=space) == [] and backend.info(space=space)["recordings"] == 0
    assert [m.id for m in backend.list_memories(space=space)] == [kept.id]  # memories untouched


def test_audit_of_an_intact_store(backend, space: str) -> None:
    backend.save("Audits are cheap.", space=space)
    report = backend.audit()
    assert report["ok"] is True and report["repaired"] is False
    assert {k: report[k] for k in ("missing_keyword", "stale_keyword", "missing_vector", "wrong_model")} == {
        "missing_keyword": 0, "stale_keyword": 0, "missing_vector": 0, "wrong_model": 0}
    assert report["counts"]["active"] >= 1
    repaired = backend.audit(repair=True)
    assert repaired["repaired"] is False and repaired["after"]["ok"] is True


def test_export_import_round_trip_keeps_every_version(subject, space: str) -> None:
    source = subject.backend
    a = source.save("We release on Thursdays after the freeze.", space=space, custom_id="release",
                     metadata={"kind": "convention"}).memory
    source.update("We release on Wednesdays after the freeze.", space=space, id=a.id)
    b = source.save("Staging lives in eu-west-1.", space=space).memory
    source.forget(space=space, id=b.id)
    source.save("Use pnpm, never npm, in the web app.", space=space, session_id="s-7",
                expires_at="2999-01-01T00:00:00.000000Z")
    source.save("Elsewhere entirely.", space=space + "_b")

    rows = list(source.export(space=space))
    assert all(set(r) == EXPORT_KEYS for r in rows)
    assert sorted(r["state"] for r in rows) == ["active", "active", "forgotten", "superseded"]
    assert {r["space"] for r in rows} == {space}
    assert all(r["embedding"] and r["embeddingModel"] for r in rows if r["state"] != "forgotten")
    assert all(len(base64.b64decode(r["embedding"])) == 4 * 384 for r in rows if r["embedding"])
    assert {r["space"] for r in source.export()} >= {space, space + "_b"}

    # Erase the space, then restore it from the export into another store (on the
    # service, ids belong to the person who owns them: the purge frees them). Not into
    # the same one: a purge leaves marks there, so an import leaves those facts out.
    for chain_id in {r["supersedes"] or r["id"] for r in rows if r["state"] != "superseded"}:
        source.purge(chain_id)
    assert list(source.export(space=space)) == []
    target = subject.another()
    bad = [*rows, {**rows[0], "id": str(uuid.uuid4()), "createdAt": "yesterday"}]
    with pytest.raises(InvalidInputError, match="record 5"):
        target.import_records(bad)
    assert list(target.export(space=space)) == []  # one bad record: nothing imported

    assert target.import_records(rows) == {"imported": 4, "skipped": 0, "forgotten": 0, "masked": 0}
    assert list(target.export(space=space)) == rows  # exact, history and vectors included
    assert target.import_records(rows) == {"imported": 0, "skipped": 4, "forgotten": 0, "masked": 0}
    listed = target.list_memories(space=space)
    assert [m.content for m in listed] == ["Use pnpm, never npm, in the web app.",
                                           "We release on Wednesdays after the freeze."]
    memory, history = target.get_memory(listed[1].id)
    assert [m.id for m in history] == [a.id] and memory.custom_id == "release"
    hits = target.search("when do we release?", space=space).hits
    assert hits and hits[0].memory.id == listed[1].id
    assert target.audit()["ok"] is True


def test_import_embeds_rows_whose_vector_is_missing_or_of_another_model(subject, space: str) -> None:
    source = subject.backend
    source.save("The VPN client is WireGuard.", space=space)
    source.save("Tickets are tracked in Linear.", space=space)
    rows = list(source.export(space=space))
    rows[0] = {**rows[0], "id": str(uuid.uuid4()), "embedding": None, "embeddingModel": None}
    rows[1] = {**rows[1], "id": str(uuid.uuid4()), "embeddingModel": "some-other-model"}
    target = subject.another()
    assert target.import_records(rows)["imported"] == 2
    assert target.audit()["ok"] is True
    found = target.search("which VPN do we use", space=space).hits
    assert found and found[0].memory.content == "The VPN client is WireGuard."
    assert found[0].similarity is not None and found[0].similarity > 0.3


def test_context_channel_brings_the_reply_within_one_session_only(backend, space: str) -> None:
    turns = [
        "Ana: Did anyone look at the flaky payments reconciliation job last night?",
        "Ben: Yes, I pinned the worker pool to four and it has been green since.",
        "Chloe: Lunch is at noon today.",
    ]
    ids = [backend.save(t, space=space, session_id="s-ctx").memory.id for t in turns]
    other = backend.save("Omar: the gateway dashboards moved to the new folder.", space=space,
                         session_id="s-other").memory.id
    res = backend.search("what happened with the flaky payments reconciliation job", space=space, limit=3)
    assert [h.memory.id for h in res.hits][0] == ids[0]
    by_id = {h.memory.id: h for h in res.hits}
    assert ids[1] in by_id and "context" in by_id[ids[1]].channels
    assert other not in by_id or "context" not in by_id[other].channels


@pytest.mark.parametrize("when", ["2020-01-01T00:00:00.000000Z", "2001-01-01", "1999-12-31T23:00:00-02:00"])
def test_an_expiry_in_the_past_is_refused_and_nothing_is_saved(backend, space: str, when: str) -> None:
    with pytest.raises(InvalidInputError, match="expiresAt .* is in the past"):
        backend.save("The conference discount code is valid.", space=space, expires_at=when)
    assert backend.list_memories(space=space) == []


@pytest.mark.parametrize("when", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-01:00", "next tuesday"])
def test_an_expiry_no_calendar_holds_is_a_clear_error(backend, space: str, when: str) -> None:
    with pytest.raises(InvalidInputError, match="expiresAt"):
        backend.save("Rotate the signing key.", space=space, expires_at=when)
    assert backend.list_memories(space=space) == []


def test_an_expiry_that_looks_like_a_secret_is_refused_without_repeating_it(backend, space: str) -> None:
    token = "ghp_" + "Zq7Wx2Er5Ty8Ui1Op4As" * 2  # pasted into the wrong field
    for when in (token, "password:hunter2x"):
        with pytest.raises(InvalidInputError, match="expiresAt") as info:
            backend.save("Rotate the signing key.", space=space, expires_at=when)
        assert when not in info.value.message and "hunter2x" not in info.value.message
    with pytest.raises(InvalidInputError, match="'next tuesday' is not a usable"):  # a typo is shown
        backend.save("Rotate the signing key.", space=space, expires_at="next tuesday")
    assert backend.list_memories(space=space) == []


def test_an_id_that_looks_like_a_secret_is_not_repeated_in_the_error(backend, space: str) -> None:
    """Every memory id is a UUID; a token pasted where an id goes came back in the error,
    and from there in the MCP answer, the log and the memory browser's 404 page."""
    for token in ("ghp_" + "Zq7Wx2Er5Ty8Ui1Op4As" * 2, "9f86d081884c7d659a2feaa0c55ad015"):  # a bare-hex key
        _refused_without_repeating(backend, space, token)
    known = str(uuid.uuid4())  # a UUID that names nothing is still shown: it helps to see it
    with pytest.raises(NotFoundError, match=known):
        backend.get_memory(known)


def _refused_without_repeating(backend, space: str, token: str) -> None:
    calls = (lambda: backend.get_memory(token), lambda: backend.get_memory(token, include_inactive=True),
             lambda: backend.update("New text.", space=space, id=token),
             lambda: backend.forget(space=space, id=token))
    for call in calls:
        with pytest.raises(NotFoundError) as info:
            call()
        assert token not in info.value.message and "not a memory id" in info.value.message, info.value.message


def _row(space: str, content: str, **extra) -> dict:
    t = "2026-11-30T04:57:01.123456Z"
    return {"id": str(uuid.uuid4()), "space": space, "content": content, "createdAt": t, "updatedAt": t,
            **extra}


def test_import_refuses_a_supersede_loop(backend, space: str) -> None:
    a, b, c = (_row(space, f"Version {n} of the deploy note.", state="superseded") for n in "abc")
    a["supersedes"], b["supersedes"] = b["id"], a["id"]
    with pytest.raises(InvalidInputError, match="record 1: supersedes makes a loop"):
        backend.import_records([a, b])
    c["supersedes"], a["supersedes"], b["supersedes"] = a["id"], b["id"], c["id"]
    live = _row(space, "An unrelated live note.")
    with pytest.raises(InvalidInputError, match="record 2: supersedes makes a loop"):
        backend.import_records([live, a, b, c])
    assert list(backend.export(space=space)) == []  # nothing written
    # The same rows as a chain that ends at one live version import as before.
    b["supersedes"] = None
    c["state"] = "active"
    assert backend.import_records([live, a, b, c]) == {"imported": 4, "skipped": 0, "forgotten": 0,
                                                       "masked": 0}
    assert [m.id for m in backend.history(b["id"])] == [c["id"], a["id"], b["id"]]


def test_an_id_names_the_memory_across_its_versions(backend, space: str) -> None:
    v1 = backend.save("The cache TTL is 60 seconds.", space=space).memory
    v2 = backend.update("The cache TTL is 120 seconds.", space=space, id=v1.id).memory

    # update through the first version's id replaces the live head, and says so
    res = backend.update("The cache TTL is 300 seconds.", space=space, id=v1.id)
    assert res.previous.id == v2.id and res.memory.version == 3 and res.memory.supersedes == v2.id
    assert res.named is not None and res.named.id == v1.id and res.named.version == 1
    same = backend.update("The cache TTL is 300 seconds.", space=space, id=v2.id)
    assert same.status == "unchanged" and same.memory.id == res.memory.id and same.named.id == v2.id
    assert backend.update("The cache TTL is 600 seconds.", space=space, id=same.memory.id).named is None
    head = backend.list_memories(space=space)[0]

    memory, history = backend.get_memory(v1.id)
    assert memory.id == head.id and memory.state == "active" and v1.id in [m.id for m in history]
    exact, _ = backend.get_memory(v1.id, include_inactive=True)
    assert exact.id == v1.id and exact.state == "superseded"
    with pytest.raises(NotFoundError):  # the right chain, the wrong space
        backend.forget(space=space + "_elsewhere", id=v1.id)

    gone = backend.forget(space=space, id=v1.id)
    assert gone.memory.id == head.id and gone.memory.state == "forgotten"
    assert gone.named is not None and gone.named.id == v1.id
    assert backend.list_memories(space=space) == []
    assert [m.state for m in backend.history(v1.id)] == ["forgotten", "superseded", "superseded",
                                                          "superseded"]
    for call in (lambda: backend.forget(space=space, id=v2.id),
                 lambda: backend.update("x", space=space, id=v1.id),
                 lambda: backend.get_memory(v1.id)):
        with pytest.raises(NotFoundError, match="no longer live|no live memory"):
            call()


def test_term_frequencies_count_live_memories_of_the_space(backend, space: str) -> None:
    gone = backend.save("We deploy the billing service with blue-green.", space=space).memory
    backend.save("We deploy on Fridays; BLI-3580 tracks the billing queue.", space=space)
    backend.save("Lunch is at noon on Fridays.", space=space)
    backend.save("We deploy the billing service from another project.", space=space + "_other")
    backend.forget(id=gone.id, space=space)

    counts, live = backend.term_frequencies("deploy billing on Fridays, BLI-3580 and Rome?", space=space)
    assert live == 2
    assert counts == [("deploy", 1), ("billing", 1), ("fridays", 2), ("bli-3580", 1), ("rome", 0)]
    assert backend.term_frequencies("", space=space) == ([], 2)
    assert backend.term_frequencies("anything", space=space + "_empty") == ([("anything", 0)], 0)


def test_a_custom_id_that_is_not_text_is_refused_clearly(backend, space: str) -> None:
    with pytest.raises(InvalidInputError, match="customId must be a string"):
        backend.save("The release train leaves on Thursdays.", space=space, custom_id=123)  # type: ignore[arg-type]
    assert backend.list_memories(space=space) == []
