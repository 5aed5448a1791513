"""The connection pool of the Postgres store, set to fail fast and come back fast.

A Postgres outage must not make the service hang: every door answers 503
``store_unavailable`` within about a second, ``/readyz`` within about a quarter of a
second (0.75 s at most: the wait for a connection, its check and the query), and
requests succeed again about a second after Postgres is back.

Three settings of ``psycopg_pool.ConnectionPool`` do most of it (psycopg-pool docs,
"Connection pools"):

- ``timeout``: how long a request waits for a connection (:data:`POOL_WAIT_SECONDS`).
  The prompt hook has 2 s for a whole recall (docs/hooks.md), so the wait is half of
  that, not the pool's 30 s;
- ``check``: each connection is tested (an empty query, one round trip) before a
  request gets it, so a connection broken by a restart is replaced, never handed to
  a request that then fails;
- ``reconnect_timeout``: the pool retries a lost connection with exponential backoff
  (1, 2, 4, 8 s ...) until this many seconds have passed, so after an outage it could
  wait up to 16 s before its next try. Giving up after :data:`RECONNECT_SECONDS`
  instead lets the next request start a fresh attempt at once.

A Postgres that stops answering without closing its connections (its processes
stopped, a network partition, a machine that froze) is an outage the pool does not
see: the connections stay open, a query is sent and nothing comes back. The server's
own ``statement_timeout`` cannot help, since the server is not running, and libpq's
``connect_timeout`` covers only new connections. So every wait on a pooled
connection also has a deadline of its own, counted in the client:

- :class:`DeadlineConnection`, the pool's connection class, waits at most
  :data:`STATEMENT_SECONDS` plus :data:`WAIT_GRACE_SECONDS` for any one exchange (a
  query and its rows, a commit). Past it the connection is closed, never reused, and
  the caller gets ``psycopg.OperationalError``, which the store answers as
  ``store_unavailable`` (503). It uses the ``timeout`` of psycopg's wait functions
  (psycopg 3.3);
- :func:`check_connection`, the pool's test, waits at most :data:`CHECK_SECONDS`: a
  healthy server answers an empty query in about 0.04 ms (docs/benchmarks-service.md),
  so a connection that misses it is replaced and the request waits for another,
  within its pool wait;
- :func:`bulk_statements` gives one transaction of a bulk job (an import, an export
  page, an audit) :data:`BULK_STATEMENT_SECONDS` instead.

A live server still cancels a slow statement itself first: every pooled connection runs
with ``statement_timeout`` at :data:`STATEMENT_SECONDS`
(:func:`~bli_memory.core.team.postgres.base.configure_connection`), so a
slow query on a working server ends cleanly and leaves its connection usable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

__all__ = [
    "BULK_STATEMENT_SECONDS",
    "CHECK_SECONDS",
    "CONNECT_SECONDS",
    "POOL_WAIT_SECONDS",
    "READY_WAIT_SECONDS",
    "RECONNECT_SECONDS",
    "STATEMENT_SECONDS",
    "WAIT_GRACE_SECONDS",
    "DeadlineConnection",
    "bulk_statements",
    "check_connection",
    "make_pool",
    "statement_setting",
    "wait_limit",
]

#: Seconds a request waits for a free connection before it answers 503: half the
#: prompt hook's 2 s budget (docs/hooks.md), so the hook still answers in time.
POOL_WAIT_SECONDS = 1.0
#: Seconds ``/readyz`` waits for a connection: a probe answers at once or says not ready.
READY_WAIT_SECONDS = 0.25
#: Seconds the pool keeps retrying one lost connection with backoff before it lets a
#: new request start a fresh attempt (see the module docstring).
RECONNECT_SECONDS = 1.0
#: libpq ``connect_timeout`` of each connection attempt, in whole seconds (libpq treats
#: anything under 2 as 2).
CONNECT_SECONDS = 2
#: Seconds the pool's test of a connection (an empty query) may take before the
#: connection is dropped as hung.
CHECK_SECONDS = 0.25
#: ``statement_timeout`` of a door's statements. A client of the service waits 10 s
#: for an answer (``remote.READ_TIMEOUT_S``), so a statement stuck this long still
#: becomes a 503 it can read, not a timeout.
STATEMENT_SECONDS = 5.0
#: ``statement_timeout`` of a bulk job's statements (an import of 2,000 records is one
#: batch); its client waits 300 s (``remote.BULK_TIMEOUT_S``).
BULK_STATEMENT_SECONDS = 240.0
#: Seconds the client waits past a statement timeout for the server's own cancel to
#: arrive, before it decides the server is hung and closes the connection.
WAIT_GRACE_SECONDS = 1.0

#: psycopg's own poll interval of a wait (``psycopg.connection._WAIT_INTERVAL``).
_POLL_SECONDS = 0.1


def statement_setting(seconds: float) -> str:
    """``seconds`` as a ``statement_timeout`` value (whole milliseconds, ``"5000ms"``)."""
    return f"{max(1, round(seconds * 1000))}ms"




class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server has a deadline.

    ``wait_seconds`` is the most seconds one exchange may take (see the module
    docstring); :func:`wait_limit` and :func:`bulk_statements` change it for a while.
    """

    wait_seconds: float = STATEMENT_SECONDS + WAIT_GRACE_SECONDS

    def wait(self, gen: Any, interval: float = _POLL_SECONDS, timeout: float | None = None) -> Any:
        """Consume ``gen`` (psycopg's generator of one exchange), for at most ``timeout``
        seconds, :attr:`wait_seconds` when not given.

        Raises:
            psycopg.OperationalError: the server did not answer within
                :attr:`wait_seconds`; the connection is closed (a half-finished exchange
                cannot be resumed), so the pool discards it.
        """
        if timeout is not None:  # the caller's own deadline (psycopg's notifies): it handles it
            return super().wait(gen, interval, timeout)
        limit = self.wait_seconds
        try:
            return super().wait(gen, interval, limit)
        except psycopg.errors._WaitTimeout as exc:
            self.close()
            raise psycopg.OperationalError(
                f"the database did not answer within {limit:g} s; the connection was closed") from exc


