"""The team service masks secrets in what is saved through its doors.

Everyone who can see a space reads what it keeps, so a save or update that carries a
secret stores the placeholder, and the answer counts what was masked.
"""

from __future__ import annotations

from typing import Any

from tests.secret_corpus import SECRETS

GITHUB = next(secret for fmt, _, secret in SECRETS if fmt == "github classic")
PASSWORD = next(secret for fmt, _, secret in SECRETS if fmt == "wifi password prose")


def test_save_and_update_doors_mask_secrets(client: Any, new_person, space: str, admin: Any) -> None:
    p = new_person()
    r = client.post("/api/memory/save", headers=p.headers, json={
        "content": f"CI pushes with {GITHUB}.", "containerTag": space})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["masked"] == 1
    assert GITHUB not in body["memory"]["content"] and "[REDACTED:github_token]" in body["memory"]["content"]

    r = client.post("/api/memory/update", headers=p.headers, json={
        "id": body["memory"]["id"], "containerTag": space,
        "content": f"CI pushes with a deploy key; the staging wifi password is {PASSWORD}"})
    assert r.status_code == 200, r.text
    assert r.json()["masked"] == 1 and PASSWORD not in r.json()["memory"]["content"]

    r = client.post("/api/memory/save", headers=p.headers, json={
        "content": f"token {GITHUB}", "containerTag": space, "extract": True})
    assert r.status_code == 202 and r.json()["masked"] == 1

    r = client.post("/api/memory/save", headers=p.headers, json={
        "content": "The API gateway times out after 29 seconds.", "containerTag": space})
    assert r.json()["masked"] == 0

    r = client.post("/api/memory/search", headers=p.headers, json={"q": "CI pushes", "containerTag": space})
    assert GITHUB not in r.text and PASSWORD not in r.text


def test_save_and_update_doors_refuse_by_the_size_as_given_before_masking(
        client: Any, new_person, space: str) -> None:
    from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS
    from tests.oversized import fits_only_masked

    p = new_person()
    note = fits_only_masked()
    refusal = f"content is {len(note)} characters; the limit is {MAX_CONTENT_CHARS}"
    r = client.post("/api/memory/save", headers=p.headers, json={"content": note, "containerTag": space})
    assert r.status_code == 400 and refusal in r.text, r.text[:300]
    r = client.post("/api/memory/save", headers=p.headers, json={
        "content": "The API gateway times out after 29 seconds.", "containerTag": space})
    memory_id = r.json()["memory"]["id"]
    r = client.post("/api/memory/update", headers=p.headers, json={
        "id": memory_id, "containerTag": space, "content": note})
    assert r.status_code == 400 and refusal in r.text, r.text[:300]
