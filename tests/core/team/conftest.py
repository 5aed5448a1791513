"""Fixtures of the memory service tests: a real Postgres, the app, the service process.

- ``pg_instance`` / ``service_db``: a real Postgres + pgvector server (see
  ``pgserver.py``) and a fresh migrated database for this suite.
- ``admin``: the administrative :class:`PostgresBackend` of that database.
- ``client``: the app in-process (Starlette ``TestClient``, lifespan included).
- ``start_service``: ``bli-memory-mcp service`` as a real subprocess on a loopback
  port (uvicorn), its stderr kept in a file so tests can read every log line.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import bin_path
from tests.core.team import pgserver


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of the team wing runs against a real Postgres server, most through the
    service's HTTP app: all of them are ``e2e`` (tests/tiers.py). ``tryfirst``, so the
    mark is there before ``-m "not e2e"`` deselects."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def pg_instance() -> Iterator[pgserver.PgInstance]:
    try:
        inst = pgserver.acquire()
    except pgserver.Unavailable as exc:
        if os.environ.get("BLI_MEMORY_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"Postgres with pgvector is required: {exc}")
        pytest.skip(f"no Postgres with pgvector: {exc}")
    try:
        yield inst
    finally:
        pgserver.release(inst)


@pytest.fixture(scope="session")
def service_db(pg_instance: pgserver.PgInstance) -> str:
    """URL of a fresh database for the service tests (migrated by the first backend)."""
    return pgserver.create_database(pg_instance, "bli_service")


@pytest.fixture(scope="session")
def admin(service_db: str) -> Iterator[Any]:
    from bli_memory.core.team.postgres.store import PostgresBackend

    backend = PostgresBackend(service_db, pool_size=10)
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(scope="session")
def client(admin: Any) -> Iterator[Any]:
    """The app in-process over the service database (no job worker: tests drive jobs)."""
    from starlette.testclient import TestClient

    from bli_memory.core.ui.service_app import create_service_app

    with TestClient(create_service_app(backend=admin, run_jobs=False)) as tc:
        deadline = time.monotonic() + 60
        while tc.get("/readyz").status_code != 200:
            if time.monotonic() > deadline:
                pytest.fail("the app never became ready")
            time.sleep(0.1)
        yield tc


@dataclass
class Person:
    """A person with one device token."""

    name: str
    token: str
    token_id: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def new_person(admin: Any) -> Callable[..., Person]:
    """Make a fresh person (or another device of one) with a device token."""

    def make(name: str | None = None, device: str = "laptop") -> Person:
        name = name or f"person-{uuid.uuid4().hex[:10]}"
        token_id, token = admin.create_token(name, device)
        return Person(name=name, token=token, token_id=token_id)

    return make


@pytest.fixture
def space() -> str:
    return f"repo_service__{uuid.uuid4().hex[:16]}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServiceProcess:
    """A running ``bli-memory-mcp service`` subprocess."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def start_service(service_db: str, tmp_path: Path) -> Iterator[Callable[..., ServiceProcess]]:
    """Start the real service subprocess on a loopback port; stopped after the test."""
    import httpx

    started: list[ServiceProcess] = []

    def start(
        *, port: int | None = None, extra: tuple[str, ...] = (), log_level: str = "debug"
    ) -> ServiceProcess:
        port = port or free_port()
        log = tmp_path / f"service-{len(started)}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env["BLI_MEMORY_DATABASE_URL"] = service_db
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                [
                    bin_path(),
                    "service",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--log-level",
                    log_level,
                    *extra,
                ],
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env,
            )
        svc = ServiceProcess(proc=proc, url=f"http://127.0.0.1:{port}", log=log)
        started.append(svc)
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the service exited with {proc.returncode}:\n{svc.stderr()[-3000:]}")
            try:
                if httpx.get(svc.url + "/readyz", timeout=2).status_code == 200:
                    return svc
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                svc.kill()
                pytest.fail(f"the service never became ready:\n{svc.stderr()[-3000:]}")
            time.sleep(0.1)

    yield start
    for svc in started:
        svc.stop()
