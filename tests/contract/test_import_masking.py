"""``memory import`` masks secrets like ``save_memory``, on every store.

An export file can come from anywhere (an older version, another tool, a hand edit), so
its content and metadata pass through the same redaction as a save before any row is
written, and the answer counts what was masked. Clean data round-trips unchanged.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from bli_memory.core.errors import InvalidInputError
from tests.conftest import bin_path
from tests.secret_corpus import SECRETS

GITHUB = next(secret for fmt, _, secret in SECRETS if fmt == "github classic")
PASSWORD = next(secret for fmt, _, secret in SECRETS if fmt == "wifi password prose")


def _record(space: str, content: str, **extra: object) -> dict:
    return {"id": str(uuid.uuid4()), "space": space, "content": content, "customId": None,
            "metadata": {}, "source": "import", "sessionId": None,
            "createdAt": "2026-11-01T10:00:00.000000Z", "updatedAt": "2026-11-01T10:00:00.000000Z",
            "version": 1, "supersedes": None, "state": "active", "forgottenAt": None,
            "expiresAt": None, "embedding": None, "embeddingModel": None, **extra}


@pytest.mark.e2e
@pytest.mark.e2e
def test_import_masks_secrets_in_content_and_metadata(backend, space: str) -> None:
    source = backend
    source.save("The deploy bot posts to #releases.", space=space)
    (clean,) = source.export(space=space)
    dirty = _record(space, f"CI pushes with {GITHUB}.",
                    metadata={"note": f"the staging wifi password is {PASSWORD}", "kind": "fact"})
    old = _record(space, f"The old token was {GITHUB}.", state="forgotten",
                  forgottenAt="2026-11-02T10:00:00.000000Z")
    target = source
    res = target.import_records([clean, dirty, old])
    assert res == {"imported": 2, "skipped": 1, "forgotten": 0, "masked": 3}
    rows = {r["id"]: r for r in target.export(space=space)}
    assert rows[clean["id"]] == clean  # clean data stays exact
    stored = json.dumps(list(rows.values()))
    assert GITHUB not in stored and PASSWORD not in stored
    assert "[REDACTED:github_token]" in rows[dirty["id"]]["content"]
    assert rows[dirty["id"]]["metadata"]["kind"] == "fact"
    assert rows[dirty["id"]]["embedding"]  # embedded from the masked text
    hits = target.search("how does CI push", space=space).hits
    assert hits and GITHUB not in hits[0].memory.content


def test_import_masks_secrets_in_session_id_and_source_and_pw_pairs(subject, space: str) -> None:
    backend = subject.backend
    session_secret = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
    source_secret = "sk-proj-" + "Ab3Cd4Ef5Gh6" * 4
    pw = "Tr0ub4dor&3"
    dirty = _record(space, f"The VPN login is user=bob pw={pw} for now.", sessionId=session_secret,
                    source=f"src {source_secret}", metadata={"note": f"db_pwd: '{pw}'"})
    res = backend.import_records([dirty])
    assert res == {"imported": 1, "skipped": 0, "forgotten": 0, "masked": 4}
    (row,) = backend.export(space=space)
    assert row["sessionId"] == "[REDACTED:github_token]"
    assert row["source"] == "src [REDACTED:openai_api_key]"
    assert row["content"] == "The VPN login is user=bob pw=[REDACTED:env_secret] for now."
    assert pw not in json.dumps(row["metadata"])
    if subject.kind == "embedded":  # nothing of them in the file or its write-ahead log
        backend.close()
        raw = b"".join(p.read_bytes() for p in backend.store_path.parent.glob(backend.store_path.name + "*"))
        assert raw and all(s.encode() not in raw for s in (session_secret, source_secret, pw))


def test_import_refuses_a_secret_custom_id(backend, space: str) -> None:
    with pytest.raises(InvalidInputError, match="record 1: customId"):
        backend.import_records([_record(space, "A memory keyed by a credential.", customId=GITHUB)])
    assert list(backend.export(space=space)) == []


@pytest.mark.e2e
@pytest.mark.e2e
def test_the_import_command_reports_masked_secrets(tmp_path: Path) -> None:
    space = f"repo_import__{uuid.uuid4().hex[:12]}"
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(_record(space, f"CI pushes with {GITHUB}.")) + "\n"
                    + json.dumps(_record(space, "Builds run on Fridays.")) + "\n", encoding="utf-8")
    proc = subprocess.run([bin_path(), "memory", "import", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "imported 2, skipped 0 (already present); 1 secret masked\n"
    out = subprocess.run([bin_path(), "memory", "export", "--space", space], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and GITHUB not in out.stdout and "[REDACTED:github_token]" in out.stdout

    clean = tmp_path / "clean.jsonl"
    clean.write_text(out.stdout, encoding="utf-8")
    again = subprocess.run([bin_path(), "memory", "import", str(clean)], capture_output=True, text=True,
                           timeout=120)
    assert again.stdout == "imported 0, skipped 2 (already present)\n"
