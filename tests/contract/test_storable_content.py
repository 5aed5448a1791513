"""What every store keeps, the same on every backend.

- Metadata has a size limit with a clear error. Content is capped at 20,000
  characters; metadata was not, and 200 KB was accepted.
- No store keeps a secret: content is masked on save and update, whoever calls.
- Content no store can keep (a NUL character) is refused on save and update with the
  error import gives, so one memory never blocks restoring an export.
"""

from __future__ import annotations

import json

import pytest

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.records import MAX_METADATA_BYTES, metadata_problem


def _of_size(n: int) -> dict:
    """Metadata whose compact JSON is exactly ``n`` bytes."""
    frame = len(json.dumps({"note": ""}, separators=(",", ":")))
    return {"note": "a" * (n - frame)}


def test_metadata_over_the_limit_is_refused_and_nothing_is_saved(backend, space: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        backend.save("The deploy runs on Fridays.", space=space, metadata={"blob": "x" * 200_000})
    assert "metadata" in str(err.value) and f"{MAX_METADATA_BYTES:,}" in str(err.value)
    with pytest.raises(InvalidInputError):
        backend.save("The deploy runs on Fridays.", space=space, metadata=_of_size(MAX_METADATA_BYTES + 1))
    assert backend.profile(space=space).recent == ()

    saved = backend.save("The deploy runs on Fridays.", space=space, metadata=_of_size(MAX_METADATA_BYTES))
    assert saved.status == "created" and saved.memory.metadata == _of_size(MAX_METADATA_BYTES)


def test_the_limit_counts_utf8_bytes_of_compact_json() -> None:
    assert metadata_problem(_of_size(MAX_METADATA_BYTES)) is None
    assert metadata_problem({"note": "\u00e9" * (MAX_METADATA_BYTES // 2)}) is not None
    assert metadata_problem(None) is None
    assert metadata_problem(["x"]) == "metadata must be a JSON object"


def test_every_store_masks_secrets_in_what_it_saves(backend, space: str) -> None:
    token = "ghp_" + "Qw3rTy9uIo0pAs5dFg7hJk2lZx4cVb6nMm8q"
    saved = backend.save(f"CI pushes with {token}.", space=space).memory
    assert token not in saved.content and "[REDACTED:github_token]" in saved.content
    updated = backend.update(f"CI pushes with {token} since May.", space=space, id=saved.id).memory
    assert token not in updated.content
    assert all(token not in m.content for m in backend.history(saved.id))


GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_secrets_in_metadata_are_masked_and_a_secret_custom_id_is_refused(backend, space: str) -> None:
    saved = backend.save("CI pushes with a deploy token.", space=space,
                         metadata={"token": GITHUB_TOKEN, "nested": [{"auth": f"Bearer {GITHUB_TOKEN}"}],
                                   "owner": "platform team"})
    stored = json.dumps(saved.memory.metadata)
    assert GITHUB_TOKEN not in stored and "[REDACTED:" in stored
    assert saved.memory.metadata["owner"] == "platform team"
    with pytest.raises(InvalidInputError) as err:
        backend.save("The deploy key is rotated monthly.", space=space, custom_id=GITHUB_TOKEN)
    assert "customId" in str(err.value)
    assert [m.content for m in backend.profile(space=space).recent] == ["CI pushes with a deploy token."]
    # A secret pasted as a key is still a secret.
    keyed = backend.save("A token was pasted as a metadata key.", space=space,
                         metadata={GITHUB_TOKEN: "seen", "nested": {f"x {GITHUB_TOKEN}": 1}})
    assert GITHUB_TOKEN not in json.dumps(keyed.memory.metadata)
    # A key that names its value a secret is judged with it: {"password": v} as password=v.
    named = backend.save("The database credentials are in the metadata.", space=space,
                         metadata={"password": "mdsecretAAA111", "DB_PASSWORD": "qv7Hunter2xb",
                                   "pwd": "/srv/app", "token_ttl": "3600"})
    assert "mdsecretAAA111" not in json.dumps(named.memory.metadata)
    assert "qv7Hunter2xb" not in json.dumps(named.memory.metadata)
    assert named.memory.metadata["pwd"] == "/srv/app" and named.memory.metadata["token_ttl"] == "3600"
    assert named.masked >= 2


def test_every_store_refuses_nul_in_content_as_import_does(backend, space: str) -> None:
    with pytest.raises(InvalidInputError, match="content contains a NUL character"):
        backend.save("The deploy \x00runs on Fridays.", space=space)
    assert backend.profile(space=space).recent == ()
    saved = backend.save("The deploy runs on Fridays.", space=space).memory
    with pytest.raises(InvalidInputError, match="content contains a NUL character"):
        backend.update("The deploy runs on \x00Mondays.", space=space, id=saved.id)
    assert [m.content for m in backend.history(saved.id)] == ["The deploy runs on Fridays."]
    # What was saved exports and imports back on any store.
    assert backend.import_records(list(backend.export(space=space)))["skipped"] == 1


def test_secrets_in_a_session_id_or_source_are_masked_on_save_and_counted(backend, space: str) -> None:
    saved = backend.save("The nightly job rebuilds the search index.", space=space,
                         session_id=f"session {GITHUB_TOKEN}", source=f"cli Bearer {GITHUB_TOKEN}",
                         metadata={"token": GITHUB_TOKEN})
    memory = saved.memory
    assert GITHUB_TOKEN not in f"{memory.session_id} {memory.source}"
    assert "[REDACTED:" in memory.session_id and "[REDACTED:" in memory.source
    assert saved.masked == 3  # the session id, the source, the metadata value
    exported = json.dumps(list(backend.export(space=space)))
    assert GITHUB_TOKEN not in exported
    plain = backend.save("The nightly job runs at 02:00.", space=space, session_id="s-1", source="mcp")
    assert plain.masked == 0 and (plain.memory.session_id, plain.memory.source) == ("s-1", "mcp")


def test_a_save_counts_the_secrets_it_masked_in_the_content(backend, space: str) -> None:
    saved = backend.save(f"CI pushes with {GITHUB_TOKEN}.", space=space)
    assert saved.masked == 1 and GITHUB_TOKEN not in saved.memory.content


@pytest.mark.parametrize("field", ["custom_id", "session_id", "source"])
def test_a_nul_in_a_key_or_label_is_refused_on_save_as_import_does(backend, space: str, field: str) -> None:
    name = {"custom_id": "customId", "session_id": "sessionId", "source": "source"}[field]
    with pytest.raises(InvalidInputError, match=f"{name} contains a NUL character"):
        backend.save("The deploy runs on Fridays.", space=space, **{field: "deploy\x00day"})
    assert backend.profile(space=space).recent == ()


def test_a_container_tag_that_looks_like_a_secret_is_refused_on_save_queue_and_import(backend) -> None:
    tag = GITHUB_TOKEN  # a valid tag by its characters, and a credential
    with pytest.raises(InvalidInputError, match="containerTag holds what looks like a secret"):
        backend.save("The deploy runs on Fridays.", space=tag)
    with pytest.raises(InvalidInputError, match="containerTag holds what looks like a secret"):
        backend.enqueue_extract("User: the deploy runs on Fridays.\n\nAssistant: Noted.", space=tag,
                                source="hook:claude")
    record = {"id": "6a3c1e0e-8f1b-4c51-9a53-2b9f0d3c5e71", "space": tag,
              "content": "The deploy runs on Fridays.", "createdAt": "2026-01-01T00:00:00.000000Z",
              "updatedAt": "2026-01-01T00:00:00.000000Z"}
    with pytest.raises(InvalidInputError, match="record 1: space holds what looks like a secret"):
        backend.import_records([record])
    assert all(GITHUB_TOKEN not in json.dumps(r) for r in backend.export())


def test_every_store_measures_a_space_background_from_100_memories(backend, space: str) -> None:
    assert backend.space_background(space=space) is None  # empty
    for n in range(99):
        backend.save(f"[2023-05-{1 + n % 28:02d}] Caroline: I went hiking with Melanie again, day {n}.",
                     space=space)
    assert backend.space_background(space=space) is None  # too few pairs to say
    backend.save("[2023-06-01] Caroline: I went hiking with Melanie again, day 99.", space=space)
    background = backend.space_background(space=space)
    assert background is not None and 0.5 < background <= 1.0  # turns that resemble one another
