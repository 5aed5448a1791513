"""The team store's audit: every live row of a person has a tsvector and a vector of the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bli_memory.core.team.postgres.base import PgCore, one_row, tsvector_text, vector_literal

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresIntegrity"]


class PostgresIntegrity:
    """Audit and repair of the person's own rows: a part of
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (``backend.integrity``) over one
    person's handle.

    Args:
        pg: The person's handle (its pool, view and transactions).
    """

    def __init__(self, pg: PgCore) -> None:
        self._pg = pg

    _AUDIT_CHECKS = {
        "missing_keyword": "state = 'active' AND terms IS NULL",
        "stale_keyword": "state <> 'active' AND terms IS NOT NULL",
        "missing_vector": "state = 'active' AND embedding IS NULL",
        "wrong_model": "state = 'active' AND embedding IS NOT NULL "
                       "AND (embedding_model IS DISTINCT FROM %(model)s "
                       "OR NOT vector_norm(embedding) BETWEEN 0.99 AND 1.01)",
    }

    def _audit_counts(self, conn: psycopg.Connection[Any], spaces: list[str]) -> dict[str, Any]:
        args = {"spaces": spaces, "me": self._pg._me(), "model": self._pg.model_name}
        own = "space = ANY(%(spaces)s) AND owner_id = %(me)s"
        counts = {"active": 0, "superseded": 0, "forgotten": 0}
        counts.update({r[0]: int(r[1]) for r in conn.execute(
            f"SELECT state, count(*) FROM memories WHERE {own} GROUP BY state", args)})
        row = one_row(conn.execute(
            "SELECT " + ", ".join(f"count(*) FILTER (WHERE {cond})" for cond in self._AUDIT_CHECKS.values())
            + f" FROM memories WHERE {own}", args,
        ).fetchone(), "audit the store")
        report: dict[str, Any] = {"counts": counts}
        report.update({name: int(n) for name, n in zip(self._AUDIT_CHECKS, row, strict=True)})
        report["ok"] = not any(report[name] for name in self._AUDIT_CHECKS)
        return report

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Check this person's rows: every live row has a tsvector and a vector of the model.

        The Postgres analogue of :meth:`EmbeddedBackend.audit`, over the rows this
        person owns (in every space of theirs; never another person's, shared or not):
        ``missing_keyword`` live rows without a tsvector, ``stale_keyword`` retired rows
        that still carry one, ``missing_vector`` live rows without a vector,
        ``wrong_model`` live rows whose vector is of another model or not of unit
        length. With ``repair`` the
        tsvectors are rebuilt from the content (the same terms as a save), stale ones
        cleared, and missing or foreign vectors recomputed with this service's model;
        ``after`` is the audit run again.

        Returns:
            ``{"ok", "counts", "missing_keyword", "stale_keyword", "missing_vector",
            "wrong_model", "repaired"}`` plus ``after`` when ``repair`` was asked.
        """
        me = self._pg._me()
        with self._pg._tx("audit the store", bulk=True) as conn:
            spaces = self._pg._own_spaces(conn)
            report = self._audit_counts(conn, spaces)
        report["repaired"] = False
        if not repair:
            return report
        if not report["ok"]:
            self._repair(spaces, me)
            report["repaired"] = True
        with self._pg._tx("audit the store", bulk=True) as conn:
            after = self._audit_counts(conn, spaces)
        report["after"] = {k: after[k] for k in ("ok", *self._AUDIT_CHECKS)}
        return report

    def _repair(self, spaces: list[str], me: int, batch: int = 64) -> None:
        args = {"spaces": spaces, "me": me, "model": self._pg.model_name}
        own = "space = ANY(%(spaces)s) AND owner_id = %(me)s"
        checks = self._AUDIT_CHECKS
        with self._pg._tx("repair the keyword index", bulk=True) as conn:
            conn.execute(f"UPDATE memories SET terms = NULL WHERE {own} AND {checks['stale_keyword']}", args)
            rows = conn.execute(
                f"SELECT space, seq, content FROM memories WHERE {own} AND {checks['missing_keyword']}", args
            ).fetchall()
            with conn.cursor() as cur:
                cur.executemany(
                    "UPDATE memories SET terms = %s::tsvector "
                    "WHERE space = %s AND seq = %s AND state = 'active'",
                    [(tsvector_text(content), space, seq) for space, seq, content in rows],
                )
        with self._pg._tx("find rows to embed", bulk=True) as conn:
            todo = conn.execute(
                f"SELECT space, seq, content FROM memories WHERE {own} AND "
                f"(({checks['missing_vector']}) OR ({checks['wrong_model']})) ORDER BY seq", args,
            ).fetchall()
        for start in range(0, len(todo), batch):
            part = todo[start:start + batch]
            vectors = self._pg.embedder.embed([content for _, _, content in part])
            with self._pg._tx("store recomputed vectors", bulk=True) as conn, conn.cursor() as cur:
                cur.executemany(
                    "UPDATE memories SET embedding = %s::vector, embedding_model = %s "
                    "WHERE space = %s AND seq = %s AND state = 'active'",
                    [(vector_literal(v), self._pg.model_name, space, seq)
                     for (space, seq, _), v in zip(part, vectors, strict=True)],
                )
