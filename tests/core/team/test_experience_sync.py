"""The experience outbox shipped to the real memory service (subprocess on loopback, Postgres)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.experience import log as xp


def test_sync_ships_to_the_service_in_order_and_retries_idempotently(
    start_service: Callable[..., Any],
    new_person: Callable[..., Any],
    temp_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import httpx

    svc = start_service()
    alice = new_person()
    monkeypatch.setenv("BLI_MEMORY_DASHBOARD_URL", svc.url)
    monkeypatch.setenv("BLI_MEMORY_DEVICE_TOKEN", alice.token)
    t0 = datetime.now(UTC) - timedelta(hours=1)
    entries = [
        xp.record(
            "win" if i % 2 else "loss",
            "bli",
            f"opinion {i}",
            agent="codex",
            project="p",
            now=t0 + timedelta(seconds=i),
        )
        for i in range(22)
    ]

    first = xp.sync()
    assert first.target == "service" and first.reason is None
    assert list(first.shipped) == [e.id for e in entries[:20]] and first.queued == 2
    second = xp.sync()
    assert list(second.shipped) == [e.id for e in entries[20:]] and second.queued == 0

    # A lost answer: the service has the row, the sidecar still says queued. The retry
    # under the same UUID is answered 200 and marks it shipped; no second row appears.
    path = xp.outbox_dir() / f"{entries[0].id}.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "shipped": False}))
    again = xp.sync()
    assert list(again.shipped) == [entries[0].id] and again.reason is None
    r = httpx.post(svc.url + "/api/memory/experience", headers=alice.headers, json=entries[0].payload())
    assert r.status_code == 200

    # Same UUID, other content: 409, recorded on the sidecar, never sent again.
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "shipped": False, "verdict": "noise"}))
    conflict = xp.sync()
    assert list(conflict.conflicts) == [entries[0].id]
    assert json.loads(path.read_text())["conflict"]["status"] == 409
    assert xp.sync().attempted == 0
