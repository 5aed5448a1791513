"""Indexes for the context channel's session neighbours and for per-person export.

- ``memories_session``: live rows by (space, owner, session, seq), so the search's
  ``context`` channel finds the rows just before and after a hit in its session
  without walking the space (as the embedded store's m006 migration does).
- ``memories_owner``: rows by (owner, seq), so ``export`` pages through one person's
  rows without a scan of the table.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX memories_session ON memories (space, owner_id, session_id, seq) "
        "WHERE state = 'active' AND session_id IS NOT NULL"
    )
    op.execute("CREATE INDEX memories_owner ON memories (owner_id, seq)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS memories_owner")
    op.execute("DROP INDEX IF EXISTS memories_session")
