"""Nothing lost when the team service is away (issue 19, item 9).

The stop hook runs for real (a subprocess with the Claude fixture transcript) against,
first, a loopback server that accepts connections and never answers, then the real
service (uvicorn subprocess over real Postgres) started on the same port. The
exchange is spooled, 0600, and shipped once the service answers: by the next stop
hook or by ``bli-memory-mcp worker``, each exchange exactly once.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.errors import ServiceError
from bli_memory.core.memory.spaces import derive_space
from bli_memory.core.team.client import spool
from bli_memory.core.team.client.remote import RemoteBackend
from tests.conftest import FIXTURES, bin_path
from tests.core.team.conftest import free_port
from tests.hooks_util import run_hook

CLAUDE = FIXTURES / "claude"


class _Hanging:
    """A loopback TCP server that accepts every connection and never answers."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.held: list[socket.socket] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.done.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self.done.set()
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def port() -> Iterator[int]:
    yield free_port()


def _stop(project: Path, tmp_path: Path, env: dict[str, str], *, prompt: str) -> Any:
    """Run the real stop hook on a transcript whose last exchange asks ``prompt``."""
    transcript = tmp_path / f"t-{len(list(tmp_path.glob('t-*')))}.jsonl"
    turns = [{"type": "user", "message": {"role": "user", "content": prompt}},
             {"type": "assistant", "message": {"role": "assistant", "content": [
                 {"type": "text", "text": f"Answered: {prompt} The decision is recorded."}]}}]
    transcript.write_text("".join(json.dumps(t) + "\n" for t in turns))
    payload = json.loads((CLAUDE / "stop.json").read_text())
    payload.update(cwd=str(project), transcript_path=str(transcript))
    return run_hook("stop", payload, cwd=project, env=env, timeout=60)


def _spooled() -> list[Path]:
    folder = spool.spool_dir()
    return sorted(folder.glob("*.json")) if folder.exists() else []


def _jobs(url: str, token: str, space: str) -> int:
    backend = RemoteBackend(url, token=token)
    try:
        return sum(backend.info(space=space)["extractJobs"].values())
    finally:
        backend.close()


def test_a_hanging_service_costs_no_turn_and_each_exchange_is_shipped_once(
    port: int, start_service: Any, new_person: Any, admin: Any, tmp_path: Path
) -> None:
    person = new_person()
    url = f"http://127.0.0.1:{port}"
    env = {"BLI_MEMORY_DASHBOARD_URL": url, "BLI_MEMORY_DEVICE_TOKEN": person.token}
    project = tmp_path / "p"
    project.mkdir()
    space = derive_space(str(project)).tag

    hanging = _Hanging(port)
    try:
        for prompt, why in (("How do we deploy the billing service?", "timeout"),
                            ("Which port does the gateway use?", "backoff")):  # the next one waits
            r = _stop(project, tmp_path, env, prompt=prompt)
            outcome, fields = r.receipt
            assert r.returncode == 0 and r.stdout == "", r.stderr  # no systemMessage: the turn is kept
            assert outcome == "ok" and fields["spooled"] is True and fields["queued"] is False
            assert fields["service"] == why
            # Well within the stop hook's 15 s deadline (it used to wait 10.3 s and drop the turn).
            assert fields["elapsed_ms"] < fields["deadline_ms"] / 2
    finally:
        hanging.close()
    (spool.spool_dir() / "backoff").unlink()  # the back-off is over (BACKOFF_S later)
    entries = _spooled()
    assert len(entries) == 2
    folder = spool.spool_dir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in entries)
    kept = [json.loads(p.read_text()) for p in entries]
    assert {e["service"] for e in kept} == {url} and all(e["space"] == space for e in kept)
    assert person.token not in "".join(p.read_text() for p in entries)
    again = tmp_path / "again.json"
    shutil.copy(entries[0], again)  # to ship the same exchange a second time below

    svc = start_service(port=port)  # the service is back, at the same address
    r = _stop(project, tmp_path, env, prompt="What is the retention of the audit log?")
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["queued"] is True and fields["backlog"] == 0, r.stderr
    assert _spooled() == []
    for entry in kept:
        job = admin.jobs.job(entry["id"])
        assert job is not None and job["space"] == space
    assert _jobs(svc.url, person.token, space) == 3

    # A retry of an exchange the service already holds (a timeout after it committed,
    # two hooks shipping at once) is the same job, never a second one.
    shutil.copy(again, spool.spool_dir() / again.name.replace("again", entries[0].stem))
    done = subprocess.run([bin_path(), "worker", "--once"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})
    assert done.returncode == 0 and "sent 1 spooled exchange" in done.stderr, done.stderr
    assert _spooled() == [] and _jobs(svc.url, person.token, space) == 3


