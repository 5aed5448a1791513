"""What checking each pooled connection costs a search of the team service.

The Postgres store's pool tests a connection (one empty-query round trip) before a
request gets it (``core/team/postgres/pool.py``), so a connection cut by a Postgres restart is
replaced instead of failing a request. This measures that round trip's share of a
search, side by side in one run:

1. A throwaway Postgres + pgvector (``tests/core/team/pgserver.py``) and a fresh database;
   ``--seed`` memories saved into one space (not timed).
2. Two pools on that database, identical but for ``check``; one ``PostgresBackend``.
3. ``--rounds`` rounds; in each, ``--calls`` searches (the real ``search``: view,
   embedding, k-NN, keyword channels, rows) through one pool, then through the other,
   the order alternating per round. Each call is timed with ``time.perf_counter``.

Prints the median per-call time of each, their ratio, and the median cost of the
check alone. Bounded; loopback only.

Usage::

    python bench/pool_check.py --seed 300 --rounds 10 --calls 50
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

__all__ = ["main", "run"]


def run(*, seed: int, rounds: int, calls: int) -> dict[str, Any]:
    """Run the comparison; returns medians in milliseconds and the ratio."""
    from bli_memory.core.team.postgres.base import configure_connection
    from bli_memory.core.team.postgres.pool import check_connection, make_pool
    from bli_memory.core.team.postgres.store import PostgresBackend
    from tests.core.team import pgserver

    inst = pgserver.acquire()
    try:
        url = pgserver.create_database(inst, "bli_bench_pool")
        admin = PostgresBackend(url, pool_size=4)
        backend = admin.for_person(admin.ensure_person("bench"))
        for i in range(seed):
            backend.save(f"Decision {i}: deploys go through CI (ticket BLI-{1000 + i}).", space="bench_space")
        checked = admin._shared.pool
        unchecked = make_pool(checked.conninfo, max_size=4, configure=configure_connection, name="unchecked")
        unchecked._check = None  # the one difference
        unchecked.open(wait=True)
        times: dict[str, list[float]] = {"checked": [], "unchecked": []}
        pools = {"checked": checked, "unchecked": unchecked}
        for r in range(rounds):
            order = ("checked", "unchecked") if r % 2 == 0 else ("unchecked", "checked")
            for name in order:
                admin._shared.pool = pools[name]
                for c in range(calls):
                    started = time.perf_counter()
                    backend.search(f"what did we decide about deploys {c}?", space="bench_space", limit=5)
                    times[name].append(time.perf_counter() - started)
        admin._shared.pool = checked
        check_only = []
        for _ in range(rounds * calls):
            with checked.connection() as conn:
                started = time.perf_counter()
                check_connection(conn)
                check_only.append(time.perf_counter() - started)
        unchecked.close()
        admin.close()
    finally:
        pgserver.release(inst)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    return {"calls_each": rounds * calls, "search_ms": med, "ratio": med["checked"] / med["unchecked"],
            "check_ms": statistics.median(check_only) * 1000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    res = run(seed=args.seed, rounds=args.rounds, calls=args.calls)
    print(f"searches per variant: {res['calls_each']}")
    print(f"search median, checked pool:   {res['search_ms']['checked']:.2f} ms")
    print(f"search median, unchecked pool: {res['search_ms']['unchecked']:.2f} ms")
    print(f"ratio checked / unchecked:     {res['ratio']:.3f}")
    print(f"the check alone (median):      {res['check_ms']:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
