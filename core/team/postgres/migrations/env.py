"""Alembic environment of the memory service's Postgres schema.

Run by :func:`bli_memory.core.team.postgres.store.migrate` with an open SQLAlchemy connection in
``config.attributes["connection"]`` (there is no ``alembic.ini``: the service owns its
configuration). Revisions are plain SQL (``op.execute``); the schema is not
described by SQLAlchemy models, so there is no autogenerate.
"""

from __future__ import annotations

from alembic import context

from bli_memory.core.team.postgres.schema import VERSION_TABLE

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reachable by running alembic by hand
    raise RuntimeError("run migrations through bli_memory.core.team.postgres.store.migrate(database_url)")

context.configure(connection=connection, target_metadata=None, version_table=VERSION_TABLE,
                  transaction_per_migration=True)
with context.begin_transaction():
    context.run_migrations()
