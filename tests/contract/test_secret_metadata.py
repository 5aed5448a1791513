"""Secrets under secret keys in metadata, the same on every backend.

A key that names a secret makes its value one, whatever the value's type: a number
(``{"PASSWORD": 123456789}``, ``{"pin": 4242}``), a list or an object under ``"token"``
were stored in the clear, and ``{"secret": "x"}`` was kept where ``{"token": "abc"}``
was masked. Each such value is masked and counted in the save's ``masked``; null,
booleans, references and the shell's working directory stay.
"""

from __future__ import annotations

import json


def test_every_value_under_a_secret_key_is_masked_whatever_its_type(backend, space: str) -> None:
    saved = backend.save(
        "The billing integration keeps its credentials in the metadata.", space=space,
        metadata={"PASSWORD": 987654321, "pin": 4242, "token": ["tk9alpha", "tk9beta"],
                  "credentials": {"user": "bob", "key": "ck9gamma"}, "secret": "x", "api_key": "abc",
                  "card_pin": "7315", "owner": "platform team", "retries": 3, "pwd": "/srv/app",
                  "password_set": True, "token_ttl": 3600, "DB_PASSWORD": "${DB_PASSWORD}"},
    )
    stored = json.dumps(saved.memory.metadata)
    for clear in ("987654321", "4242", "tk9alpha", "tk9beta", "ck9gamma", "7315", '"abc"', '"x"'):
        assert clear not in stored, clear
    md = saved.memory.metadata
    assert md["token"] == md["credentials"] == md["pin"] == md["PASSWORD"] == "[REDACTED:metadata_secret]"
    assert md["secret"].startswith("[REDACTED:") and md["api_key"].startswith("[REDACTED:")
    kept = {k: md[k] for k in ("owner", "retries", "pwd", "password_set", "token_ttl", "DB_PASSWORD")}
    assert kept == {"owner": "platform team", "retries": 3, "pwd": "/srv/app", "password_set": True,
                    "token_ttl": 3600, "DB_PASSWORD": "${DB_PASSWORD}"}
    assert saved.masked == 7
    again = backend.profile(space=space).recent[0]
    assert again.metadata == saved.memory.metadata


GITHUB_TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def test_an_update_says_what_it_masked_as_a_save_does(backend, space: str) -> None:
    saved = backend.save("CI pushes with a deploy token.", space=space)
    assert saved.masked == 0
    updated = backend.update(f"CI pushes with {GITHUB_TOKEN} and DB_PASS = s3cr3tvalue.", space=space,
                             id=saved.memory.id)
    assert updated.status == "updated" and updated.masked == 2
    assert GITHUB_TOKEN not in updated.memory.content and "s3cr3tvalue" not in updated.memory.content
    again = backend.update(f"CI pushes with {GITHUB_TOKEN} and DB_PASS = s3cr3tvalue.", space=space,
                           id=updated.memory.id)
    assert again.status == "unchanged" and again.masked == 2  # masked, then found already there
    plain = backend.update("CI pushes with the deploy key.", space=space, id=updated.memory.id)
    assert plain.status == "updated" and plain.masked == 0


def test_a_memory_saved_with_a_secret_is_forgotten_by_the_text_as_pasted(backend, space: str) -> None:
    """The store keeps the text masked; the person pastes it with the secret. A forget by
    exact text compares the masked forms, so the paste still finds the memory."""
    said = f"The CI token for the release job is {GITHUB_TOKEN}."
    saved = backend.save(said, space=space)
    assert GITHUB_TOKEN not in saved.memory.content and saved.masked == 1
    gone = backend.forget(space=space, content=said)
    assert gone.matched_by == "content" and gone.memory.id == saved.memory.id
    assert backend.list_memories(space=space) == []


def test_refusals_never_repeat_a_secret_given_where_a_key_or_time_goes(backend, space: str) -> None:
    import pytest

    from bli_memory.core.errors import InvalidInputError, NotFoundError

    with pytest.raises(NotFoundError) as missing:
        backend.update("The release job runs at noon.", space=space, custom_id=GITHUB_TOKEN)
    assert GITHUB_TOKEN not in missing.value.message and "customId" in missing.value.message
    record = {"id": "6a3c1e0e-8f1b-4c51-9a53-2b9f0d3c5e71", "space": space, "content": "Noon.",
              "createdAt": GITHUB_TOKEN, "updatedAt": "2026-01-01T00:00:00.000000Z"}
    with pytest.raises(InvalidInputError) as refused:
        backend.import_records([record])
    assert GITHUB_TOKEN not in refused.value.message and "createdAt" in refused.value.message
