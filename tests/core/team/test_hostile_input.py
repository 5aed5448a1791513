"""The service against hostile input: crafted version links, values Postgres cannot
keep, direction-less vectors and deeply nested JSON.

Real Postgres, the app in-process (``client``) or as a real subprocess
(``start_service``) driven by the real :class:`RemoteBackend`. Rows that an older
service could have stored (a foreign ``supersedes`` link, a zero vector) are written
into the database directly, as they would be found after an upgrade.
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.team.client.remote import RemoteBackend

T = "2026-11-30T04:57:01.123456Z"
MODEL = "all-MiniLM-L6-v2-int8"


def _post(client: Any, person: Any, door: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/memory/{door}", headers=person.headers, json=body)


def _raw(client: Any, person: Any, door: str, body: dict[str, Any], nested: str | None = None) -> Any:
    """POST ``body`` as ASCII JSON (NUL and lone surrogates as ``\\u`` escapes, as any
    client may send them); ``nested`` replaces the string ``"@nested@"`` verbatim."""
    text = json.dumps(body)
    if nested is not None:
        text = text.replace('"@nested@"', nested)
    return client.post(f"/api/memory/{door}", headers={**person.headers, "content-type": "application/json"},
                       content=text.encode("ascii"))


def _rec(space: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"id": str(uuid.uuid4()), "space": space, "content": content, "createdAt": T, "updatedAt": T,
            **extra}


def _b64(vector: np.ndarray) -> str:
    return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")


def _refused(r: Any, *words: str) -> None:
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["reason"] == "invalid_input", r.text
    for word in words:
        assert word in err["message"], r.text


# --- version links cannot cross people -------------------------------------------------


def test_import_cannot_link_a_row_to_another_persons_memory(client: Any, new_person, space: str) -> None:
    victim, attacker = new_person(), new_person()
    vid = _post(client, victim, "save", {"containerTag": space, "content": "Victim: the staging root "
                                         "password is purple-otter-42."}).json()["memory"]["id"]
    bait = _rec(space, "attacker bait row", supersedes=vid, version=2)
    _refused(_post(client, attacker, "import", {"records": [bait]}),
             "record 1", f"supersedes {vid} is neither one of your memories")
    # Naming the victim's id as "another part of this import" does not open the door.
    r = _post(client, attacker, "import", {"records": [bait], "chainIds": [vid], "dryRun": True})
    _refused(r, "record 1", "neither one of your memories")
    # Nor does a link to an id nobody has, outside the import.
    dangling = _rec(space, "dangling", supersedes=str(uuid.uuid4()))
    _refused(_post(client, attacker, "import", {"records": [dangling]}), "neither one of your memories")
    _refused(_post(client, attacker, "import", {"records": [{**bait, "supersedes": bait["id"]}]}),
             "supersedes names the record itself")
    assert _post(client, attacker, "export", {}).json()["records"] == []
    r = _post(client, attacker, "get", {"id": bait["id"], "includeInactive": True})
    assert r.status_code == 404
    r = _post(client, victim, "get", {"id": vid, "includeInactive": True})
    assert r.status_code == 200 and r.json()["history"] == []

    # Links to the importer's own rows and within the import are a history, as exported.
    own = _post(client, attacker, "save", {"containerTag": space, "content": "Attacker's own note v1."}
                ).json()["memory"]
    v2 = _rec(space, "Attacker's own note v2.", supersedes=own["id"], version=2)
    older = _rec(space, "older", state="superseded")
    newer = _rec(space, "newer", supersedes=older["id"], version=2)
    r = _post(client, attacker, "import", {"records": [v2, newer, older]})
    assert r.status_code == 200 and r.json()["imported"] == 3, r.text
    versions = _post(client, attacker, "history", {"id": newer["id"]}).json()["versions"]
    assert [v["id"] for v in versions] == [newer["id"], older["id"]]


def test_a_foreign_link_already_stored_neither_leaks_nor_purges(
    client: Any, new_person, admin: Any, space: str
) -> None:
    victim, attacker = new_person(), new_person()
    vid = _post(client, victim, "save", {"containerTag": space, "content": "Victim: the deploy key is "
                                         "in vault path kv/ops/deploy."}).json()["memory"]["id"]
    bait = _post(client, attacker, "save", {"containerTag": space, "content": "attacker bait row"}
                 ).json()["memory"]["id"]
    # As an older service could have stored it: the attacker's row names the victim's.
    with psycopg.connect(admin._shared.database_url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET supersedes = %s, version = 2 WHERE id = %s", (vid, bait))

    r = _post(client, attacker, "get", {"id": bait, "includeInactive": True})
    assert r.status_code == 200 and r.json()["history"] == [] and "vault" not in r.text
    r = _post(client, attacker, "history", {"id": bait})
    assert [v["id"] for v in r.json()["versions"]] == [bait] and "vault" not in r.text
    r = _post(client, victim, "get", {"id": vid, "includeInactive": True})
    assert r.json()["history"] == [] and "bait" not in r.text
    assert [v["id"] for v in _post(client, victim, "history", {"id": vid}).json()["versions"]] == [vid]

    assert _post(client, attacker, "purge", {"id": bait}).json() == {"erased": 1}
    r = _post(client, victim, "get", {"id": vid})
    assert r.status_code == 200 and r.json()["memory"]["id"] == vid
    # The victim's own update and forget still work on the untouched chain.
    r = _post(client, victim, "update", {"containerTag": space, "id": vid, "content": "Victim: the deploy "
                                         "key moved to kv/ops/deploy2."})
    assert r.status_code == 200
    assert len(_post(client, victim, "history", {"id": vid}).json()["versions"]) == 2


def test_a_loop_of_links_does_not_hang_history_or_purge(
    client: Any, new_person, admin: Any, space: str
) -> None:
    p = new_person()
    a, b = _rec(space, "loop row a"), _rec(space, "loop row b", state="superseded")
    assert _post(client, p, "import", {"records": [a, b]}).status_code == 200
    # Import refuses a loop now; an older service could have stored one.
    with psycopg.connect(admin._shared.database_url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET supersedes = %s WHERE id = %s", (b["id"], a["id"]))
        conn.execute("UPDATE memories SET supersedes = %s WHERE id = %s", (a["id"], b["id"]))
    # A loop that is followed forever never answers: pytest-timeout names the test.
    versions = _post(client, p, "history", {"id": a["id"]}).json()["versions"]
    assert sorted(v["id"] for v in versions) == sorted([a["id"], b["id"]])
    assert _post(client, p, "purge", {"id": b["id"]}).json() == {"erased": 2}


def test_remote_import_keeps_a_history_that_spans_parts(start_service, new_person, monkeypatch) -> None:
    from bli_memory.core.team.client import transfer as remote_module

    svc = start_service()
    alice, bob = new_person(), new_person()
    space = f"repo_chain__{uuid.uuid4().hex[:12]}"
    a = RemoteBackend(svc.url, token=alice.token)
    b = RemoteBackend(svc.url, token=bob.token)
    try:
        a.save("Release status: planning.", space=space, custom_id="status")
        for step in ("testing", "staging", "rolling out", "done"):
            a.save(f"Release status: {step}.", space=space, custom_id="status")
        rows = list(a.export(space=space))
        assert len(rows) == 5
        fresh_ids = {r["id"]: str(uuid.uuid4()) for r in rows}
        fresh = [{**r, "id": fresh_ids[r["id"]],
                  "supersedes": fresh_ids.get(r["supersedes"]) if r["supersedes"] else None} for r in rows]
        monkeypatch.setattr(remote_module, "IMPORT_PART_RECORDS", 2)
        # Newest first: every part links to a part written after it.
        assert b.import_records(list(reversed(fresh))) == {"imported": 5, "skipped": 0, "forgotten": 0,
                                                           "masked": 0}
        newest = fresh[-1]["id"]
        assert [m.content for m in b.history(newest)] == [
            "Release status: done.", "Release status: rolling out.", "Release status: staging.",
            "Release status: testing.", "Release status: planning."]
        assert "door import -> 200" in svc.stderr()
    finally:
        a.close()
        b.close()


# --- values Postgres cannot keep answer 400, and nothing is written --------------------


def test_values_the_store_cannot_keep_are_refused_not_retried(client: Any, new_person, space: str) -> None:
    p = new_person()
    for body in (
        {"content": "nul \x00 inside"},
        {"content": "lone \ud800 surrogate"},
        {"content": "ok", "metadata": {"k": "v\x00"}},
        {"content": "ok", "metadata": {"k\udfff": "v"}},
        {"content": "ok", "customId": "a\x00b"},
        {"content": "ok", "sessionId": "a\x00b"},
        {"content": "x", "extract": True, "sessionId": "a\x00b"},
        {"content": "long key", "customId": secrets.token_hex(20_000)},
    ):
        _refused(_raw(client, p, "save", {"containerTag": space, **body}))
    _refused(_raw(client, p, "update", {"containerTag": space, "customId": "\ud800", "content": "x"}))
    _refused(_raw(client, p, "get", {"id": "\ud800"}), "surrogate")
    _refused(_raw(client, p, "record", {"containerTag": space, "text": "t", "sessionId": "a\x00"}))

    hostile = [
        _rec(space, "nul \x00 byte"),
        _rec(space, "cid", customId="a\x00b"),
        _rec(space, "sess", sessionId="a\x00b"),
        _rec(space, "meta", metadata={"k\x00": "v"}),
        _rec(space, "big version", version=10**30),
        _rec(space, "too long " * 5000),
        _rec(space, "long key", customId=secrets.token_hex(20_000)),
    ]
    for rec in hostile:
        for dry in (True, False):
            r = _post(client, p, "import", {"records": [_rec(space, "a fine row"), rec], "dryRun": dry})
            _refused(r, "nothing was")
    _refused(_raw(client, p, "import", {"records": [_rec(space, "lone \udc00")]}), "surrogate")
    assert _post(client, p, "info", {"containerTag": space}).json()["counts"] == {
        "active": 0, "superseded": 0, "forgotten": 0}


def test_a_remote_import_whose_last_part_the_database_refuses_writes_nothing(
    start_service, new_person, monkeypatch
) -> None:
    from bli_memory.core.errors import InvalidInputError
    from bli_memory.core.team.client import transfer as remote_module

    svc = start_service()
    p = new_person()
    space = f"repo_parts__{uuid.uuid4().hex[:12]}"
    records = [_rec(space, f"row {i} of a long import") for i in range(7)]
    # A key too long for a Postgres index: refused before the first part is sent.
    records[-1]["customId"] = secrets.token_hex(20_000)
    monkeypatch.setattr(remote_module, "IMPORT_PART_RECORDS", 2)
    rb = RemoteBackend(svc.url, token=p.token)
    try:
        with pytest.raises(InvalidInputError, match="record 7: customId is longer than"):
            rb.import_records(records)
        assert rb.info(space=space)["counts"] == {"active": 0, "superseded": 0, "forgotten": 0}
        assert rb.import_records(records[:-1]) == {"imported": 6, "skipped": 0, "forgotten": 0, "masked": 0}
    finally:
        rb.close()


# --- vectors without a direction ---------------------------------------------------------


def test_imported_vectors_without_a_direction_are_embedded_again(
    client: Any, new_person, admin: Any, space: str
) -> None:
    owner, reader = new_person(), new_person()
    bad = {
        "zero": np.zeros(384),
        "nan": np.full(384, np.nan),
        "inf": np.full(384, np.inf),
        "huge": np.full(384, 1e30),
        "half": np.full(384, 0.5 / np.sqrt(384)),
    }
    recs = [_rec(space, f"Deploy checklist item {name}: vector row.", embedding=_b64(v), embeddingModel=MODEL)
            for name, v in bad.items()]
    r = _post(client, owner, "import", {"records": recs})
    assert r.status_code == 200 and r.json()["imported"] == len(bad), r.text
    with psycopg.connect(admin._shared.database_url) as conn:
        norms = [float(n) for (n,) in conn.execute(
            "SELECT vector_norm(embedding) FROM memories WHERE id = ANY(%s::uuid[])",
            ([x["id"] for x in recs],))]
    assert len(norms) == len(bad) and all(abs(n - 1) < 1e-3 for n in norms), norms
    admin.share_space(owner=owner.name, space=space, grantee=reader.name)
    for who in (owner, reader):
        r = _post(client, who, "search", {"containerTag": space, "q": "deploy checklist"})
        assert r.status_code == 200 and r.json()["count"] == len(bad), r.text
        assert all(h["similarity"] > 0.3 for h in r.json()["results"])


def test_a_stored_zero_vector_does_not_break_search_or_forget(
    client: Any, new_person, admin: Any, space: str
) -> None:
    owner, reader = new_person(), new_person()
    zid = _post(client, owner, "save", {"containerTag": space, "content": "Zero vector row about deploys."}
                ).json()["memory"]["id"]
    with psycopg.connect(admin._shared.database_url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET embedding = %s::vector WHERE id = %s",
                     ("[" + ",".join(["0"] * 384) + "]", zid))
    admin.share_space(owner=owner.name, space=space, grantee=reader.name)
    for who in (owner, reader):
        r = _post(client, who, "search", {"containerTag": space, "q": "deploys"})
        assert r.status_code == 200, r.text
        hits = r.json()["results"]
        assert [h["memory"]["id"] for h in hits] == [zid]  # found by keyword
        assert hits[0]["similarity"] is None  # a cosine of NaN is no similarity, not a failure
        r = _post(client, who, "search", {"containerTag": space, "q": "unrelated words entirely"})
        assert r.status_code == 200 and r.json()["count"] == 0, r.text
    r = _post(client, owner, "forget", {"containerTag": space, "query": "Zero vector row about deploys."})
    assert r.status_code == 404 and r.json()["error"]["reason"] == "not_found", r.text
    assert _post(client, owner, "get", {"id": zid}).status_code == 200
    # The audit counts it as an unusable vector and its repair embeds the row again.
    report = _post(client, owner, "audit", {}).json()
    assert report["wrong_model"] == 1 and not report["ok"], report
    report = _post(client, owner, "audit", {"repair": True}).json()
    assert report["after"]["ok"], report
    hit = _post(client, owner, "search", {"containerTag": space, "q": "deploys"}).json()["results"][0]
    assert hit["memory"]["id"] == zid and hit["similarity"] > 0.3


# --- nesting -----------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [130, 5_000, 40_000, 100_000])
def test_deeply_nested_bodies_are_refused(client: Any, new_person, space: str, depth: int) -> None:
    from bli_memory.core.team.service.app import MAX_BODY_BYTES

    p = new_person()
    nested = '{"a":' * depth + "1" + "}" * depth
    if len(nested) < MAX_BODY_BYTES - 100:
        _refused(_raw(client, p, "save", {"containerTag": space, "content": "deep", "metadata": "@nested@"},
                      nested), "nested")
    _refused(_raw(client, p, "import", {"records": [_rec(space, "deep", metadata="@nested@")]}, nested),
             "nested")


def test_metadata_nesting_limit(client: Any, new_person, space: str) -> None:
    from bli_memory.core.memory.records import MAX_METADATA_DEPTH

    p = new_person()

    def nested(levels: int) -> dict[str, Any]:
        out: dict[str, Any] = {"leaf": 1}
        for _ in range(levels - 1):
            out = {"a": out}
        return out

    r = _post(client, p, "save", {"containerTag": space, "content": "fine depth",
                                  "metadata": nested(MAX_METADATA_DEPTH)})
    assert r.status_code == 201, r.text
    _refused(_post(client, p, "save", {"containerTag": space, "content": "too deep",
                                       "metadata": nested(MAX_METADATA_DEPTH + 1)}), "nested")
    _refused(_post(client, p, "import", {"records": [
        _rec(space, "too deep", metadata=nested(MAX_METADATA_DEPTH + 1))]}), "record 1", "nested")


def test_a_problem_spanning_parts_is_found_before_any_part_is_sent(start_service, new_person,
                                                                     monkeypatch) -> None:
    from bli_memory.core.team.client import transfer as remote_module

    svc = start_service()
    person = new_person()
    space = f"repo_parts__{uuid.uuid4().hex[:12]}"
    monkeypatch.setattr(remote_module, "IMPORT_PART_RECORDS", 3)
    client = RemoteBackend(svc.url, token=person.token)
    try:
        filler = [_rec(space, f"filler {i}", state="forgotten") for i in range(6)]
        twice = [_rec(space, "first live", customId="k"), *filler, _rec(space, "second live", customId="k")]
        with pytest.raises(InvalidInputError, match="record 8: customId 'k' is live twice"):
            client.import_records(twice)
        same_id = [*filler, {**filler[0], "content": "again"}]
        with pytest.raises(InvalidInputError, match="record 7: id .* is also record 1"):
            client.import_records(same_id)
        assert list(client.export(space=space)) == []
    finally:
        client.close()


def test_two_people_importing_one_id_at_once_cannot_both_win(client: Any, new_person, space: str) -> None:
    import threading

    for trial in range(6):
        a, b = new_person(), new_person()
        key = str(uuid.uuid4())
        answers: dict[str, Any] = {}

        def send(person: Any, tag: str, key: str = key, answers: dict[str, Any] = answers,
                 trial: int = trial) -> None:
            rec = {**_rec(f"{space}{tag}{trial}", f"{tag} secret"), "id": key}
            answers[tag] = _post(client, person, "import", {"records": [rec]})

        threads = [threading.Thread(target=send, args=(a, "a")), threading.Thread(target=send, args=(b, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        codes = sorted(r.status_code for r in answers.values())
        assert codes == [200, 400], [r.text for r in answers.values()]


def test_ids_in_another_uuid_spelling_are_refused(client: Any, new_person, space: str) -> None:
    # Stores compare ids as text: one UUID in two spellings would be two rows.
    p = new_person()
    first = _rec(space, "Version one.", state="superseded")
    for other in (f"urn:uuid:{first['id']}", first["id"].upper()):
        second = _rec(space, "Version two.", supersedes=other, version=2)
        _refused(_post(client, p, "import", {"records": [first, second]}), "record 2", "lowercase dashed")
    _refused(_post(client, p, "import", {"records": [{**first, "id": first["id"].upper()}]}), "record 1")


def test_an_empty_recording_is_refused(client: Any, new_person, space: str) -> None:
    _refused(_post(client, new_person(), "record", {"text": "  ", "containerTag": space}), "needs text")


def test_import_refuses_a_supersede_loop_closed_through_an_earlier_part(
    client: Any, new_person, space: str
) -> None:
    person = new_person()
    a = _rec(space, "Deploy note, first version.", state="superseded")
    b = _rec(space, "Deploy note, second version.", state="superseded", supersedes=a["id"])
    r = _post(client, person, "import", {"records": [b], "chainIds": [a["id"]]})
    assert r.status_code == 200 and r.json()["imported"] == 1, r.text
    # The part that would close the loop: a supersedes b, which (stored) supersedes a.
    a["supersedes"] = b["id"]
    for dry in (True, False):
        _refused(_post(client, person, "import", {"records": [a], "dryRun": dry}), "record 1",
                 "supersedes makes a loop")
    assert [x["id"] for x in _post(client, person, "export", {}).json()["records"]] == [b["id"]]
