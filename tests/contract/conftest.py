"""One memory contract, three backends: embedded SQLite, Postgres, and the HTTP client.

``backend`` is parametrised over

- ``embedded``: :class:`EmbeddedBackend` on a SQLite file in the test's temp folder;
- ``postgres``: :class:`PostgresBackend` on a real Postgres + pgvector server
  (``tests/core/team/pgserver.py``), acting as a fresh person per test;
- ``remote``: :class:`RemoteBackend` talking HTTP to the real service app served by
  uvicorn on a loopback port, with a fresh person's device token per test.

Every test in this folder runs against all three with the same expectations.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.core.team import pgserver


def _postgres_or_skip() -> pgserver.PgInstance:
    try:
        return pgserver.acquire()
    except pgserver.Unavailable as exc:
        if os.environ.get("BLI_MEMORY_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"Postgres with pgvector is required: {exc}")
        pytest.skip(f"no Postgres with pgvector: {exc}")


@pytest.fixture(scope="session")
def pg_instance() -> Iterator[pgserver.PgInstance]:
    inst = _postgres_or_skip()
    try:
        yield inst
    finally:
        pgserver.release(inst)


@pytest.fixture(scope="session")
def pg_admin(pg_instance: pgserver.PgInstance) -> Iterator[Any]:
    """The administrative PostgresBackend of a fresh, migrated database."""
    from bli_memory.core.team.postgres.store import PostgresBackend

    backend = PostgresBackend(pgserver.create_database(pg_instance, "bli_contract"), pool_size=20)
    try:
        yield backend
    finally:
        backend.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def service_url(pg_admin: Any) -> Iterator[str]:
    """The service app on a loopback port (uvicorn in a thread), over the contract database."""
    import uvicorn

    from bli_memory.core.team.service.app import create_app

    port = _free_port()
    app = create_app(backend=pg_admin, run_jobs=False)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", access_log=False)
    )
    thread = threading.Thread(target=server.run, name="contract-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the service did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@dataclass
class Subject:
    """A backend under test and what the contract leaves to each store.

    ``add_alias`` declares an alias; ``another()`` gives a second, empty backend of
    the same kind (another file, or another person of the same database).
    """

    kind: str
    backend: Any
    add_alias: Callable[[str, str], None]
    another: Callable[[], Any]


# Postgres and the service are servers: their cases run in the full tier only (tests/tiers.py).
@pytest.fixture(params=["embedded", pytest.param("postgres", marks=pytest.mark.e2e),
                        pytest.param("remote", marks=pytest.mark.e2e)])
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    kind = request.param
    opened: list[Any] = []

    def make() -> Any:
        n = len(opened)
        if kind == "embedded":
            from bli_memory.core.embedded.engine import EmbeddedBackend

            backend: Any = EmbeddedBackend(tmp_path / f"memory-{n}.sqlite3")
        elif kind == "postgres":
            backend = admin.for_person(admin.ensure_person(f"person-{uuid.uuid4().hex[:12]}"))
        else:
            from bli_memory.core.team.client.remote import RemoteBackend

            _, token = admin.create_token(f"person-{uuid.uuid4().hex[:12]}", "laptop")
            backend = RemoteBackend(request.getfixturevalue("service_url"), token=token)
        opened.append(backend)
        return backend

    admin = request.getfixturevalue("pg_admin") if kind != "embedded" else None
    first = make()
    add_alias = first.store.add_alias if kind == "embedded" else admin.add_alias
    try:
        yield Subject(kind, first, add_alias, make)
    finally:
        for backend in opened:
            backend.close()


@pytest.fixture
def backend(subject: Subject) -> Any:
    return subject.backend


@pytest.fixture
def space() -> str:
    """A container tag no other test uses (aliases on the shared database are global)."""
    return f"repo_contract__{uuid.uuid4().hex[:16]}"
