"""A slow team service still drains the spool (the real service behind a delaying proxy).

A service that answers, but only after more than the stop hook's 2 s request budget,
used to be treated as away on every hook: the oldest spooled exchange was sent again
each time and timed out again, and newer ones waited forever (the daemon and
``worker`` had the same 2 s budget per request). Now a hook that finds the service too
slow backs off (later hooks spool without sending), and the backlog path, off the prompt
path, gives each request :data:`~bli_memory.core.team.client.spool.BACKLOG_REQUEST_TIMEOUT_S`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.memory.spaces import derive_space
from bli_memory.core.team.client import spool
from tests.conftest import bin_path
from tests.core.team.conftest import free_port
from tests.core.team.test_spool import _spooled, _stop

DELAY_S = 3.0


class _SlowProxy:
    """Forwards loopback TCP to ``upstream``, holding each answer back ``delay`` seconds."""

    def __init__(self, upstream: int, delay: float) -> None:
        self.port = free_port()
        self.upstream = upstream
        self.delay = delay
        self.requests = 0  # HTTP requests seen (each starts with a method line)
        self.sock = socket.create_server(("127.0.0.1", self.port))
        self.sock.settimeout(0.1)
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.done.is_set():
            try:
                client = self.sock.accept()[0]
            except OSError:
                continue
            server = socket.create_connection(("127.0.0.1", self.upstream))
            asked = threading.Event()
            for args in ((client, server, asked, False), (server, client, asked, True)):
                t = threading.Thread(target=self._pump, args=args, daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, asked: threading.Event, answer: bool) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if answer and asked.is_set():
                    asked.clear()
                    time.sleep(self.delay)  # the slow part: the service thinks before answering
                elif not answer and data.split(b" ", 1)[0] in (b"GET", b"POST"):
                    self.requests += 1
                    asked.set()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self.done.set()
        self.sock.close()


@pytest.fixture
def slow(start_service: Any) -> Iterator[_SlowProxy]:
    svc = start_service()
    proxy = _SlowProxy(int(svc.url.rsplit(":", 1)[1]), DELAY_S)
    try:
        yield proxy
    finally:
        proxy.close()


def test_a_slow_service_gets_every_spooled_exchange_not_the_oldest_forever(
    slow: _SlowProxy, new_person: Any, admin: Any, tmp_path: Path
) -> None:
    person = new_person()
    url = f"http://127.0.0.1:{slow.port}"
    env = {"BLI_MEMORY_DASHBOARD_URL": url, "BLI_MEMORY_DEVICE_TOKEN": person.token}
    project = tmp_path / "p"
    project.mkdir()
    space = derive_space(str(project)).tag

    first = _stop(project, tmp_path, env, prompt="How do we deploy the billing service?")
    outcome, fields = first.receipt
    assert outcome == "ok" and fields["spooled"] is True and fields["service"] == "timeout", first.stderr
    sent = slow.requests
    assert sent >= 1
    for prompt in ("Which port does the gateway use?", "What is the retention of the audit log?"):
        r = _stop(project, tmp_path, env, prompt=prompt)
        outcome, fields = r.receipt
        assert outcome == "ok" and fields["spooled"] is True and fields["backlog"] >= 2, r.stderr
    assert slow.requests == sent  # backing off: no hook resent the oldest exchange
    ids = [spool._read(p)["id"] for p in _spooled()]
    assert len(ids) == 3

    done = subprocess.run([bin_path(), "worker", "--once"], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **env})
    assert done.returncode == 0 and "sent 3 spooled exchange(s)" in done.stderr, done.stderr
    assert _spooled() == []
    for job_id in ids:
        job = admin.jobs.job(job_id)
        assert job is not None and job["space"] == space
