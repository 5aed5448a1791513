"""What a purge leaves on the service: keyed hashes that capture compares, no text.

``memory_purge_marks`` keeps one row per distinct text of a purged memory's versions
(:func:`bli_memory.core.extraction.tombstones.fingerprint`), owned by the person whose
memory it was, as the embedded store's ``purge_marks`` table (its m007 migration). The
job drain reads the marks of a space so a queued capture or a later restatement does not
bring a purged memory back.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE memory_purge_marks (
            seq         bigserial PRIMARY KEY,
            space       text NOT NULL,
            owner_id    bigint NOT NULL REFERENCES memory_people (id),
            mark        jsonb NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute("CREATE INDEX memory_purge_marks_space ON memory_purge_marks (space, owner_id, seq)")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS memory_purge_marks")
