"""The connection pool of the Postgres store, set to fail fast and come back fast.

A Postgres outage must not make the service hang: every door answers 503
``store_unavailable`` within :data:`POOL_WAIT_SECONDS`, ``/readyz`` within
:data:`READY_WAIT_SECONDS`, and requests succeed again about a second after Postgres
is back. Three settings of ``psycopg_pool.ConnectionPool`` do it (psycopg-pool docs,
"Connection pools"):

- ``timeout``: how long a request waits for a connection. The prompt hook has 2 s
  for a whole recall (docs/hooks.md), so the wait is half of that, not the pool's 30 s;
- ``check``: each connection is tested (an empty query, one round trip) before a
  request gets it, so a connection broken by a restart is replaced, never handed to
  a request that then fails;
- ``reconnect_timeout``: the pool retries a lost connection with exponential backoff
  (1, 2, 4, 8 s ...) until this many seconds have passed, so after an outage it could
  wait up to 16 s before its next try. Giving up after :data:`RECONNECT_SECONDS`
  instead lets the next request start a fresh attempt at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["CONNECT_SECONDS", "POOL_WAIT_SECONDS", "READY_WAIT_SECONDS", "RECONNECT_SECONDS", "make_pool"]

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


def make_pool(conninfo: str, *, max_size: int, configure: Callable[[Any], None], name: str,
              pool_wait: float = POOL_WAIT_SECONDS) -> Any:
    """A closed ``psycopg_pool.ConnectionPool`` (open it with ``open(wait=True)``).

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
        kwargs={"autocommit": True, "connect_timeout": CONNECT_SECONDS},
        configure=configure, check=ConnectionPool.check_connection,
        reconnect_timeout=RECONNECT_SECONDS, name=name,
    )
