"""Capture-only session recordings on the service (``record_session``).

``memory_session_recordings`` keeps the turns of a session whose space is being
recorded (:mod:`bli_memory.core.memory.switches`): one row per turn, owned by the person
whose device sent it, never distilled into memories and never injected, as the
embedded store's ``session_recordings`` table (its m005 migration). The index serves
``info``'s count of one person's recordings of a space.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE memory_session_recordings (
            id          uuid PRIMARY KEY,
            space       text NOT NULL,
            owner_id    bigint NOT NULL REFERENCES memory_people (id),
            device_id   uuid,
            source      text NOT NULL,
            session_id  text,
            text        text NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now()
        )
        """
    )
    op.execute(
        "CREATE INDEX memory_session_recordings_space "
        "ON memory_session_recordings (space, owner_id, created_at)"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS memory_session_recordings")