def test_a_full_spool_fails_as_before(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens
    backend = RemoteBackend(url, token="blim_" + "z" * 43)
    folder = tmp_path / "spool"
    try:
        for i in range(spool.MAX_ENTRIES):
            spool._put(folder, {"id": f"00000000-0000-4000-8000-{i:012d}", "service": url, "text": "x"})
        with pytest.raises(ServiceError) as caught:
            spool.capture(backend, url, "User: a\n\nAssistant: b", space="s", source="hook:claude",
                          session_id=None, folder=folder)
        assert caught.value.reason == "dashboard_unreachable"
        assert len(list(folder.glob("*.json"))) == spool.MAX_ENTRIES
        # Another service's entries are never sent to this one.
        assert spool.ship(backend, "http://other.invalid", deadline=0, folder=folder).left == 0
    finally:
        backend.close()


def test_a_revoked_token_is_reported_and_the_exchange_stays_spooled(
    start_service: Any, new_person: Any, admin: Any, tmp_path: Path
) -> None:
    svc = start_service()
    person = new_person()
    admin.revoke_token(person.token_id)
    env = {"BLI_MEMORY_DASHBOARD_URL": svc.url, "BLI_MEMORY_DEVICE_TOKEN": person.token}
    project = tmp_path / "p"
    project.mkdir()
    r = _stop(project, tmp_path, env, prompt="Which region hosts the billing database?")
    assert r.reason == "http_401" and "http_401" in json.loads(r.stdout)["systemMessage"]
    assert len(_spooled()) == 1  # not lost: sent once the machine is paired again
    assert person.token not in r.stderr + r.stdout


def test_the_spool_makes_every_missing_folder_private_whatever_the_umask(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "bli-cockpit" / "spool"
    old = os.umask(0)
    try:
        spool._put(folder, {"id": "00000000-0000-4000-8000-000000000001", "service": "http://x", "text": "x"})
    finally:
        os.umask(old)
    for path in (tmp_path / "state", tmp_path / "state" / "bli-cockpit", folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


def test_a_recorded_turn_is_spooled_while_the_service_is_away_and_kept_once(
    port: int, start_service: Any, new_person: Any, tmp_path: Path
) -> None:
    from bli_memory.core.memory.switches import set_recording

    person = new_person()
    url = f"http://127.0.0.1:{port}"  # nothing listens yet
    env = {"BLI_MEMORY_DASHBOARD_URL": url, "BLI_MEMORY_DEVICE_TOKEN": person.token}
    project = tmp_path / "p"
    project.mkdir()
    space = derive_space(str(project)).tag
    set_recording(True, space)

    r = _stop(project, tmp_path, env, prompt="Which region hosts the billing database?")
    outcome, fields = r.receipt
    assert r.returncode == 0 and r.stdout == "", r.stderr  # the turn is kept: no systemMessage
    assert outcome == "ok" and fields["recorded"] is False and fields["spooled"] is True, fields
    (entry,) = _spooled()
    again = tmp_path / "again.json"
    shutil.copy(entry, again)

    svc = start_service(port=port)
    worker = [bin_path(), "worker", "--once"]
    done = subprocess.run(worker, capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    assert done.returncode == 0 and "sent 1 spooled exchange" in done.stderr, done.stderr
    shutil.copy(again, entry)  # the same turn shipped a second time: one recording still
    subprocess.run(worker, capture_output=True, text=True, timeout=120, env={**os.environ, **env}, check=True)
    assert _spooled() == []
    backend = RemoteBackend(svc.url, token=person.token)
    try:
        recs = backend.recordings(space=space)
        assert len(recs) == 1 and "billing database" in recs[0]["text"]
        assert backend.info(space=space)["extractJobs"] == {} or sum(
            backend.info(space=space)["extractJobs"].values()) == 0  # capture-only: no job
    finally:
        backend.close()
