"""An import does not bring back what the space forgot or purged, on every store.

A forget leaves a tombstone so the fact does not come back (capture honours it); an
export made elsewhere, or before the forget, holds the same fact under another id. The
import leaves such a record out, by the rule capture applies, with the older versions
it replaced, and says so in its answer (``forgotten``). A fact saved again after its
forget, in the same export, is kept.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import bin_path

FACT = "The staging port is 8443."


def _record(space: str, content: str, **extra: object) -> dict:
    return {"id": str(uuid.uuid4()), "space": space, "content": content, "customId": None,
            "metadata": {}, "source": "import", "sessionId": None,
            "createdAt": "2026-11-01T10:00:00.000000Z", "updatedAt": "2026-11-01T10:00:00.000000Z",
            "version": 1, "supersedes": None, "state": "active", "forgottenAt": None,
            "expiresAt": None, "embedding": None, "embeddingModel": None, **extra}


def _with_new_ids(records: list[dict]) -> list[dict]:
    """``records`` under ids of their own (another machine's copy; on the service, ids
    another person holds cannot be imported), their ``supersedes`` links kept."""
    new = {r["id"]: str(uuid.uuid4()) for r in records}
    return [{**r, "id": new[r["id"]], "supersedes": new.get(r["supersedes"]) if r["supersedes"] else None}
            for r in records]


def _contents(backend, space: str) -> list[str]:
    return [m.content for m in backend.list_memories(space=space, limit=100)]


@pytest.mark.parametrize("copy", [FACT, "THE STAGING PORT IS 8,443."])
def test_a_forgotten_fact_under_a_new_id_is_not_brought_back(subject, space: str, copy: str) -> None:
    backend = subject.backend
    saved = backend.save(FACT, space=space)
    backend.forget(space=space, id=saved.memory.id)
    elsewhere = subject.another()  # another machine's copy: the same fact, its own id
    elsewhere.save(copy, space=space)
    elsewhere.save("Deploys freeze on Fridays.", space=space)
    records = _with_new_ids(list(elsewhere.export(space=space)))

    res = backend.import_records(records)
    assert res == {"imported": 1, "skipped": 0, "forgotten": 1, "masked": 0}
    assert _contents(backend, space) == ["Deploys freeze on Fridays."]
    hits = backend.search("which port is staging on", space=space).hits
    assert [h.memory.content for h in hits if "8443" in h.memory.content or "8,443" in h.memory.content] == []


def test_a_purged_fact_under_a_new_id_is_not_brought_back_either(subject, space: str) -> None:
    backend = subject.backend
    assert backend.purge(backend.save(FACT, space=space).memory.id) == 1
    elsewhere = subject.another()
    elsewhere.save(FACT, space=space)
    res = backend.import_records(_with_new_ids(list(elsewhere.export(space=space))))
    assert res == {"imported": 0, "skipped": 0, "forgotten": 1, "masked": 0}
    assert _contents(backend, space) == []


def test_the_versions_a_forgotten_fact_replaced_stay_out_with_it(subject, space: str) -> None:
    backend = subject.backend
    backend.forget(space=space, id=backend.save(FACT, space=space).memory.id)
    elsewhere = subject.another()
    first = elsewhere.save("The staging port is 8080.", space=space)
    elsewhere.update(FACT, space=space, id=first.memory.id)
    records = _with_new_ids(list(elsewhere.export(space=space)))
    assert [r["state"] for r in records] == ["superseded", "active"]

    res = backend.import_records(records)
    assert res == {"imported": 0, "skipped": 0, "forgotten": 2, "masked": 0}
    ids = {r["id"] for r in records}
    assert not ids & {r["id"] for r in backend.export(space=space)}


def test_a_fact_saved_again_after_its_forget_moves_with_its_tombstone(subject, space: str) -> None:
    source = subject.backend
    source.forget(space=space, id=source.save(FACT, space=space).memory.id)
    again = source.save(FACT, space=space)  # the agent asked for it explicitly: saved
    assert again.status == "created"
    records = _with_new_ids(list(source.export(space=space)))

    target = subject.another()
    assert target.import_records(records) == {"imported": 2, "skipped": 0, "forgotten": 0, "masked": 0}
    assert _contents(target, space) == [FACT]
    # Once there, importing the same file again is harmless.
    assert target.import_records(records) == {"imported": 0, "skipped": 2, "forgotten": 0, "masked": 0}


def test_a_dry_run_on_the_service_reports_what_it_would_leave_out(subject, space: str) -> None:
    if subject.kind != "postgres":
        pytest.skip("the dry run is the service's (the HTTP client sends one before every write)")
    backend = subject.backend
    backend.forget(space=space, id=backend.save(FACT, space=space).memory.id)
    res = backend.import_records([_record(space, FACT)], dry_run=True)
    assert res == {"imported": 0, "skipped": 0, "forgotten": 1, "masked": 0}


@pytest.mark.e2e
def test_the_import_command_says_what_it_left_out_as_forgotten(tmp_path: Path) -> None:
    space = f"repo_import__{uuid.uuid4().hex[:12]}"
    tombstone = tmp_path / "tombstone.jsonl"
    forgotten = _record(space, FACT, state="forgotten", forgottenAt="2026-11-02T10:00:00.000000Z")
    tombstone.write_text(json.dumps(forgotten) + "\n", encoding="utf-8")
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps(_record(space, FACT)) + "\n"
                     + json.dumps(_record(space, "Builds run on Fridays.")) + "\n", encoding="utf-8")

    def run(path: Path) -> str:
        proc = subprocess.run([bin_path(), "memory", "import", str(path)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert run(tombstone) == "imported 1, skipped 0 (already present)\n"
    assert run(later) == "imported 1, skipped 0 (already present), left out 1 (forgotten in the space)\n"
