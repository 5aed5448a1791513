"""An update on Postgres does not carry a secret from an old row's sessionId or source."""

from __future__ import annotations

import json
from typing import Any

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_an_update_masks_the_labels_it_carries_from_an_old_row(admin: Any, new_person, space: str) -> None:
    backend = admin.for_person(admin.ensure_person(new_person().name))
    saved = backend.save("The nightly job rebuilds the index.", space=space, session_id="s-1").memory
    with admin._conn("write an old row") as conn:  # as a save before labels were masked
        conn.execute("UPDATE memories SET session_id = %s, source = %s WHERE id = %s",
                     (f"session {TOKEN}", f"cli {TOKEN}", saved.id))
    updated = backend.update("The nightly job rebuilds the index at 02:00.", space=space, id=saved.id).memory
    assert TOKEN not in f"{updated.session_id} {updated.source}"
    assert updated.session_id == "session [REDACTED:github_token]"


def test_an_update_masks_the_metadata_it_carries_from_an_old_row(admin: Any, new_person, space: str) -> None:
    backend = admin.for_person(admin.ensure_person(new_person().name))
    saved = backend.save("The deploy reads its headers from the config.", space=space).memory
    old = {"headers": {"Authorization": "Basic dXNlcjpwYXNzd29yZA=="}, "password": "kangaroo", "team": "web"}
    with admin._conn("write an old row") as conn:  # as a save before metadata was masked
        conn.execute("UPDATE memories SET metadata = %s WHERE id = %s", (json.dumps(old), saved.id))
    result = backend.update("The deploy reads its headers from the vault.", space=space, id=saved.id)
    stored = json.dumps(result.memory.metadata)
    assert "dXNlcjpwYXNzd29yZA" not in stored and "kangaroo" not in stored
    assert result.memory.metadata["team"] == "web"
    assert result.masked == 2
