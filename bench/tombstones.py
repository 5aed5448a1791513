"""The forget check of one capture at 10,000 tombstones and 10,000 purge marks.

    python bench/tombstones.py               # --size 10000, 5 repeats, median
    python bench/tombstones.py --size 50000

Automatic capture checks every statement against every tombstone and purge mark of the
space (``core/extraction/tombstones.py``: an exact normalised lookup over all, the rule
over the newest 500 and over every older one holding the statement's values). One run
measures, side by side:

- **fetch**: reading every tombstone of a real embedded store (10,000 forgotten rows,
  imported) and building the check from them and 10,000 purge marks;
- **per statement, complete**: one statement naming a value no tombstone holds, one
  naming a value one old tombstone holds (a hit past the window), one naming no value;
- **per statement, window only**: what a capture paid before, the rule over the newest
  500 of each, each tombstone parsed again for every statement.

Results go to ``--json`` (default ``bench/results/tombstones.json``) and a table on stdout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS_DIR, log, markdown_table, write_json  # noqa: E402

from bli_memory.core.extraction import tombstones  # noqa: E402

SPACE = "bench_tombstones"
STATEMENTS = {
    "value, no match": "We decided the cache service listens on port 65001.",
    "value, old match": "Reminder: the staging port is 8,443.",
    "no value": "We decided the team reviews every change before it merges.",
}


def _records(size: int) -> list[dict[str, Any]]:
    texts = ["We decided the staging port is 8443 for the load balancer."]
    texts += [f"We decided service {n} listens on port {10000 + n} behind nginx." for n in range(size - 1)]
    out = []
    for n, text in enumerate(texts):
        at = f"2026-01-{1 + n // 86400:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000000Z"
        out.append({"id": str(uuid.uuid4()), "space": SPACE, "content": text, "createdAt": at,
                    "updatedAt": at, "forgottenAt": at, "state": "forgotten", "version": 1})
    return out


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2)


def _window_only(statement: str, texts: list[str], marks: list[dict[str, Any]]) -> bool:
    """The check before: the newest 500 of each, parsed again per statement."""
    window = tombstones.TOMBSTONE_LIMIT
    return (tombstones.restates(statement, texts[:window]) is not None
            or tombstones.restates_mark(statement, marks[:window]))


def _statement(statement: str, texts: list[str], marks: list[dict[str, Any]], build_ms: float,
               repeats: int) -> dict[str, Any]:
    gone = tombstones.Forgotten(texts, marks)
    first = _median_ms(lambda: tombstones.Forgotten(texts, marks).suppresses(statement), 1) - build_ms
    return {"suppressed": gone.suppresses(statement),  # parses what it compares
            "window_only_suppressed": _window_only(statement, texts, marks),
            "complete_first_ms": round(first, 2),
            "complete_next_ms": _median_ms(lambda: gone.suppresses(statement), repeats),
            "window_only_ms": _median_ms(lambda: _window_only(statement, texts, marks), repeats)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "tombstones.json")
    args = parser.parse_args()

    from bli_memory.core.embedded.engine import EmbeddedBackend

    with tempfile.TemporaryDirectory() as tmp:
        backend = EmbeddedBackend(Path(tmp) / "memory.sqlite3")
        try:
            log(f"importing {args.size} forgotten rows")
            backend.import_records(_records(args.size))
            texts = tombstones.fetch(backend, SPACE)
            assert len(texts) == args.size
            fetch_ms = _median_ms(lambda: tombstones.fetch(backend, SPACE), args.repeats)
        finally:
            backend.close()
    log(f"making {args.size} purge marks")
    marks = [tombstones.fingerprint(t) for t in texts]
    build_ms = _median_ms(lambda: tombstones.Forgotten(texts, marks), args.repeats)

    rows = []
    results: dict[str, Any] = {"size": args.size, "fetch_ms": fetch_ms, "build_ms": build_ms,
                               "statements": {}}
    for name, statement in STATEMENTS.items():
        results["statements"][name] = measured = _statement(statement, texts, marks, build_ms, args.repeats)
        rows.append([name, measured["suppressed"], measured["complete_first_ms"],
                     measured["complete_next_ms"], measured["window_only_ms"]])
    write_json(args.json, results)
    print(f"{args.size} tombstones + {args.size} purge marks: fetch {fetch_ms} ms, build {build_ms} ms")
    print(markdown_table(["statement", "suppressed", "complete, first (ms)", "complete, next (ms)",
                          "window of 500 (ms)"], rows))


if __name__ == "__main__":
    main()
