"""Reads of the memory browser (core/ui): pages of live rows and counts per space.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bli_memory.core.embedded.store_base import COLUMNS, now_iso, row_to_memory
from bli_memory.core.embedded.store_reads import StoreReads
from bli_memory.core.models import Memory

__all__ = [
    "SQLiteBrowse",
]


class SQLiteBrowse:
    """The memory browser's reads (:class:`~bli_memory.core.memory.browse.BrowseReads`): a
    part of :class:`~bli_memory.core.embedded.store.SQLiteStore` (``store.browse``) over its
    connection; every space of the file is the one person's.

    Args:
        db: The store whose connection and transactions it uses.
    """

    def __init__(self, db: StoreReads) -> None:
        self._db = db

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """``(canonical tag, every tag naming the space)``."""
        return self._db.resolve_space(tag)

    def aliases(self) -> dict[str, list[str]]:
        """``{canonical tag: [alias, ...]}``."""
        return self._db.aliases()

    def count_by_state(self, spaces: Sequence[str]) -> dict[str, int]:
        """Memories per state of one space."""
        return self._db.count_by_state(spaces)

    def get(self, id: str) -> Memory | None:
        """Exactly the version ``id`` names, or None."""
        return self._db.get(id)

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first."""
        return self._db.history(id)

    def owners(self, tag: str) -> list[str]:
        """``[]``: every memory of the file is the one person's."""
        return []

    def writable(self, memory: Memory) -> bool:
        """True: the person may change every memory of the file."""
        return True

    def page_live(
        self, spaces: Sequence[str], *, before_seq: int | None = None, limit: int = 25
    ) -> list[tuple[int, Memory]]:
        """One page of live memories of these spaces, newest first (keyset paging on ``seq``).

        Args:
            spaces: Canonical tag and aliases.
            before_seq: The last ``seq`` of the previous page; None for the first page.
            limit: Rows in the page.

        Returns:
            ``[(seq, memory), ...]``; pass the last seq as ``before_seq`` for the next page.
            Served by the ``(space, state, seq)`` index: a page costs the same at any size.
        """
        marks = ",".join("?" * len(spaces))
        bound = "" if before_seq is None else "AND seq < ? "
        args: list[Any] = [*spaces, now_iso(), *([] if before_seq is None else [int(before_seq)])]
        with self._db._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE state = 'active' AND space IN ({marks}) "
                f"AND (expires_at IS NULL OR expires_at > ?) {bound}ORDER BY seq DESC LIMIT ?",
                (*args, int(limit)),
            ).fetchall()
        return [(int(r[0]), row_to_memory(r)) for r in rows]

    def space_counts(self, *, limit: int = 500) -> list[tuple[str, dict[str, int]]]:
        """Row counts per state for each space that holds rows, most live rows first.

        Counted from the ``(space, state, seq)`` index without reading any row.

        Returns:
            ``[(space, {"active": n, "superseded": n, "forgotten": n}), ...]``, at most ``limit``.
        """
        with self._db._read() as conn:
            rows = conn.execute(
                "SELECT space, state, count(*) FROM memories GROUP BY space, state"
            ).fetchall()
        out: dict[str, dict[str, int]] = {}
        for space, state, n in rows:
            out.setdefault(space, {"active": 0, "superseded": 0, "forgotten": 0})[state] = int(n)
        return sorted(out.items(), key=lambda kv: (-kv[1]["active"], kv[0]))[: int(limit)]
