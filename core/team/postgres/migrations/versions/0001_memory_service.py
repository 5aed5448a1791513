"""The memory service schema: people, device tokens, memories, aliases, shares, jobs, experience.

Every memory row carries its owner (the person whose space it is). A space is the pair
(owner, container tag); nobody reads or writes another person's space unless a row
of ``memory_space_shares`` grants it. Queries on ``memories`` filter by ``space``
first and never join across spaces, so the table can later be distributed or
partitioned by ``space`` (the primary key and unique keys include it).

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

#: Length of the shipped embedding model's vectors (all-MiniLM-L6-v2). A model with
#: another length needs a new revision, never an edit of this one.
DIMENSIONS = 384

_UP = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    """
    CREATE TABLE memory_people (
        id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name        text NOT NULL UNIQUE,
        created_at  timestamptz NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE memory_device_tokens (
        id            uuid PRIMARY KEY,
        person_id     bigint NOT NULL REFERENCES memory_people (id),
        device        text NOT NULL,
        token_sha256  text NOT NULL UNIQUE,
        created_at    timestamptz NOT NULL DEFAULT now(),
        last_used_at  timestamptz,
        revoked_at    timestamptz
    )
    """,
    "CREATE INDEX memory_device_tokens_person ON memory_device_tokens (person_id)",
    f"""
    CREATE TABLE memories (
        seq             bigint GENERATED ALWAYS AS IDENTITY,
        id              uuid NOT NULL,
        space           text NOT NULL,
        owner_id        bigint NOT NULL REFERENCES memory_people (id),
        author_id       bigint REFERENCES memory_people (id),
        device_id       uuid,
        content         text NOT NULL,
        custom_id       text,
        metadata        jsonb NOT NULL DEFAULT '{{}}'::jsonb,
        source          text NOT NULL DEFAULT 'mcp',
        session_id      text,
        created_at      timestamptz NOT NULL,
        updated_at      timestamptz NOT NULL,
        version         integer NOT NULL DEFAULT 1,
        supersedes      uuid,
        state           text NOT NULL DEFAULT 'active'
                        CHECK (state IN ('active', 'superseded', 'forgotten')),
        forgotten_at    timestamptz,
        expires_at      timestamptz,
        content_sha256  text NOT NULL,
        terms           tsvector,
        embedding       vector({DIMENSIONS}),
        embedding_model text,
        PRIMARY KEY (space, seq),
        UNIQUE (space, id)
    )
    """,
    "CREATE INDEX memories_id ON memories (id)",
    "CREATE INDEX memories_live ON memories (space, owner_id, seq) WHERE state = 'active'",
    "CREATE INDEX memories_live_hash ON memories (space, owner_id, content_sha256) WHERE state = 'active'",
    "CREATE UNIQUE INDEX memories_live_custom_id ON memories (space, owner_id, custom_id) "
    "WHERE state = 'active' AND custom_id IS NOT NULL",
    "CREATE INDEX memories_supersedes ON memories (space, supersedes) WHERE supersedes IS NOT NULL",
    "CREATE INDEX memories_terms ON memories USING gin (terms) WHERE state = 'active'",
    "CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_cosine_ops) "
    "WHERE state = 'active'",
    """
    CREATE TABLE memory_space_aliases (
        alias       text PRIMARY KEY,
        canonical   text NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX memory_space_aliases_canonical ON memory_space_aliases (canonical)",
    """
    CREATE TABLE memory_space_shares (
        space       text NOT NULL,
        owner_id    bigint NOT NULL REFERENCES memory_people (id),
        grantee_id  bigint NOT NULL REFERENCES memory_people (id),
        access      text NOT NULL CHECK (access IN ('read', 'write')),
        created_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (space, grantee_id, owner_id)
    )
    """,
    """
    CREATE TABLE memory_extract_jobs (
        id               uuid PRIMARY KEY,
        space            text NOT NULL,
        owner_id         bigint NOT NULL REFERENCES memory_people (id),
        device_id        uuid,
        text             text NOT NULL,
        source           text NOT NULL,
        session_id       text,
        state            text NOT NULL DEFAULT 'queued'
                         CHECK (state IN ('queued', 'running', 'done', 'failed')),
        attempts         integer NOT NULL DEFAULT 0,
        not_before       timestamptz,
        claimed_by       text,
        lease_expires_at timestamptz,
        outcome          jsonb,
        error            text,
        created_at       timestamptz NOT NULL DEFAULT now(),
        finished_at      timestamptz
    )
    """,
    "CREATE INDEX memory_extract_jobs_ready ON memory_extract_jobs (state, created_at) "
    "WHERE state IN ('queued', 'running')",
    """
    CREATE TABLE memory_experience (
        id          uuid PRIMARY KEY,
        person_id   bigint NOT NULL REFERENCES memory_people (id),
        device_id   uuid,
        store       text NOT NULL CHECK (store IN ('bli', 'supermemory', 'both')),
        verdict     text NOT NULL CHECK (verdict IN ('win', 'loss', 'noise')),
        reason      text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
        created_at  timestamptz NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX memory_experience_created ON memory_experience (created_at, id)",
    # The seed's rule for the experience log: people insert their own and read all;
    # only the service role (a role with BYPASSRLS) updates or deletes.
    "ALTER TABLE memory_experience ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE memory_experience FORCE ROW LEVEL SECURITY",
    "CREATE POLICY memory_experience_read ON memory_experience FOR SELECT USING (true)",
    "CREATE POLICY memory_experience_insert_own ON memory_experience FOR INSERT WITH CHECK "
    "(person_id = nullif(current_setting('bli.person_id', true), '')::bigint)",
    """
    CREATE TABLE memory_store_meta (
        key    text PRIMARY KEY,
        value  text NOT NULL
    )
    """,
]

_DOWN = [
    "DROP TABLE IF EXISTS memory_store_meta",
    "DROP TABLE IF EXISTS memory_experience",
    "DROP TABLE IF EXISTS memory_extract_jobs",
    "DROP TABLE IF EXISTS memory_space_shares",
    "DROP TABLE IF EXISTS memory_space_aliases",
    "DROP TABLE IF EXISTS memories",
    "DROP TABLE IF EXISTS memory_device_tokens",
    "DROP TABLE IF EXISTS memory_people",
]


def upgrade() -> None:
    for statement in _UP:
        op.execute(statement)


def downgrade() -> None:
    for statement in _DOWN:
        op.execute(statement)
