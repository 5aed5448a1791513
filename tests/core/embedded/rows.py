"""Rows written straight through a store's write session, below the engine's rules: for
tests of the store's own indexes and caches (the engine's rules have their own tests)."""

from __future__ import annotations

from typing import Any

from bli_memory.core.embedded.store import SQLiteStore
from bli_memory.core.memory.engine_writes import LiveRow
from bli_memory.core.memory.retrieval_writes import first_version
from bli_memory.core.models import Memory


def save_row(store: SQLiteStore, text: str, vector: Any, *, space: str) -> Memory:
    """Insert ``text`` as a first version in ``space``; returns the row."""
    with store.writing(space) as w:
        memory = first_version(space=w.canonical, content=text, custom_id=None, metadata=None, source="test",
                               session_id=None, at=w.at, expires_at=None)
        w.insert(memory, vector)
    return memory


def forget_row(store: SQLiteStore, memory: Memory | None) -> None:
    """Tombstone the live row ``memory``."""
    assert memory is not None
    with store.writing(memory.space) as w:
        assert w.retire(LiveRow(memory), "forgotten")


def supersede_row(store: SQLiteStore, memory: Memory, text: str, vector: Any) -> Memory:
    """Replace the live row ``memory`` with a new version holding ``text``."""
    import uuid
    from dataclasses import replace

    with store.writing(memory.space) as w:
        assert w.retire(LiveRow(memory), "superseded")
        new = replace(memory, id=str(uuid.uuid4()), content=text, version=memory.version + 1,
                      supersedes=memory.id, created_at=w.at, updated_at=w.at)
        w.insert(new, vector)
    return new
