"""The Postgres store's own duties: migrations, the model check, concurrent writers."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest

from bli_memory.core.errors import ModelMismatchError, StoreError
from bli_memory.core.team.postgres.store import VERSION_TABLE, PostgresBackend, migrate
from tests.core.team import pgserver


def test_migrations_apply_once_even_when_replicas_start_together(pg_instance: Any) -> None:
    url = pgserver.create_database(pg_instance, "bli_migrate")
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(migrate(url))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert sorted(results) == [[], [], [], ["0001", "0002", "0003", "0004", "0005"]]
    assert migrate(url) == []
    with psycopg.connect(url) as conn:
        assert conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone() == ("0005",)
        ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        assert ext is not None
        indexes = {
            r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")
        }
        recording_indexes = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_session_recordings'")}
        document_indexes = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_doc_chunks'")}
    assert {"memories_embedding", "memories_terms", "memories_live_custom_id", "memories_session",
            "memories_owner"} <= indexes
    assert "memory_session_recordings_space" in recording_indexes
    assert {"memory_doc_chunks_place", "memory_doc_chunks_commit", "memory_doc_chunks_terms",
            "memory_doc_chunks_embedding"} <= document_indexes


def test_another_embedding_model_is_refused(pg_instance: Any) -> None:
    class OtherModel:
        name = "some-other-model"
        dimensions = 384

        def embed(self, texts: list[str]) -> Any:  # pragma: no cover - never reached
            raise AssertionError

    url = pgserver.create_database(pg_instance, "bli_model")
    PostgresBackend(url, pool_size=1).close()
    with pytest.raises(ModelMismatchError) as err:
        PostgresBackend(url, pool_size=1, embedder=OtherModel())
    # Like the embedded store's, the message says the ways out: the database's model, or
    # a new database filled by export and import (a team database has no reembed).
    assert ("start the service with BLI_MEMORY_EMBEDDER=all-MiniLM-L6-v2-int8 (the model this database "
            "was created with), or, to move to some-other-model, export every person's memories "
            "(`bli-memory-mcp memory export`) and import them") in str(err.value)


def test_an_unreachable_database_is_a_store_error() -> None:
    from bli_memory.core.errors import MigrationError

    with pytest.raises(MigrationError):
        PostgresBackend("postgresql://nobody@127.0.0.1:9/none", connect_timeout=1)
    with pytest.raises(StoreError):
        PostgresBackend("postgresql://nobody@127.0.0.1:9/none", connect_timeout=1, run_migrations=False)


def test_concurrent_writers_of_one_space_never_duplicate(admin: Any) -> None:
    backend = admin.for_person(admin.ensure_person(f"p-{uuid.uuid4().hex[:8]}"))
    space = f"repo_race__{uuid.uuid4().hex[:12]}"
    statuses: list[str] = []
    lock = threading.Lock()

    def save() -> None:
        for i in range(5):
            res = backend.save(f"Shared fact number {i}.", space=space, custom_id=None)
            res2 = backend.save(f"Versioned fact {i % 2}.", space=space, custom_id=f"key-{i % 2}")
            with lock:
                statuses.extend([res.status, res2.status])

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert statuses.count("created") >= 5
    recent = backend.profile(space=space, limit=100).recent
    contents = [m.content for m in recent]
    assert sorted(contents) == sorted(set(contents))  # every live text once
    assert len([m for m in recent if m.custom_id == "key-0"]) == 1
    assert len([m for m in recent if m.custom_id == "key-1"]) == 1
