"""Give a peer's process an ``sqlite3`` that can load extensions (sqlite-vec), when it lacks one.

mcp-memory-service and basic-memory load the sqlite-vec extension into every
connection, which needs ``sqlite3.Connection.enable_load_extension``. CPython built
without ``--enable-loadable-sqlite-extensions`` (the pyenv builds on these machines)
has none, and both peers then refuse to open their stores. The peer's virtualenv holds
``pysqlite3-binary`` (PyPI: the same DB-API module over a bundled SQLite built with
extension loading); :func:`use` puts it in place of ``sqlite3`` before the peer is
imported. An interpreter that can load extensions keeps its own ``sqlite3``.

Standard library (and pysqlite3 when used) only; imported by the peer runners.
"""

from __future__ import annotations

import sqlite3
import sys

__all__ = ["use"]


def use() -> str:
    """Make ``import sqlite3`` extension-capable; returns which module and SQLite version serve it."""
    if hasattr(sqlite3.connect(":memory:"), "enable_load_extension"):
        return f"the interpreter's sqlite3 (SQLite {sqlite3.sqlite_version})"
    import pysqlite3.dbapi2 as dbapi2  # type: ignore[import-not-found]

    sys.modules["sqlite3"] = dbapi2
    sys.modules["sqlite3.dbapi2"] = dbapi2
    return f"pysqlite3-binary (SQLite {dbapi2.sqlite_version})"
