"""The team store's schema: Alembic migrations (revisions in ``migrations/versions``).

:func:`migrate` brings a database to the newest revision, one migrator at a time across
service replicas; :func:`schema_is_current` is the readiness check's half of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import ConfigError, MigrationError

if TYPE_CHECKING:
    import psycopg

__all__ = ["VERSION_TABLE", "migrate", "schema_is_current", "sqlalchemy_url"]

#: Alembic's version table for this schema.
VERSION_TABLE = "bli_alembic_version"

_MIGRATION_LOCK = 0x626C696D  # "blim": one migrator at a time across service replicas


def sqlalchemy_url(database_url: str) -> str:
    """The SQLAlchemy form of a ``postgresql://`` URL (driver: psycopg 3)."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if database_url.startswith(prefix):
            return "postgresql+psycopg://" + database_url[len(prefix):]
    raise ConfigError("the database URL must start with postgresql://", reason="config_invalid")


def migrate(database_url: str) -> list[str]:
    """Bring the database schema to the newest Alembic revision.

    Safe to run from several service processes at once: the migrator holds a session
    advisory lock, so one applies and the others find the schema current.

    Args:
        database_url: ``postgresql://user:pass@host:port/db``.

    Returns:
        Revisions applied now (empty when already current).

    Raises:
        MigrationError: the upgrade failed (its transaction is rolled back).
    """
    import sqlalchemy
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    script = ScriptDirectory.from_config(cfg)
    engine = sqlalchemy.create_engine(sqlalchemy_url(database_url), poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK})
            conn.commit()
            try:
                opts = {"version_table": VERSION_TABLE}
                before = MigrationContext.configure(conn, opts=opts).get_current_revision()
                conn.commit()
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
                conn.commit()
                after = MigrationContext.configure(conn, opts=opts).get_current_revision()
                conn.commit()
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK})
                conn.commit()
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise MigrationError(f"cannot migrate the service database: {type(exc).__name__}: {exc}") from exc
    finally:
        engine.dispose()
    if before == after:
        return []
    applied = [rev.revision for rev in script.iterate_revisions(after, before)]
    return list(reversed(applied))


def schema_is_current(conn: psycopg.Connection[Any]) -> bool:
    """True when the database is at the newest revision this code ships."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    row = conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
    return row is not None and row[0] == head
