"""The memory doors in-process (the app with its lifespan, a real Postgres): auth, shapes, codes."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from bli_memory.core.team.service.app import openapi_document, run_extract_jobs

# --- auth --------------------------------------------------------------------------


def test_every_door_needs_a_live_device_token(client: Any, new_person, admin: Any, space: str) -> None:
    body = {"q": "anything", "containerTag": space}
    r = client.post("/api/memory/search", json=body)
    assert r.status_code == 401 and r.json()["error"]["reason"] == "unauthorized"
    r = client.post("/api/memory/search", json=body, headers={"Authorization": "Bearer blim_not-a-token"})
    assert r.status_code == 401
    r = client.post("/api/memory/search", json=body, headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert r.status_code == 401

    alice = new_person()
    assert client.post("/api/memory/search", json=body, headers=alice.headers).status_code == 200
    assert admin.revoke_token(alice.token_id) is True
    assert admin.revoke_token(alice.token_id) is False
    r = client.post("/api/memory/search", json=body, headers=alice.headers)
    assert r.status_code == 401


def test_tokens_are_stored_hashed(admin: Any, new_person) -> None:
    import psycopg

    person = new_person()
    with psycopg.connect(admin._shared.database_url) as conn:
        stored = [r[0] for r in conn.execute("SELECT token_sha256 FROM memory_device_tokens")]
    assert person.token not in stored
    assert all(len(s) == 64 for s in stored)
    listed = admin.list_tokens(person.name)
    assert [t.id for t in listed] == [person.token_id]
    assert person.token not in repr(listed)


def test_whoami_names_person_and_device(client: Any, new_person) -> None:
    p = new_person(device="ci-runner")
    r = client.get("/api/memory/whoami", headers=p.headers)
    assert r.status_code == 200
    assert r.json()["person"] == p.name and r.json()["device"] == "ci-runner"


# --- doors -------------------------------------------------------------------------


def test_save_search_update_forget_through_the_doors(client: Any, new_person, space: str) -> None:
    p = new_person()
    h = p.headers
    r = client.post(
        "/api/memory/save",
        headers=h,
        json={
            "content": "The API gateway times out after 29 seconds.",
            "containerTag": space,
            "metadata": {"kind": "convention"},
        },
    )
    assert r.status_code == 201, r.text
    saved = r.json()
    assert saved["status"] == "created" and saved["containerTag"] == space
    mem_id = saved["memory"]["id"]

    r = client.post(
        "/api/memory/save",
        headers=h,
        json={"content": "The API gateway times out after 29 seconds.", "containerTag": space},
    )
    assert r.status_code == 200 and r.json()["status"] == "duplicate"

    r = client.post("/api/memory/search", headers=h, json={"q": "gateway timeout", "containerTag": space})
    assert r.status_code == 200
    res = r.json()
    assert res["count"] == 1 and res["results"][0]["memory"]["id"] == mem_id
    assert isinstance(res["results"][0]["similarity"], float)

    r = client.post(
        "/api/memory/update",
        headers=h,
        json={"content": "The API gateway times out after 60 seconds.", "containerTag": space, "id": mem_id},
    )
    assert r.status_code == 200 and r.json()["memory"]["version"] == 2
    new_id = r.json()["memory"]["id"]

    r = client.post("/api/memory/history", headers=h, json={"id": mem_id})
    assert [v["id"] for v in r.json()["versions"]] == [new_id, mem_id]

    r = client.post("/api/memory/v4/profile", headers=h, json={"containerTag": space})
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["facts"]] == [new_id]

    r = client.post("/api/memory/forget", headers=h, json={"containerTag": space, "id": new_id})
    assert r.status_code == 200 and r.json()["matchedBy"] == "id"
    r = client.post("/api/memory/forget", headers=h, json={"containerTag": space, "id": new_id})
    assert r.status_code == 404 and r.json()["error"]["reason"] == "not_found"


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/api/memory/save", {"content": "", "containerTag": "repo_x__1"}, 400),
        ("/api/memory/save", {"content": "ok"}, 400),
        ("/api/memory/save", {"content": "ok", "containerTag": "bad tag with spaces"}, 400),
        ("/api/memory/save", {"content": 5, "containerTag": "repo_x__1"}, 400),
        ("/api/memory/save", {"content": "ok", "containerTag": "repo_x__1", "metadata": [1]}, 400),
        ("/api/memory/save", {"content": "ok", "containerTag": "repo_x__1", "extract": "yes"}, 400),
        ("/api/memory/search", {"q": "x", "containerTag": "repo_x__1", "limit": 0}, 400),
        ("/api/memory/update", {"content": "x", "containerTag": "repo_x__1"}, 400),
        ("/api/memory/forget", {"containerTag": "repo_x__1"}, 400),
        ("/api/memory/history", {"id": str(uuid.uuid4())}, 404),
        ("/api/memory/record", {"containerTag": "repo_x__1", "source": "hook:claude"}, 400),
        ("/api/memory/record", {"text": ["a"], "containerTag": "repo_x__1"}, 400),
        ("/api/memory/record", {"text": "User: a", "containerTag": "bad tag with spaces"}, 400),
        ("/api/memory/record", {"text": "User: a", "containerTag": "repo_x__1", "sessionId": 7}, 400),
    ],
)
def test_bad_requests_get_a_reason_and_no_echo(
    client: Any, new_person, path: str, body: dict, status: int
) -> None:
    r = client.post(path, headers=new_person().headers, json=body)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["reason"] in ("invalid_input", "not_found")
    assert "Traceback" not in r.text


def test_body_must_be_a_json_object(client: Any, new_person) -> None:
    h = new_person().headers
    r = client.post("/api/memory/save", headers={**h, "Content-Type": "application/json"}, content=b"{nope")
    assert r.status_code == 400
    r = client.post("/api/memory/save", headers=h, json=[1, 2])
    assert r.status_code == 400
    r = client.post("/api/memory/save", headers=h, content=b"x" * (300 * 1024))
    assert r.status_code == 413


def test_extract_mode_answers_202_from_a_durable_job(client: Any, admin: Any, new_person, space: str) -> None:
    p = new_person()
    text = "User: from now on we always use ruff for linting python\n\nAssistant: Noted, ruff it is."
    r = client.post(
        "/api/memory/save",
        headers=p.headers,
        json={
            "content": text,
            "containerTag": space,
            "extract": True,
            "source": "hook:claude",
            "sessionId": "s1",
        },
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["status"] == "queued" and body["memory"] is None and body["containerTag"] == space
    job = admin.jobs.job(body["jobId"])
    assert job is not None and job["space"] == space
    # The app under test runs no worker: the job waits, durable, until one claims it.
    assert job["state"] == "queued"

    assert run_extract_jobs(admin, worker="test-worker", max_jobs=50) >= 1
    job = admin.jobs.job(body["jobId"])
    assert job["state"] == "done", job
    assert set(job["outcome"]) >= {"added", "updated", "unchanged", "conflicted"}
    r = client.post("/api/memory/v4/profile", headers=p.headers, json={"containerTag": space})
    recent = [m["content"] for m in r.json()["recent"]]
    assert job["outcome"]["added"] == len(recent)
    assert any("ruff" in c.lower() for c in recent), recent


def test_a_job_is_claimed_by_exactly_one_worker(admin: Any, new_person, space: str) -> None:
    person = new_person()
    backend = admin.for_person(admin.ensure_person(person.name))
    job_ids = {
        backend.enqueue_extract(f"User: note {i}\n\nAssistant: ok", space=space, source="test")
        for i in range(6)
    }
    import threading

    claimed: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while True:
            job = admin.jobs.claim_job(name)
            if job is None:
                return
            with lock:
                claimed.append(job.id)
            admin.jobs.finish_job(job.id, name, {"added": 0})

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    mine = [c for c in claimed if c in job_ids]
    assert sorted(mine) == sorted(job_ids)  # every job once, none twice


# --- people and spaces ---------------------------------------------------------------


def _save(client: Any, p: Any, space: str, content: str) -> dict:
    r = client.post("/api/memory/save", headers=p.headers, json={"content": content, "containerTag": space})
    assert r.status_code == 201, r.text
    return r.json()["memory"]


def _search(client: Any, p: Any, space: str, q: str) -> list[str]:
    r = client.post("/api/memory/search", headers=p.headers, json={"q": q, "containerTag": space})
    assert r.status_code == 200, r.text
    return [h["memory"]["content"] for h in r.json()["results"]]


def test_nobody_reads_another_persons_space(client: Any, new_person, space: str) -> None:
    alice, bob = new_person(), new_person()
    mem = _save(client, alice, space, "Alice's deploy key lives in the team vault.")
    assert _search(client, bob, space, "deploy key vault") == []
    assert client.post("/api/memory/history", headers=bob.headers, json={"id": mem["id"]}).status_code == 404
    r = client.post("/api/memory/forget", headers=bob.headers, json={"containerTag": space, "id": mem["id"]})
    assert r.status_code == 404
    r = client.post(
        "/api/memory/update",
        headers=bob.headers,
        json={"containerTag": space, "id": mem["id"], "content": "hijacked"},
    )
    assert r.status_code == 404
    assert client.post("/api/memory/purge", headers=bob.headers, json={"id": mem["id"]}).status_code == 404
    assert (
        client.post("/api/memory/v4/profile", headers=bob.headers, json={"containerTag": space}).json()[
            "recent"
        ]
        == []
    )
    # Bob's own memory with the same tag is his alone.
    _save(client, bob, space, "Bob keeps his notes in the wiki.")
    assert _search(client, alice, space, "notes wiki") == []
    assert _search(client, alice, space, "deploy key vault") == [
        "Alice's deploy key lives in the team vault."
    ]


def test_a_shared_space_is_readable_and_writable_only_as_granted(
    client: Any, admin: Any, new_person, space: str
) -> None:
    alice, bob = new_person(), new_person()
    mem = _save(client, alice, space, "The release checklist lives in docs/release.md.")
    admin.share_space(owner=alice.name, space=space, grantee=bob.name, access="read")
    assert _search(client, bob, space, "release checklist") == [
        "The release checklist lives in docs/release.md."
    ]
    r = client.post(
        "/api/memory/update",
        headers=bob.headers,
        json={"containerTag": space, "id": mem["id"], "content": "The checklist moved."},
    )
    assert r.status_code == 403 and r.json()["error"]["reason"] == "read_only"

    admin.share_space(owner=alice.name, space=space, grantee=bob.name, access="write")
    r = client.post(
        "/api/memory/update",
        headers=bob.headers,
        json={"containerTag": space, "id": mem["id"], "content": "The checklist moved to the wiki."},
    )
    assert r.status_code == 200
    assert _search(client, alice, space, "checklist") == ["The checklist moved to the wiki."]

    assert admin.unshare_space(owner=alice.name, space=space, grantee=bob.name) is True
    assert _search(client, bob, space, "checklist") == []


def test_two_devices_of_one_person_share_one_memory(client: Any, new_person, space: str) -> None:
    laptop = new_person(device="laptop")
    desktop = new_person(name=laptop.name, device="desktop")
    assert laptop.token != desktop.token
    _save(client, laptop, space, "Staging is rebuilt every night at 02:00 UTC.")
    assert _search(client, desktop, space, "when is staging rebuilt") == [
        "Staging is rebuilt every night at 02:00 UTC."
    ]


def test_aliases_resolve_server_side(client: Any, admin: Any, new_person, space: str) -> None:
    p = new_person()
    vendor = space + "_vendor"
    admin.add_alias(vendor, space)
    r = client.post(
        "/api/memory/save", headers=p.headers, json={"content": "Imported fact.", "containerTag": vendor}
    )
    assert r.status_code == 201 and r.json()["containerTag"] == space
    r = client.post(
        "/api/memory/search", headers=p.headers, json={"q": "imported fact", "containerTag": vendor}
    )
    assert r.json()["containerTag"] == space and sorted(r.json()["searchedTags"]) == sorted([space, vendor])


# --- experience log -----------------------------------------------------------------


def test_experience_door_codes(client: Any, new_person) -> None:
    alice, bob = new_person(), new_person()
    entry = {
        "id": str(uuid.uuid4()),
        "store": "bli",
        "verdict": "win",
        "reason": "The dated decision answered the question directly",
        "created_at": "2026-11-01T10:00:00Z",
    }
    r = client.post("/api/memory/experience", headers=alice.headers, json=entry)
    assert r.status_code == 201 and r.json()["status"] == "created"
    r = client.post("/api/memory/experience", headers=alice.headers, json=entry)
    assert r.status_code == 200 and r.json()["status"] == "identical"
    r = client.post("/api/memory/experience", headers=alice.headers, json={**entry, "verdict": "loss"})
    assert r.status_code == 409 and r.json()["error"]["reason"] == "conflict"
    r = client.post("/api/memory/experience", headers=bob.headers, json=entry)
    assert r.status_code == 409  # the same UUID from someone else is not a retry
    for bad in (
        {**entry, "id": str(uuid.uuid4()), "store": "other"},
        {**entry, "id": str(uuid.uuid4()), "verdict": "meh"},
        {**entry, "id": str(uuid.uuid4()), "reason": ""},
        {**entry, "id": str(uuid.uuid4()), "reason": "two\nlines"},
        {**entry, "id": str(uuid.uuid4()), "reason": "x" * 501},
        {**entry, "id": "not-a-uuid"},
        {**entry, "id": str(uuid.uuid4()), "created_at": "yesterday"},
    ):
        r = client.post("/api/memory/experience", headers=alice.headers, json=bad)
        assert r.status_code == 400, bad
    r = client.post(
        "/api/memory/experience",
        headers=alice.headers,
        json={"store": "both", "verdict": "noise", "reason": "ok"},
    )
    assert r.status_code == 201 and uuid.UUID(r.json()["id"])


def test_experience_rows_are_insert_only_for_people(admin: Any, new_person) -> None:
    """Row-level security: a non-service role may insert its own opinions and read all, nothing else."""
    import psycopg

    p = new_person()
    person_id = admin.ensure_person(p.name)
    role = f"bli_person_{uuid.uuid4().hex[:8]}"
    url = admin._shared.database_url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON memory_experience TO {role}")
    try:
        base, _, db = url.rpartition("/")
        role_url = base.replace("postgres@", f"{role}@") + "/" + db
        with psycopg.connect(role_url) as conn:
            conn.execute("SELECT set_config('bli.person_id', %s, false)", (str(person_id),))
            conn.execute(
                "INSERT INTO memory_experience (id, person_id, store, verdict, reason, created_at) "
                "VALUES (%s, %s, 'bli', 'win', 'mine', now())",
                (str(uuid.uuid4()), person_id),
            )
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(
                    "INSERT INTO memory_experience (id, person_id, store, verdict, reason, created_at) "
                    "VALUES (%s, %s, 'bli', 'win', 'forged', now())",
                    (str(uuid.uuid4()), person_id + 1),
                )
            conn.rollback()
            conn.execute("SELECT set_config('bli.person_id', %s, false)", (str(person_id),))
            assert conn.execute("SELECT count(*) FROM memory_experience").fetchone()[0] >= 1
            assert conn.execute("UPDATE memory_experience SET reason = 'changed'").rowcount == 0
            assert conn.execute("DELETE FROM memory_experience").rowcount == 0
            conn.commit()
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"REVOKE ALL ON memory_experience FROM {role}")
            conn.execute(f"DROP ROLE {role}")


# --- operations ---------------------------------------------------------------------


def test_health_readiness_and_metrics(client: Any, new_person, space: str) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["database"] is True
    p = new_person()
    client.post("/api/memory/search", headers=p.headers, json={"q": "x", "containerTag": space})
    client.post("/api/memory/search", json={"q": "x", "containerTag": space})
    text = client.get("/metrics").text
    assert 'bli_memory_requests_total{door="search",status="200"}' in text
    assert 'bli_memory_requests_total{door="search",status="401"}' in text
    assert "bli_memory_request_seconds_bucket" in text
    assert 'bli_memory_extract_queue{state="queued"}' in text
    assert p.token not in text


def test_record_door_keeps_a_turn_and_counts_it_in_metrics(client: Any, new_person, space: str) -> None:
    p = new_person()
    body = {"text": "User: a\n\nAssistant: b", "containerTag": space, "source": "hook:codex",
            "sessionId": "s"}
    r = client.post("/api/memory/record", headers=p.headers, json=body)
    assert r.status_code == 201, r.text
    assert set(r.json()) == {"id", "containerTag"} and r.json()["containerTag"] == space
    uuid.UUID(r.json()["id"])
    assert "Assistant" not in r.text  # the answer never echoes the recorded text
    # Postgres text cannot hold NUL; the turn is kept without it rather than lost.
    nul = client.post("/api/memory/record", headers=p.headers, json={**body, "text": "User: a\x00b"})
    assert nul.status_code == 201, nul.text
    info = client.post("/api/memory/info", headers=p.headers, json={"containerTag": space}).json()
    assert info["recordings"] == 2
    assert client.post("/api/memory/record", json=body).status_code == 401
    text = client.get("/metrics").text
    assert 'bli_memory_requests_total{door="record",status="201"}' in text
    assert 'bli_memory_requests_total{door="record",status="401"}' in text


def test_openapi_describes_exactly_the_doors(client: Any) -> None:
    doc = client.get("/openapi.json").json()
    assert doc == openapi_document()
    assert doc["openapi"].startswith("3.1")
    # The memory browser's pages (the /ui mount) are HTML, not doors: docs/ui.md describes them.
    routes = {r.path: sorted(m.lower() for m in r.methods - {"HEAD"})
              for r in client.app.routes if getattr(r, "methods", None)}
    assert [r.path for r in client.app.routes if not getattr(r, "methods", None)] == ["/ui"]
    documented = {path: sorted(ops) for path, ops in doc["paths"].items()}
    assert documented == routes
    save = doc["paths"]["/api/memory/save"]["post"]["responses"]
    assert {"200", "201", "202", "400", "401"} <= set(save)
    exp = doc["paths"]["/api/memory/experience"]["post"]["responses"]
    assert {"200", "201", "400", "409", "502"} <= set(exp)


def test_readiness_is_false_when_the_database_is_gone(pg_instance: Any) -> None:
    from starlette.testclient import TestClient

    from bli_memory.core.team.postgres.store import PostgresBackend
    from bli_memory.core.team.service.app import create_app
    from tests.core.team import pgserver

    url = pgserver.create_database(pg_instance, "bli_gone")
    backend = PostgresBackend(url, pool_size=2, connect_timeout=2)
    try:
        with TestClient(create_app(backend=backend, run_jobs=False, warm_model=False)) as tc:
            deadline = time.monotonic() + 10
            while tc.get("/readyz").status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert tc.get("/readyz").status_code == 200
            pgserver.drop_database(pg_instance, url.rsplit("/", 1)[1])
            r = tc.get("/readyz")
            assert r.status_code == 503 and r.json()["database"] is False
    finally:
        backend.close()


def test_every_door_is_documented_with_its_request_and_answer_models() -> None:
    from bli_memory.core.team.service.app import DOORS

    doc = openapi_document()
    schemas = doc["components"]["schemas"]

    def named(ref: dict) -> str:
        name = ref["$ref"].removeprefix("#/components/schemas/")
        assert name in schemas, name
        return name

    assert len({d.path for d in DOORS}) == len(DOORS)
    for d in DOORS:
        op = doc["paths"][d.path][d.method.lower()]
        if d.request is None:
            assert "requestBody" not in op
        else:
            assert named(op["requestBody"]["content"]["application/json"]["schema"]) == d.request.__name__
        for code, (model, _) in d.answers.items():
            answer = op["responses"][str(code)]["content"]["application/json"]["schema"]
            assert named(answer) == model.__name__
        assert named(op["responses"]["401"]["content"]["application/json"]["schema"]) == "Error"
    # Wire names, not Python ones: the document says what a client sends.
    assert {"containerTag", "includeProfile", "q"} <= set(schemas["SearchRequest"]["properties"])


def test_answers_validate_against_their_declared_models(client: Any, new_person, space: str) -> None:
    import pydantic

    from bli_memory.core.team.service import models as m

    p = new_person()
    saved = client.post("/api/memory/save", headers=p.headers,
                        json={"content": "The staging database is db-staging-2.", "containerTag": space})
    assert saved.status_code == 201
    m.SaveAnswer.model_validate(saved.json())
    found = client.post("/api/memory/search", headers=p.headers,
                        json={"q": "staging database", "containerTag": space, "includeProfile": True})
    answer = m.SearchAnswer.model_validate(found.json())
    assert answer.count == len(answer.results) >= 1 and answer.profile is not None
    m.InfoAnswer.model_validate(client.post("/api/memory/info", headers=p.headers,
                                            json={"containerTag": space}).json())
    m.WhoAmI.model_validate(client.get("/api/memory/whoami", headers=p.headers).json())
    refused = client.post("/api/memory/search", headers=p.headers, json={"containerTag": "no spaces"})
    assert refused.status_code == 400
    m.Error.model_validate(refused.json())
    # The models are strict about keys: an answer with a key the document does not declare fails.
    with pytest.raises(pydantic.ValidationError):
        m.SaveAnswer.model_validate({**saved.json(), "undeclared": 1})


def test_the_service_queue_is_a_job_queue_whose_leases_run_out(admin: Any, new_person, space: str) -> None:
    from bli_memory.core.memory.job_queue import JobQueue

    assert isinstance(admin.jobs, JobQueue) and admin.job_queue is admin.jobs
    person = new_person()
    backend = admin.for_person(admin.ensure_person(person.name))
    job_id = backend.enqueue_extract("User: the lease test\n\nAssistant: ok", space=space, source="test")

    def claim(worker: str, lease: float) -> Any:
        while (job := admin.jobs.claim_job(worker, lease_seconds=lease, max_attempts=2)) is not None:
            if job.id == job_id:
                return job
            admin.jobs.finish_job(job.id, worker, {"added": 0})  # another test's leftover
        return None

    first = claim("dies-1", 0.2)
    assert first is not None and first.attempts == 1 and first.owner_id == backend.person_id
    assert admin.jobs.extend_lease(job_id, "someone-else", lease_seconds=60) is False
    time.sleep(0.5)
    second = claim("dies-2", 0.2)  # the first worker died: its lease ran out
    assert second is not None and second.attempts == 2
    assert admin.jobs.finish_job(job_id, "dies-1", {"added": 0}) is False  # no longer its job
    time.sleep(0.5)
    assert claim("third", 60) is None  # died during every attempt: given up, not claimed
    row = admin.jobs.job(job_id)
    assert row["state"] == "failed" and row["error"].startswith("lease_expired")
