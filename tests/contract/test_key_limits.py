"""``customId``, ``sessionId`` and ``source`` have one limit on every store.

The export of one store is the import of another (docs/service.md, "Moving from the
embedded store to the service", and back): a key one store kept and another refuses
makes the whole export unusable there. So every store refuses a key over
:data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` on a save, with the same message
naming the field, and keeps one at the limit; and what any of them kept imports into
the embedded store.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.records import MAX_KEY_CHARS

#: The wire name of each key and the save argument and Memory field that carry it.
KEYS = {"customId": "custom_id", "sessionId": "session_id", "source": "source"}


@pytest.mark.parametrize("field", list(KEYS))
def test_a_key_over_the_limit_is_refused_naming_it_and_nothing_is_saved(
    backend, space: str, field: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        backend.save("The release train leaves on Thursdays.", space=space,
                     **{KEYS[field]: "k" * (MAX_KEY_CHARS + 1)})
    assert f"{field} is longer than {MAX_KEY_CHARS} characters" in refused.value.message
    assert backend.list_memories(space=space) == []


@pytest.mark.parametrize("field", list(KEYS))
def test_a_key_at_the_limit_is_kept_and_moves_to_the_embedded_store(
    backend, space: str, field: str, tmp_path: Path
) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend

    at_limit = "k" * MAX_KEY_CHARS
    saved = backend.save("The release train leaves on Thursdays.", space=space, **{KEYS[field]: at_limit})
    assert saved.status == "created" and getattr(saved.memory, KEYS[field]) == at_limit
    records = list(backend.export(space=space))
    target = EmbeddedBackend(tmp_path / f"moved-{uuid.uuid4().hex[:8]}.sqlite3")
    try:
        assert target.import_records(records)["imported"] == len(records) == 1
        assert getattr(target.list_memories(space=space)[0], KEYS[field]) == at_limit
    finally:
        target.close()


def test_an_extract_job_with_a_session_id_over_the_limit_is_refused(backend, space: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        backend.enqueue_extract("User: we ship on Thursdays.\n\nAssistant: Noted.", space=space,
                                source="hook:claude", session_id="s" * (MAX_KEY_CHARS + 1))
    assert f"sessionId is longer than {MAX_KEY_CHARS} characters" in refused.value.message


@pytest.mark.e2e
@pytest.mark.parametrize("field", ["customId", "sessionId"])
def test_the_service_answers_400_naming_a_key_over_the_limit(pg_admin, service_url: str, field: str) -> None:
    import httpx

    _, token = pg_admin.create_token(f"person-{uuid.uuid4().hex[:12]}", "laptop")
    space = f"repo_contract__{uuid.uuid4().hex[:16]}"
    with httpx.Client(base_url=service_url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        for length in (MAX_KEY_CHARS + 1, 2_700):
            r = http.post("/api/memory/save", json={"containerTag": space, "content": "Ship on Thursdays.",
                                                    field: "k" * length})
            assert r.status_code == 400, r.text
            error = r.json()["error"]
            assert error["reason"] == "invalid_input"
            assert error["message"].startswith(f"{field} is longer than {MAX_KEY_CHARS} characters"), error
        r = http.post("/api/memory/save", json={"containerTag": space, "content": "Ship on Thursdays.",
                                                field: "k" * MAX_KEY_CHARS})
        assert r.status_code == 201, r.text
