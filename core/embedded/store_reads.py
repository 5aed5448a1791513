"""Reads of the store: memory rows (by id and seq, live lookups, versions, recent rows,
profile kinds, tombstones, session neighbours), the tags that name one space
(``memory_space_aliases``: resolve, declare, list) and the FTS5 keyword index (bm25 search,
counts, indexed terms).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from bli_memory.core.embedded.store_base import COLUMNS, StoreBase, now_iso, row_to_memory
from bli_memory.core.errors import NotFoundError
from bli_memory.core.memory.version_ids import shown_id
from bli_memory.core.models import Memory

__all__ = [
    "StoreReads",
]


class StoreReads(StoreBase):
    """Reads of memory rows, space aliases and the keyword index."""

    def get(self, id: str) -> Memory | None:
        """The row with this id, in any state, or None."""
        with self._read() as conn:
            row = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (id,)).fetchone()
        return row_to_memory(row) if row else None

    def find_live(
        self, spaces: Sequence[str], *, custom_id: str | None = None, sha256: str | None = None
    ) -> Memory | None:
        """The live row of these spaces with this customId or content hash, or None."""
        marks = ",".join("?" * len(spaces))
        if custom_id is not None:
            sql, arg = f"custom_id = ? AND space IN ({marks})", custom_id
        elif sha256 is not None:
            sql, arg = f"content_sha256 = ? AND space IN ({marks})", sha256
        else:  # pragma: no cover - programming error
            raise ValueError("custom_id or sha256 required")
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE state = 'active' AND {sql} "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY seq DESC LIMIT 1",
                (arg, *spaces, now_iso()),
            ).fetchone()
        return row_to_memory(row) if row else None

    def rows_by_seq(self, seqs: Iterable[int], *, live_only: bool = True) -> dict[int, Memory]:
        """Rows by sequence number; with ``live_only``, active and unexpired only."""
        seq_list = [int(s) for s in seqs]
        if not seq_list:
            return {}
        out: dict[int, Memory] = {}
        now = now_iso()
        with self._read() as conn:
            for start in range(0, len(seq_list), 500):
                chunk = seq_list[start : start + 500]
                marks = ",".join("?" * len(chunk))
                where = f"seq IN ({marks})"
                args: list[Any] = list(chunk)
                if live_only:
                    where += " AND state = 'active' AND (expires_at IS NULL OR expires_at > ?)"
                    args.append(now)
                for row in conn.execute(f"SELECT {COLUMNS} FROM memories WHERE {where}", args):
                    out[row[0]] = row_to_memory(row)
        return out

    def history(self, id: str) -> list[Memory]:
        """Every version in the chain of ``id``, newest first (tombstones included).

        Raises:
            NotFoundError: no row has this id.
        """
        start = self.get(id)
        if start is None:
            raise NotFoundError(f"no memory with id {shown_id(id)}")
        with self._read() as conn:
            # Walk forward to the newest version, then back along `supersedes`, within the
            # row's space. Each walk stops at a row it has seen: an imported file could
            # link rows in a loop, and a loop must not hang history, get or purge.
            newest, seen = start, {start.id}
            while True:
                row = conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE supersedes = ? AND space = ? "
                    "ORDER BY seq DESC LIMIT 1",
                    (newest.id, start.space),
                ).fetchone()
                if row is None or row[1] in seen:
                    break
                newest = row_to_memory(row)
                seen.add(newest.id)
            chain, seen = [newest], {newest.id}
            while chain[-1].supersedes and chain[-1].supersedes not in seen:
                row = conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE id = ? AND space = ?",
                    (chain[-1].supersedes, start.space),
                ).fetchone()
                if row is None:
                    break
                chain.append(row_to_memory(row))
                seen.add(chain[-1].id)
        return chain

    def recent(self, spaces: Sequence[str], *, limit: int = 10) -> list[Memory]:
        """Newest live memories of these spaces."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE state = 'active' AND space IN ({marks}) "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY seq DESC LIMIT ?",
                (*spaces, now_iso(), int(limit)),
            ).fetchall()
        return [row_to_memory(r) for r in rows]

    def forgotten_since(self, spaces: Sequence[str], since: str, *, limit: int = 20) -> list[Memory]:
        """Rows of these spaces forgotten at or after ``since`` (ISO 8601 UTC, the stored
        form), newest first; at most ``limit``."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE state = 'forgotten' AND space IN ({marks}) "
                "AND forgotten_at >= ? ORDER BY forgotten_at DESC, seq DESC LIMIT ?",
                (*spaces, since, int(limit)),
            ).fetchall()
        return [row_to_memory(r) for r in rows]

    def forgotten(self, spaces: Sequence[str], *, limit: int | None = 500) -> list[str]:
        """Contents of the tombstones of these spaces and of their older versions, newest first.

        A forget tombstones the live version; the versions it replaced (``superseded``,
        reached through ``supersedes``) said the same thing in other words, so they count
        as forgotten too. Each distinct text once; at most ``limit`` texts (None: all).
        """
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                "WITH RECURSIVE chain(content, supersedes, at, seq, depth) AS ("
                " SELECT content, supersedes, forgotten_at, seq, 0 FROM memories"
                f" WHERE state = 'forgotten' AND space IN ({marks})"
                " UNION ALL"
                " SELECT m.content, m.supersedes, chain.at, chain.seq, chain.depth + 1"
                " FROM memories m JOIN chain ON m.id = chain.supersedes"
                " WHERE m.state = 'superseded' AND chain.depth < 100)"
                " SELECT content FROM chain ORDER BY at DESC, seq DESC, depth LIMIT ?",
                (*spaces, -1 if limit is None else int(limit)),  # SQLite: LIMIT -1 is none
            ).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))

    def purge_marks(self, spaces: Sequence[str], *, limit: int | None = 500) -> list[dict[str, Any]]:
        """Purge marks of these spaces, newest first
        (:func:`bli_memory.core.extraction.tombstones.fingerprint`); at most ``limit`` (None: all)."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT mark FROM purge_marks WHERE space IN ({marks}) ORDER BY seq DESC LIMIT ?",
                (*spaces, -1 if limit is None else int(limit)),
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def recent_of_kinds(
        self, spaces: Sequence[str], kinds: Sequence[str], *, limit: int = 10
    ) -> list[Memory]:
        """Newest live memories of these spaces whose ``metadata.kind`` is one of ``kinds``."""
        if not kinds:
            return []
        marks = ",".join("?" * len(spaces))
        kind_marks = ",".join("?" * len(kinds))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE state = 'active' AND space IN ({marks}) "
                "AND (expires_at IS NULL OR expires_at > ?) "
                f"AND lower(json_extract(metadata, '$.kind')) IN ({kind_marks}) "
                "ORDER BY seq DESC LIMIT ?",
                (*spaces, now_iso(), *[k.lower() for k in kinds], int(limit)),
            ).fetchall()
        return [row_to_memory(r) for r in rows]

    def count_by_state(self, spaces: Sequence[str] | None = None) -> dict[str, int]:
        """Row counts per state, for these spaces or the whole store."""
        with self._read() as conn:
            if spaces:
                marks = ",".join("?" * len(spaces))
                rows = conn.execute(
                    f"SELECT state, count(*) FROM memories WHERE space IN ({marks}) GROUP BY state",
                    tuple(spaces),
                ).fetchall()
            else:
                rows = conn.execute("SELECT state, count(*) FROM memories GROUP BY state").fetchall()
        counts = {"active": 0, "superseded": 0, "forgotten": 0}
        counts.update(dict(rows))
        return counts

    def vectors_by_model(self, spaces: Sequence[str]) -> dict[str, int]:
        """Rows of these spaces holding a vector, per embedding model (more than one model
        only while a ``memory reembed`` is under way or stopped part way)."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT embedding_model, count(*) FROM memories WHERE space IN ({marks}) "
                "AND embedding IS NOT NULL GROUP BY embedding_model", tuple(spaces),
            ).fetchall()
        return {str(model): int(n) for model, n in rows if model is not None}

    def neighbours(self, seqs: Sequence[int], spaces: Sequence[str]) -> dict[int, list[int]]:
        """The live rows just before and after each row in its session.

        Args:
            seqs: Rows to look around.
            spaces: Only rows of these spaces count (a row elsewhere has no neighbours).

        Returns:
            ``{seq: [previous, next]}`` (either may be missing); rows without a
            ``session_id`` are left out. Uses the ``memories_session`` index (m006).
        """
        out: dict[int, list[int]] = {}
        allowed = set(spaces)
        with self._read() as conn:
            for seq in seqs:
                row = conn.execute(
                    "SELECT space, session_id FROM memories WHERE seq = ?", (int(seq),)
                ).fetchone()
                if row is None or row[1] is None or row[0] not in allowed:
                    continue
                kids = []
                for op, order in (("<", "DESC"), (">", "ASC")):
                    found = conn.execute(
                        "SELECT seq FROM memories WHERE space = ? AND session_id = ? AND state = 'active' "
                        f"AND seq {op} ? ORDER BY seq {order} LIMIT 1",
                        (row[0], row[1], int(seq)),
                    ).fetchone()
                    if found is not None:
                        kids.append(int(found[0]))
                out[int(seq)] = kids
        return out

    # --- aliases of spaces ---------------------------------------------------------

    def resolve_space(self, tag: str) -> tuple[str, tuple[str, ...]]:
        """Canonical tag for ``tag`` and every tag that names the same space.

        Returns:
            ``(canonical, (canonical, alias, ...))``; a tag with no alias row is its own
            canonical space.
        """
        with self._read() as conn:
            row = conn.execute(
                "SELECT canonical FROM memory_space_aliases WHERE alias = ?", (tag,)
            ).fetchone()
            canonical = row[0] if row else tag
            aliases = [
                r[0]
                for r in conn.execute(
                    "SELECT alias FROM memory_space_aliases WHERE canonical = ? ORDER BY alias",
                    (canonical,),
                )
            ]
        return canonical, tuple(dict.fromkeys([canonical, *aliases]))

    def add_alias(self, alias: str, canonical: str) -> None:
        """Declare that ``alias`` names the same space as ``canonical``."""
        if alias == canonical:
            return
        with self._write() as conn:
            conn.execute(
                "INSERT INTO memory_space_aliases (alias, canonical, created_at) VALUES (?, ?, ?) "
                "ON CONFLICT (alias) DO UPDATE SET canonical = excluded.canonical",
                (alias, canonical, now_iso()),
            )

    def aliases(self) -> dict[str, list[str]]:
        """Every declared alias: ``{canonical: [alias, ...]}``."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT canonical, alias FROM memory_space_aliases ORDER BY canonical, alias"
            ).fetchall()
        out: dict[str, list[str]] = {}
        for canonical, alias in rows:
            out.setdefault(canonical, []).append(alias)
        return out

    # --- the FTS5 keyword index ------------------------------------------------------

    def keyword_search(
        self, spaces: Sequence[str], match: str, *, limit: int
    ) -> list[tuple[int, float]]:
        """Live rows matching an FTS5 expression built by :mod:`bli_memory.core.memory.terms`.

        Returns:
            ``[(seq, bm25), ...]`` best first (lower bm25 is better in SQLite).
        """
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            return [
                (int(r[0]), float(r[1]))
                for r in conn.execute(
                    "SELECT f.rowid, bm25(memory_fts) AS rank FROM memory_fts AS f "
                    "JOIN memories AS m ON m.seq = f.rowid "
                    f"WHERE memory_fts MATCH ? AND m.space IN ({marks}) AND m.state = 'active' "
                    "ORDER BY rank LIMIT ?",
                    (match, *spaces, int(limit)),
                )
            ]

    def match_count(self, spaces: Sequence[str], match: str) -> int:
        """How many live rows of these spaces match the FTS5 expression (document frequency)."""
        marks = ",".join("?" * len(spaces))
        with self._read() as conn:
            # The match runs once, as a subquery: joined, SQLite may probe the FTS5 query
            # once per row of the space (700 ms for an absent term in 700 rows).
            return int(conn.execute(
                "SELECT count(*) FROM memories WHERE seq IN (SELECT rowid FROM memory_fts WHERE memory_fts "
                f"MATCH ?) AND space IN ({marks}) AND state = 'active'",
                (match, *spaces),
            ).fetchone()[0])

    def keyword_terms(self, seqs: Sequence[int]) -> list[tuple[int, str]]:
        """``[(seq, terms), ...]``: the keyword-index term strings of these rows.

        Read in chunks so a side-index build of a large space never holds the store
        for long (:mod:`bli_memory.core.embedded.side_indexes`). Seqs without an entry are skipped.
        """
        out: list[tuple[int, str]] = []
        chunk = 5000
        for start in range(0, len(seqs), chunk):
            part = [int(s) for s in seqs[start : start + chunk]]
            marks = ",".join("?" * len(part))
            with self._read() as conn:
                out.extend(
                    (int(r[0]), str(r[1]))
                    for r in conn.execute(
                        f"SELECT rowid, terms FROM memory_fts WHERE rowid IN ({marks})", part
                    )
                )
        return out
