"""The project's documents and commit messages, indexed per space on the service.

One documents index per space (owner, canonical tag): ``memory_doc_indexes`` holds its
state (the repository folder it was last read from, the last commit read, when, what was
left out and why, the web address and commit links point at, the include and exclude globs
of the last run, and who refreshed it). Its rows belong to the space, not to whoever
uploaded them: everyone who may write the space refreshes the same index, and everyone who
may read it searches it (:mod:`bli_memory.core.team.postgres.documents`).

- ``memory_doc_files``: each indexed file's size and SHA-256 (what the client's manifest
  is compared with);
- ``memory_doc_chunks``: document chunks (path, the file version ``file_sha256`` and their
  place ``ordinal`` in it, heading trail, lines) and commit messages (sha, date), their text
  masked, their terms (``tsvector``, as ``memories.terms``) and their vector
  (``vector(384)``, as ``memories.embedding``); the unique keys make a retried upload write
  nothing twice;
- ``memory_doc_forgotten``: paths kept out of the index (``documents forget``).

Deleting an index row deletes everything of it (``ON DELETE CASCADE``).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: Length of the shipped embedding model's vectors, as ``memories.embedding`` (revision 0001).
DIMENSIONS = 384

_UP = [
    """
    CREATE TABLE memory_doc_indexes (
        id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        space         text NOT NULL,
        owner_id      bigint NOT NULL REFERENCES memory_people (id),
        root          text,
        last_commit   text,
        refreshed_at  timestamptz,
        skipped       jsonb NOT NULL DEFAULT '[]'::jsonb,
        web           text,
        revision      text,
        globs         jsonb NOT NULL DEFAULT '{}'::jsonb,
        updated_by    bigint REFERENCES memory_people (id),
        created_at    timestamptz NOT NULL DEFAULT now(),
        UNIQUE (space, owner_id)
    )
    """,
    """
    CREATE TABLE memory_doc_files (
        index_id  bigint NOT NULL REFERENCES memory_doc_indexes (id) ON DELETE CASCADE,
        path      text NOT NULL,
        size      bigint NOT NULL,
        sha256    text NOT NULL,
        PRIMARY KEY (index_id, path)
    )
    """,
    f"""
    CREATE TABLE memory_doc_chunks (
        seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        index_id         bigint NOT NULL REFERENCES memory_doc_indexes (id) ON DELETE CASCADE,
        kind             text NOT NULL CHECK (kind IN ('document', 'commit')),
        path             text NOT NULL DEFAULT '',
        file_sha256      text,
        ordinal          integer,
        sha              text,
        date             text,
        heading          jsonb NOT NULL DEFAULT '[]'::jsonb,
        start_line       integer,
        end_line         integer,
        text             text NOT NULL,
        terms            tsvector,
        embedding        vector({DIMENSIONS}) NOT NULL,
        embedding_model  text NOT NULL
    )
    """,
    "CREATE UNIQUE INDEX memory_doc_chunks_place ON memory_doc_chunks (index_id, path, file_sha256, ordinal) "
    "WHERE kind = 'document'",
    "CREATE UNIQUE INDEX memory_doc_chunks_commit ON memory_doc_chunks (index_id, sha) WHERE kind = 'commit'",
    "CREATE INDEX memory_doc_chunks_terms ON memory_doc_chunks USING gin (terms)",
    "CREATE INDEX memory_doc_chunks_embedding ON memory_doc_chunks USING hnsw (embedding vector_cosine_ops)",
    """
    CREATE TABLE memory_doc_forgotten (
        index_id  bigint NOT NULL REFERENCES memory_doc_indexes (id) ON DELETE CASCADE,
        path      text NOT NULL,
        at        timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (index_id, path)
    )
    """,
]

_DOWN = [
    "DROP TABLE IF EXISTS memory_doc_forgotten",
    "DROP TABLE IF EXISTS memory_doc_chunks",
    "DROP TABLE IF EXISTS memory_doc_files",
    "DROP TABLE IF EXISTS memory_doc_indexes",
]


def upgrade() -> None:
    for statement in _UP:
        op.execute(statement)


def downgrade() -> None:
    for statement in _DOWN:
        op.execute(statement)
