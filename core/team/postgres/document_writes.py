"""The rows a client's run writes into a documents index on the team store
(:meth:`~bli_memory.core.team.postgres.documents.PostgresDocuments.upload`): a file part's
chunks, the run's state, and the texts embedded by the service's model.

Every text is masked again here (:func:`clean`), as the service masks every save: what a
client sent, its chunks, headings, folder, web address and the paths of the files it left
out, is stored masked whatever the client did.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.team.postgres.base import PgCore, tsvector_text, vector_literal

if TYPE_CHECKING:
    import psycopg

__all__ = ["FilePart", "Piece", "RunState", "clean", "embed_texts", "finish", "write_part"]

#: A document chunk as uploaded: ``(heading trail, first line, last line, text)``.
Piece = tuple[tuple[str, ...], int, int, str]


@dataclass(frozen=True)
class FilePart:
    """Some chunks of one version of a file: ``chunks`` are its chunks ``offset`` to
    ``offset + len(chunks) - 1`` of ``total``; the part that ends at ``total`` completes it."""

    path: str
    sha256: str
    size: int
    offset: int
    total: int
    chunks: Sequence[Piece]


@dataclass(frozen=True)
class RunState:
    """What a finished run records: the repository's folder on the client, the files left out
    as ``(path, reason)``, the web address and the commit links point at, the newest commit
    read (None: none, an unborn branch), and the globs it ran with (the next run's defaults)."""

    root: str | None
    skipped: Sequence[tuple[str, str]] = ()
    web: str | None = None
    revision: str | None = None
    last_commit: str | None = None
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()


def clean(text: str) -> str:
    """``text`` masked as the service masks every save, without NUL (Postgres text holds none)."""
    from bli_memory.core.memory.redaction import redact

    return redact(text.replace("\x00", "")).text


def embed_texts(pg: PgCore, texts: Sequence[str]) -> list[str]:
    """pgvector literals of ``texts``' vectors, by the service's model, in batches."""
    from bli_memory.core.documents.indexer import EMBED_BATCH

    out: list[str] = []
    for i in range(0, len(texts), EMBED_BATCH):
        out += [vector_literal(v) for v in pg.embedder.embed(list(texts[i:i + EMBED_BATCH]))]
    return out


def write_part(conn: psycopg.Connection[Any], index_id: int | None, f: FilePart, pieces: Sequence[Piece],
               vectors: Mapping[tuple[str, tuple[str, ...], str], str], model: str) -> None:
    """Write one part of a file; the part that ends the file checks every chunk arrived, drops
    the file's other versions and records its hash."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO memory_doc_chunks (index_id, kind, path, file_sha256, ordinal, heading, "
            "start_line, end_line, text, terms, embedding, embedding_model) VALUES (%s, 'document', %s, "
            "%s, %s, %s::jsonb, %s, %s, %s, %s::tsvector, %s::vector, %s) ON CONFLICT (index_id, path, "
            "file_sha256, ordinal) WHERE kind = 'document' DO UPDATE SET heading = excluded.heading, "
            "start_line = excluded.start_line, end_line = excluded.end_line, text = excluded.text, "
            "terms = excluded.terms, embedding = excluded.embedding, "
            "embedding_model = excluded.embedding_model",
            [(index_id, f.path, f.sha256, f.offset + n, json.dumps(list(h), ensure_ascii=False), s, e, t,
              tsvector_text(" ".join((*h, f.path, t))), vectors[(f.path, h, t)], model)
             for n, (h, s, e, t) in enumerate(pieces)])
    if f.offset + len(pieces) < f.total:
        return
    row = conn.execute(
        "SELECT count(*) FROM memory_doc_chunks WHERE index_id = %s AND kind = 'document' AND path = %s "
        "AND file_sha256 = %s AND ordinal < %s", (index_id, f.path, f.sha256, f.total)).fetchone()
    if row is None or int(row[0]) != f.total:
        raise InvalidInputError(f"{f.path[:200]}: the file's other chunks were never uploaded; nothing "
                                "was written (run `documents index` again)")
    conn.execute("DELETE FROM memory_doc_chunks WHERE index_id = %s AND kind = 'document' AND path = %s "
                 "AND (file_sha256 IS DISTINCT FROM %s OR ordinal >= %s)",
                 (index_id, f.path, f.sha256, f.total))
    conn.execute("INSERT INTO memory_doc_files (index_id, path, size, sha256) VALUES (%s, %s, %s, %s) "
                 "ON CONFLICT (index_id, path) DO UPDATE SET size = excluded.size, "
                 "sha256 = excluded.sha256", (index_id, f.path, f.size, f.sha256))


def finish(conn: psycopg.Connection[Any], index_id: int | None, run: RunState, me: int) -> None:
    """Record a finished run's state, its folder, web address and left-out paths masked."""
    from bli_memory.core.documents.sources import masked_paths

    masked = masked_paths([p for p, _ in run.skipped])
    skipped = [[masked.get(p, p), r] for p, r in run.skipped]
    globs = {"include": [clean(g) for g in run.include], "exclude": [clean(g) for g in run.exclude]}
    conn.execute(
        "UPDATE memory_doc_indexes SET root = %s, refreshed_at = now(), skipped = %s::jsonb, web = %s, "
        "revision = %s, last_commit = %s, globs = %s::jsonb, updated_by = %s WHERE id = %s",
        (clean(run.root) if run.root else None, json.dumps(skipped), clean(run.web) if run.web else None,
         run.revision, run.last_commit, json.dumps(globs), me, index_id))
