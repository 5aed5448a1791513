"""The documents doors in-process (the app with its lifespan, a real Postgres): auth, bounds,
idempotent parts, manifest ranges, and the service masking what a client sent unmasked."""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg

from bli_memory.core.team.service import document_models as dm

TOKEN = "ghp_" + "M1n2B3v4C5x6Z7l8K9j0" * 2


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _chunk(text: str, line: int = 1, heading: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"heading": list(heading), "startLine": line, "endLine": line, "text": text}


def _post(client: Any, person: Any, door: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/documents/{door}", json=body, headers=person.headers)


def _texts(db: str, space: str) -> list[tuple[str, str, int, str]]:
    with psycopg.connect(db) as conn:
        return conn.execute(
            "SELECT c.path, c.file_sha256, c.ordinal, c.text FROM memory_doc_chunks c "
            "JOIN memory_doc_indexes i ON i.id = c.index_id WHERE i.space = %s AND c.kind = 'document' "
            "ORDER BY c.path, c.file_sha256, c.ordinal", (space,)).fetchall()


def _status(client: Any, person: Any, space: str) -> dm.DocumentStatusAnswer:
    answer = _post(client, person, "status", {"containerTag": space})
    return dm.DocumentStatusAnswer.model_validate(answer.json())


def test_documents_doors_need_a_token_and_refuse_what_they_cannot_keep(client: Any, new_person,
                                                                        space: str) -> None:
    assert client.post("/api/documents/search", json={"containerTag": space, "q": "x"}).status_code == 401
    p = new_person()
    good = {"path": "a.md", "sha256": _sha("a"), "size": 1, "total": 1, "chunks": [_chunk("a")]}
    refusals = {
        "search": [({"containerTag": space, "q": "x", "limit": 51}, "limit must be an integer from 1 to 50"),
                   ({"containerTag": space, "q": "x", "kinds": ["memory"]}, "kinds.0 must be one of")],
        "manifest": [({"containerTag": space, "files": [{"path": "a.md", "sha256": "not-a-hash"}]},
                      "files.0.sha256"),
                     ({"containerTag": space, "files": [{"path": "x" * 1025, "sha256": _sha("a")}]},
                      "files.0.path")],
        "upload": [({"containerTag": space, "files": [{**good, "total": 0}]}, "past its total"),
                   ({"containerTag": space, "files": [{**good, "size": "1"}]},
                    "files.0.size must be an integer"),
                   ({"containerTag": space, "files": [{**good, "chunks": [_chunk("a")] * 257, "total": 257}]},
                    "holds more than 256 items"),
                   ({"containerTag": space, "files": [
                       {**good, "path": f"{n}.md", "chunks": [_chunk("a")] * 200, "total": 200}
                       for n in range(2)]}, "at most 256 chunks"),
                   ({"containerTag": space, "commits": [{"sha": "abc", "date": "d", "text": "t"}]},
                    "commits.0.sha"),
                   ({"containerTag": space, "commits": [{"sha": "a" * 40, "date": TOKEN, "text": "t"}]},
                    "commits.0.date"),
                   *(({"containerTag": space, "files": [{**good, "path": bad}]}, "a path must be relative")
                     for bad in ("../../etc/passwd", "/etc/passwd", "evil\x1b[31mred\r\n.md", "a//b.md")),
                   ({"containerTag": space,
                     "files": [{**good, "chunks": [{**_chunk("a", 5), "endLine": 1}]}]},
                    "endLine comes before"),
                   ({"containerTag": space,
                     "finished": {"skipped": [{"path": "x.md", "reason": "AKIAZ7QW3R"}]}},
                    "finished.skipped.0.reason"),
                   ({"containerTag": space, "finished": {"web": "javascript:alert(4)//"}}, "finished.web")],
        "forget": [({"containerTag": space, "path": ""}, "path"),
                   ({"containerTag": space, "path": "../other/"}, "not a path inside the repository"),
                   ({"containerTag": space, "path": "/etc/passwd"}, "not a path inside the repository")],
    }
    for door, cases in refusals.items():
        for body, words in cases:
            r = _post(client, p, door, body)
            assert r.status_code == 400, (door, r.text)
            assert words in r.json()["error"]["message"], (door, r.json())
            assert "x" * 100 not in r.text
    big = {"containerTag": space, "files": [], "pad": "x" * dm.MAX_DOCUMENTS_BODY_BYTES}
    assert _post(client, p, "manifest", big).status_code == 413
    # Nothing above wrote anything: the person has no index.
    assert _status(client, p, space).state is None


def test_a_file_in_parts_changes_at_once_and_a_retry_writes_nothing_twice(
    client: Any, new_person, space: str, service_db: str
) -> None:
    p = new_person()
    v1 = "The staging database is db-staging-1 and it is rebuilt every Sunday."
    up = _post(client, p, "upload", {"containerTag": space, "files": [
        {"path": "docs/db.md", "sha256": _sha(v1), "size": len(v1), "total": 1, "chunks": [_chunk(v1)]}],
        "finished": {"root": "/work/shop", "skipped": [{"path": ".env", "reason": "secret_file"}]}})
    assert up.status_code == 200, up.text
    assert dm.UploadAnswer.model_validate(up.json()).model_dump() == {
        "files": 1, "chunks": 1, "embedded": 1, "removed": 0, "commits": 0, "commitsRemoved": 0,
        "forgotten": 0, "secret": 0}

    sha2 = _sha("v2")
    parts = [_chunk("The staging database moved to db-staging-2.", 1, ("Database",)),
             _chunk(v1, 3, ("Database", "History")),  # the same text under another heading: embedded again
             _chunk(f"Its password is {TOKEN}; ask ops for access.", 5, ("Database", "Access"))]

    def send(n: int) -> Any:
        part = {"path": "docs/db.md", "sha256": sha2, "size": 99, "offset": n, "total": 3,
                "chunks": [parts[n]]}
        return _post(client, p, "upload", {"containerTag": space, "files": [part]})

    assert send(0).status_code == 200 and send(0).status_code == 200  # a retry writes nothing twice
    search = {"containerTag": space, "q": "which staging database?", "kinds": ["document"]}
    found = dm.DocumentSearchAnswer.model_validate(_post(client, p, "search", search).json()).results
    assert [h.text for h in found] == [v1]  # until its last part arrives, the file is its old version
    incomplete = send(2)  # part 1 never arrived: refused, and nothing of it is written
    assert incomplete.status_code == 400 and "never uploaded" in incomplete.json()["error"]["message"]
    assert len(_texts(service_db, space)) == 2
    assert send(1).status_code == 200
    done = send(2)
    assert done.status_code == 200 and done.json()["files"] == 1
    rows = _texts(service_db, space)
    assert [(r[1], r[2]) for r in rows] == [(sha2, 0), (sha2, 1), (sha2, 2)]  # the old version is gone
    assert TOKEN not in repr(rows) and "[REDACTED" in rows[2][3]  # masked by the service, too
    found = dm.DocumentSearchAnswer.model_validate(_post(client, p, "search", search).json()).results
    assert found[0].text == "The staging database moved to db-staging-2." and found[0].startLine == 1
    assert found[0].heading == ["Database"] and found[0].link is None  # no web host known: no link
    status = _status(client, p, space)
    assert status.owner == p.name and status.writable and status.state is not None
    assert (status.state.documents, status.state.chunks, status.state.root) == (1, 3, "/work/shop")
    assert [(s.path, s.reason) for s in status.state.skipped] == [(".env", "secret_file")]


def test_manifest_parts_cover_every_path_once_and_forgotten_paths_stay_out(
    client: Any, new_person, space: str
) -> None:
    p = new_person()
    held = {name: _sha(name) for name in ("README.md", "docs/a.md", "docs/b.md", "docs/c.md", "zz.md")}
    up = _post(client, p, "upload", {"containerTag": space, "files": [
        {"path": name, "sha256": sha, "size": 1, "total": 1, "chunks": [_chunk(f"text of {name}")]}
        for name, sha in held.items()]})
    assert up.status_code == 200 and up.json()["files"] == 5
    empty = {"path": "docs/empty.md", "sha256": _sha(""), "size": 0, "total": 0, "chunks": []}
    assert _post(client, p, "upload", {"containerTag": space, "files": [empty]}).json()["files"] == 1
    held["docs/empty.md"] = _sha("")
    # The client now has README.md (changed), docs/b.md, docs/new.md and zz.md, in two parts.
    def manifest(files: dict[str, str], **bounds: str) -> dm.ManifestAnswer:
        listed = [{"path": k, "sha256": v} for k, v in files.items()]
        body = {"containerTag": space, "files": listed, **bounds}
        return dm.ManifestAnswer.model_validate(_post(client, p, "manifest", body).json())

    one = manifest({"README.md": _sha("changed"), "docs/b.md": held["docs/b.md"]}, through="docs/b.md")
    two = manifest({"docs/new.md": _sha("new"), "zz.md": held["zz.md"]}, after="docs/b.md")
    assert (one.stale, one.extra) == (["README.md"], ["docs/a.md"])
    assert (two.stale, two.extra) == (["docs/new.md"], ["docs/c.md", "docs/empty.md"])

    forgot = _post(client, p, "forget", {"containerTag": space, "path": "./docs/"})
    assert forgot.status_code == 200
    assert dm.DocumentForgetAnswer.model_validate(forgot.json()).model_dump() == {
        "containerTag": space, "path": "docs/", "dropped": 4, "undone": False}
    again = manifest({"docs/new.md": _sha("new"), "zz.md": held["zz.md"]})
    assert (again.stale, again.extra) == ([], ["README.md"])  # a forgotten path is never asked for
    late = _post(client, p, "upload", {"containerTag": space, "files": [  # an old client sends it anyway
        {"path": "docs/new.md", "sha256": _sha("new"), "size": 1, "total": 1, "chunks": [_chunk("new")]}]})
    assert late.json()["forgotten"] == 1 and late.json()["files"] == 0
    status = _status(client, p, space)
    assert status.forgotten == ["docs/"] and status.state is not None and status.state.documents == 2


def test_the_services_documents_page_shows_the_index_the_person_reads(
    client: Any, new_person, admin: Any, space: str
) -> None:
    alice, bob, carol = new_person(), new_person(), new_person()
    text = "Deploys go out on Tuesdays after the change board."
    up = _post(client, alice, "upload", {"containerTag": space, "files": [
        {"path": "docs/deploy.md", "sha256": _sha(text), "size": len(text), "total": 1,
         "chunks": [_chunk(text, 1, ("Deploy",))]}],
        "finished": {"root": "/work/shop", "skipped": [{"path": ".env", "reason": "secret_file"}]}})
    assert up.status_code == 200
    admin.share_space(owner=alice.name, space=space, grantee=bob.name, access="read")
    client.cookies.clear()
    page = client.get(f"/ui/documents?space={space}&q=when+do+deploys+go+out", headers=bob.headers)
    assert page.status_code == 200, page.text
    assert "docs/deploy.md" in page.text and "change board" in page.text and ".env" in page.text
    assert 'href="/ui/documents"' in page.text
    other = client.get(f"/ui/documents?space={space}&q=deploys", headers=carol.headers)
    assert other.status_code == 200 and "not indexed" in other.text and "change board" not in other.text


def test_what_a_client_sends_unmasked_is_kept_masked_and_a_rewritten_history_keeps_one_copy(
    client: Any, new_person, space: str, service_db: str
) -> None:
    p = new_person()
    text = "Nothing secret in here."
    up = _post(client, p, "upload", {"containerTag": space, "files": [  # a client that masks no path
        {"path": f"docs/{TOKEN}/notes.md", "sha256": _sha(text), "size": 1, "total": 1,
         "chunks": [_chunk(text, 1, (f"Deploy with {TOKEN}",))]},
        {"path": "ok.md", "sha256": _sha("ok"), "size": 1, "total": 1,
         "chunks": [_chunk("fine", 1, (f"Deploy with {TOKEN}",))]}],
        "commits": [{"sha": "a" * 40, "date": "2026-01-01T00:00:00Z", "text": "first"},
                    {"sha": "b" * 40, "date": "2026-01-02T00:00:00Z", "text": "second"}],
        "finished": {"root": f"/home/me/{TOKEN}/shop", "lastCommit": "b" * 40,
                     "skipped": [{"path": f"secrets/{TOKEN}.md", "reason": "secret_path"}]}})
    assert up.status_code == 200, up.text
    assert (up.json()["secret"], up.json()["files"], up.json()["commits"]) == (1, 1, 2)
    with psycopg.connect(service_db) as conn:
        stored = conn.execute(
            "SELECT row_to_json(i)::text, (SELECT json_agg(c)::text FROM memory_doc_chunks c WHERE "
            "c.index_id = i.id), (SELECT json_agg(f)::text FROM memory_doc_files f WHERE f.index_id = i.id) "
            "FROM memory_doc_indexes i WHERE i.space = %s", (space,)).fetchall()
    assert TOKEN not in repr(stored) and "[REDACTED" in repr(stored)
    status = _status(client, p, space)
    assert status.state is not None and status.state.documents == 1 and status.lastCommit == "b" * 40

    # After a rewrite the client compares the history's ids: "b" was amended into "c".
    def history(commits: list[str], **bounds: str) -> dm.ManifestAnswer:
        body = {"containerTag": space, "commits": commits, **bounds}
        return dm.ManifestAnswer.model_validate(_post(client, p, "manifest", body).json())

    one, two = history(["a" * 40], through="a" * 40), history(["c" * 40], after="a" * 40)
    assert (one.stale, one.extra, two.stale, two.extra) == ([], [], ["c" * 40], ["b" * 40])
    both = {"containerTag": space, "files": [{"path": "x.md", "sha256": _sha("x")}], "commits": ["a" * 40]}
    assert _post(client, p, "manifest", both).status_code == 400
    fix = _post(client, p, "upload", {"containerTag": space, "removedCommits": ["b" * 40],
                                      "commits": [{"sha": "c" * 40, "date": "2026-01-02T00:00:00Z",
                                                   "text": "second, amended"}],
                                      "finished": {"root": "/work/shop", "lastCommit": "c" * 40}})
    assert (fix.json()["commitsRemoved"], fix.json()["commits"]) == (1, 1)
    with psycopg.connect(service_db) as conn:
        shas = conn.execute("SELECT c.sha, c.text FROM memory_doc_chunks c JOIN memory_doc_indexes i "
                            "ON i.id = c.index_id WHERE i.space = %s AND c.kind = 'commit' ORDER BY c.sha",
                            (space,)).fetchall()
    assert shas == [("a" * 40, "first"), ("c" * 40, "second, amended")]
    assert _status(client, p, space).lastCommit == "c" * 40

    # forget --undo lets a path back in; a path never kept out answers undone false.
    assert _post(client, p, "forget", {"containerTag": space, "path": "ok.md"}).json()["dropped"] == 1
    undo = {"containerTag": space, "path": "ok.md", "undo": True}
    assert _post(client, p, "forget", undo).json()["undone"] is True
    assert _status(client, p, space).forgotten == []
    assert _post(client, p, "forget", undo).json()["undone"] is False


def test_globs_and_forgotten_paths_a_client_sends_are_kept_masked(client: Any, new_person, space: str,
                                                                  service_db: str) -> None:
    p = new_person()
    body = {"containerTag": space, "finished": {"include": [f"docs/{TOKEN}/**"], "exclude": [f"{TOKEN}.md"]}}
    assert _post(client, p, "upload", body).status_code == 200
    assert _post(client, p, "forget", {"containerTag": space, "path": f"secrets/{TOKEN}/"}).status_code == 200
    with psycopg.connect(service_db) as conn:
        kept = conn.execute("SELECT i.globs::text, coalesce(string_agg(f.path, ' '), '') "
                            "FROM memory_doc_indexes i LEFT JOIN memory_doc_forgotten f ON f.index_id = i.id "
                            "WHERE i.space = %s "
                            "GROUP BY i.globs::text", (space,)).fetchall()
    assert kept and all(TOKEN not in " ".join(row) for row in kept), kept
    assert "[REDACTED:" in kept[0][0] and "[REDACTED:" in kept[0][1]
