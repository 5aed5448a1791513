"""The team store's side of the memory engine (:mod:`bli_memory.core.memory.engine`).

:class:`PostgresSessions` hands out one write session per write
(:class:`~bli_memory.core.team.postgres.writes.PostgresWrite`) and one :class:`PostgresRead`
per space read, over one pooled
connection and the person's view of the space (own and shared rows; every query filters by
space and owner first, design §7): the channels
(:class:`~bli_memory.core.team.postgres.search.PostgresChannels`), the newest rows, term
counts with ``count(*) FILTER`` in one round trip, and the vectors' sum by pgvector.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from bli_memory.core.team.postgres.base import (
    MEMORY_COLUMNS,
    SpaceView,
    row_to_memory,
    tsquery_text,
    vector_literal,
)
from bli_memory.core.team.postgres.search import LIVE, PostgresChannels

if TYPE_CHECKING:
    import psycopg

    from bli_memory.core.models import Memory
    from bli_memory.core.team.postgres.writes import PostgresWrite, PostgresWrites

__all__ = ["PostgresRead", "PostgresSessions"]


class PostgresRead:
    """One read of one space as one person sees it (:class:`~bli_memory.core.memory.engine.ReadSession`)."""

    def __init__(self, conn: psycopg.Connection[Any], view: SpaceView) -> None:
        self.canonical = view.canonical
        self.spaces = tuple(view.spaces)
        self._conn = conn
        self._view = view
        self._args: dict[str, Any] = {"spaces": list(view.spaces), "owners": list(view.readers)}

    def channels(self, query: str, embed: Callable[[str], Any]) -> PostgresChannels:
        """The channels of one search over this connection."""
        return PostgresChannels(self._conn, self._view, vector_literal(embed(query)))

    def newest(self, *, kinds: Sequence[str] | None, limit: int) -> list[Memory]:
        """The newest live, unexpired rows of the view (of these kinds)."""
        args = {**self._args, "limit": limit, "kinds": [k.lower() for k in kinds or ()]}
        kind = "AND lower(metadata->>'kind') = ANY(%(kinds)s) " if kinds is not None else ""
        rows = self._conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {LIVE} "
            f"AND (expires_at IS NULL OR expires_at > now()) {kind}ORDER BY seq DESC LIMIT %(limit)s",
            args).fetchall()
        return [row_to_memory(r) for r in rows]

    def term_counts(self, terms: Sequence[str]) -> tuple[list[int], int]:
        """Each term's matching rows (its lexeme, as the keyword channel), and the live rows:
        one round trip."""
        args = dict(self._args)
        cols = ["count(*)"]
        for i, word in enumerate(terms):
            tsq = tsquery_text([word], "|")
            if tsq:
                args[f"t{i}"] = tsq
                cols.append(f"count(*) FILTER (WHERE terms @@ %(t{i})s::tsquery)")
            else:
                cols.append("0")
        row = self._conn.execute(f"SELECT {', '.join(cols)} FROM memories WHERE {LIVE}", args).fetchone()
        assert row is not None  # an aggregate always answers one row
        return [int(c) for c in row[1:]], int(row[0])

    def vector_sum(self) -> tuple[int, float]:
        """``(n, |sum|^2)`` by pgvector's ``sum`` and ``vector_norm`` over the view."""
        row = self._conn.execute(
            f"SELECT count(*), vector_norm(sum(embedding)) FROM memories WHERE {LIVE} "
            "AND embedding IS NOT NULL", self._args).fetchone()
        assert row is not None  # an aggregate always answers one row
        return int(row[0]), 0.0 if row[1] is None else float(row[1]) ** 2

    def generation(self) -> None:
        """None: a write sequence of a shared database is not cheap to read (the engine keeps
        a background :data:`~bli_memory.core.memory.engine.BACKGROUND_TTL_S`)."""
        return None

    def scope(self) -> Hashable:
        """The spaces and the owners read."""
        return tuple(self._view.spaces), tuple(self._view.readers)


class PostgresSessions:
    """One person's read and write sessions (:class:`~bli_memory.core.memory.engine.MemoryStore`).

    Args:
        pg: The person's handle (its pool, view and transactions).
    """

    def __init__(self, pg: PostgresWrites) -> None:
        self._pg = pg

    def history(self, id: str) -> list[Memory]:
        """The version chain of ``id`` this person may read (:meth:`PostgresWrites.history`)."""
        return self._pg.history(id)

    def writing(self, tag: str) -> AbstractContextManager[PostgresWrite]:
        """A write transaction on the space ``tag`` names (:meth:`PostgresWrites.writing`)."""
        return self._pg.writing(tag)

    @contextmanager
    def reading(self, tag: str) -> Iterator[PostgresRead]:
        """A read of the space ``tag`` names, over one pooled connection."""
        with self._pg._conn("search") as conn:
            yield PostgresRead(conn, self._pg._view(conn, tag))