@contextmanager
def wait_limit(conn: psycopg.Connection[Any], seconds: float) -> Iterator[None]:
    """Let ``conn`` wait at most ``seconds`` per exchange inside the block (a
    :class:`DeadlineConnection`; any other connection is left alone)."""
    if not isinstance(conn, DeadlineConnection):
        yield
        return
    before = conn.wait_seconds
    conn.wait_seconds = seconds
    try:
        yield
    finally:
        conn.wait_seconds = before


@contextmanager
def bulk_statements(conn: psycopg.Connection[Any], seconds: float) -> Iterator[None]:
    """Let the statements of one transaction on ``conn`` run up to ``seconds`` each.

    The server's ``statement_timeout`` is raised for the transaction (``SET LOCAL``) and
    the client's deadline with it, so a bulk job (an import, an audit) is not cut at
    the doors' limit. Enter it inside ``conn.transaction()``.
    """
    with wait_limit(conn, seconds + WAIT_GRACE_SECONDS):
        conn.execute("SELECT set_config('statement_timeout', %s, true)", (statement_setting(seconds),))
        yield


def check_connection(conn: psycopg.Connection[Any]) -> None:
    """The pool's test of a connection before a request gets it: psycopg-pool's own (an
    empty query), waiting at most :data:`CHECK_SECONDS`.

    Raises:
        psycopg.Error: the connection is broken or the server did not answer in time.
    """
    from psycopg_pool import ConnectionPool

    with wait_limit(conn, CHECK_SECONDS):
        ConnectionPool.check_connection(conn)


def make_pool(conninfo: str, *, max_size: int, configure: Callable[[Any], None], name: str,
              pool_wait: float = POOL_WAIT_SECONDS) -> Any:
    """A closed ``psycopg_pool.ConnectionPool`` of :class:`DeadlineConnection` (open it
    with ``open(wait=True)``).

    Args:
        conninfo: A libpq URL.
        max_size: Most connections held open (one is kept open at least).
        configure: Session settings run once on each new connection.
        name: The pool's name in psycopg-pool's log lines.
        pool_wait: Seconds a request waits for a connection before
            ``psycopg_pool.PoolTimeout``.
    """
    from psycopg_pool import ConnectionPool

    return ConnectionPool(
        conninfo, min_size=1, max_size=max_size, open=False, timeout=pool_wait,
        connection_class=DeadlineConnection,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_SECONDS},
        configure=configure, check=check_connection,
        reconnect_timeout=RECONNECT_SECONDS, name=name,
    )
