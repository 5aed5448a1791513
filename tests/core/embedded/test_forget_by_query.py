"""Forget by query on the embedded store looks past expired rows the vector cache still holds."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bli_memory.core.embedded.engine import EmbeddedBackend


def test_a_live_match_behind_many_closer_expired_rows_is_found(tmp_path: Path) -> None:
    backend = EmbeddedBackend(tmp_path / "memory.sqlite3")
    try:
        text = "The build cache lives in /tmp/cache."
        backend.save("Warm-up: the model and the store are loaded.", space="s")
        when = datetime.now(UTC) + timedelta(seconds=2)
        expiry = when.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        for n in range(70):  # each under its own key: the same text, 70 rows
            backend.save(text, space="s", custom_id=f"cache-{n}", expires_at=expiry)
        live = backend.save("The build cache now lives in /tmp/cache.", space="s").memory
        time.sleep(max(0.0, (when - datetime.now(UTC)).total_seconds()) + 0.1)
        gone = backend.forget(space="s", query=text)
        assert gone.memory.id == live.id and gone.matched_by == "query"
        assert gone.similarity is not None and gone.similarity >= 0.85
    finally:
        backend.close()
