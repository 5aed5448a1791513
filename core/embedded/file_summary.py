"""A look at an embedded store file that changes nothing: for ``cockpit doctor``.

Opening a :class:`~bli_memory.core.embedded.store.SQLiteStore` migrates the file and takes
its locks; a health check must not. :func:`describe` reads a few counts over a read-only
connection instead, and the SQL stays with the store it reads.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from bli_memory.core.errors import StoreError

__all__ = ["StoreSummary", "describe"]


@dataclass(frozen=True)
class StoreSummary:
    """What :func:`describe` read.

    Attributes:
        live: Live memories (every space).
        model: The embedding model the store records, or None before its first vector.
        moved: Rows whose vectors are of another model than the recorded one (a
            ``memory reembed`` that stopped part way).
        has_vectors: Whether any row holds a vector.
    """

    live: int
    model: str | None
    moved: int
    has_vectors: bool


def describe(path: Path) -> StoreSummary:
    """Counts of the store file at ``path``, over a read-only connection (2 s busy timeout).

    Raises:
        StoreError: the file cannot be read as a store, naming why.
    """
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            live = conn.execute("SELECT count(*) FROM memories WHERE state = 'active'").fetchone()[0]
            model = dict(conn.execute("SELECT key, value FROM store_meta").fetchall()).get("embedding_model")
            moved = conn.execute("SELECT count(*) FROM memories WHERE embedding IS NOT NULL "
                                 "AND embedding_model IS NOT ?", (model,)).fetchone()[0] if model else 0
            vectors = conn.execute("SELECT 1 FROM memories WHERE embedding IS NOT NULL LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreError(f"{path} cannot be read: {exc}") from exc
    return StoreSummary(live=int(live), model=model, moved=int(moved), has_vectors=vectors is not None)
