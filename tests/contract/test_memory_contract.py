"""The memory tool contract, with identical expectations for every backend.

Each test runs three times (see ``conftest.py``): the embedded SQLite engine, the
Postgres store, and the HTTP client against the real service. A difference in
behaviour between the stores is a failure here.
"""

from __future__ import annotations

import uuid

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


def test_expired_memories_leave_search_and_profile(backend, space: str) -> None:
    backend.save(
        "The conference discount code is valid.", space=space, expires_at="2020-01-01T00:00:00.000000Z"
    )
    backend.save(
        "The office wifi is called guest-net.", space=space, expires_at="2999-01-01T00:00:00.000000Z"
    )
    assert [h.memory.content for h in backend.search("discount code wifi", space=space).hits] == [
        "The office wifi is called guest-net."
    ]
    assert [m.content for m in backend.profile(space=space).recent] == [
        "The office wifi is called guest-net."
    ]


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
    v1 = backend.save("Secret: hunter2 was pasted by mistake.", space=space, custom_id="oops").memory
    backend.save("Secret: hunter3 was pasted by mistake.", space=space, custom_id="oops")
    assert backend.purge(v1.id) == 2
    with pytest.raises(NotFoundError):
        backend.history(v1.id)
    assert backend.search("hunter2 pasted", space=space).hits == ()


def test_enqueue_extract_queues_a_job(backend, space: str) -> None:
    job_id = backend.enqueue_extract(
        "User: we use ruff\n\nAssistant: noted", space=space, source="hook:claude", session_id="s-1"
    )
    uuid.UUID(job_id)
    with pytest.raises(InvalidInputError):
        backend.enqueue_extract("  ", space=space, source="hook:claude")
    # Queuing saves nothing by itself.
    assert backend.profile(space=space).recent == ()


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
