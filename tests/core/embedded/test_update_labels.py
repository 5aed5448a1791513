"""An update does not carry a secret from an old row's sessionId or source to the new version.

Saves mask these labels (``tests/contract/test_storable_content.py``); a row written before
they did keeps its own, and an update copies the labels forward, so it masks them there.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from bli_memory.core.embedded.engine import EmbeddedBackend

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_an_update_masks_the_labels_it_carries_from_an_old_row(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    backend = EmbeddedBackend(path)
    try:
        saved = backend.save("The nightly job rebuilds the index.", space="t", session_id="s-1").memory
        with closing(sqlite3.connect(path)) as conn, conn:  # as a save before labels were masked
            conn.execute("UPDATE memories SET session_id = ?, source = ? WHERE id = ?",
                         (f"session {TOKEN}", f"cli {TOKEN}", saved.id))
        later = "The nightly job rebuilds the index at 02:00."
        updated = backend.update(later, space="t", id=saved.id).memory
        assert TOKEN not in f"{updated.session_id} {updated.source}"
        assert updated.session_id == "session [REDACTED:github_token]"
        plain = backend.save("The weekly job prunes logs.", space="t", session_id="s-2").memory
        again = backend.update("The weekly job prunes logs on Sundays.", space="t", id=plain.id).memory
        assert (again.session_id, again.source) == ("s-2", "mcp")
    finally:
        backend.close()


def test_an_update_masks_the_metadata_it_carries_from_an_old_row(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    backend = EmbeddedBackend(path)
    try:
        saved = backend.save("The deploy reads its headers from the config.", space="t").memory
        old = {"headers": {"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}, "password": "kangaroo",
               "team": "web"}
        with closing(sqlite3.connect(path)) as conn, conn:  # as a save before metadata was masked
            conn.execute("UPDATE memories SET metadata = ? WHERE id = ?", (json.dumps(old), saved.id))
        result = backend.update("The deploy reads its headers from the vault.", space="t", id=saved.id)
        stored = json.dumps(result.memory.metadata)
        assert "dXNlcjpwYXNzd29yZA" not in stored and "kangaroo" not in stored
        assert result.memory.metadata["team"] == "web"
        assert result.masked == 2
    finally:
        backend.close()
