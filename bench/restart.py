"""First search after a restart, a forget and an update, in a large space: saved side indexes
against none, or against the previous code reading the same saved files.

    python bench/restart.py --size 200000          # one size (the store is built once and cached)
    python bench/restart.py --size 1000000 --against-code /tmp/base --json bench/results/restart-1m.json

``--against-code DIR`` compares with another version of the code instead of a rebuild
(which takes most of an hour at 1M on two shared cores): ``DIR`` holds
``bli_memory/{core,adapters,installers,schemas}`` of that version (for instance
``git archive <commit> core adapters installers schemas`` unpacked and linked there), and
the saved indexes are built once by the current code when missing. Both versions then
start, in turns, on the same store and the same saved files.

The store is ``bench/scale.py``'s synthetic space (a pool of 20,000 embedded texts; rows
past the pool are two pool facts in one memory), written by the store's own insert.
One run measures, side by side on the same file and the same page cache:

- **a restart without saved indexes** (what every new long-lived process paid before
  they were saved): a new process opens the store, loads the model and turns side
  indexes on as the daemon does (``warm_up``), then times its first searches and how long
  until the HNSW index is built in the background;
- **a restart with them**: the same, after a process built the indexes and saved them
  beside the store (``core/embedded/side_index_files.py``); the first search maps the
  saved matrix and the HNSW file, opens the BM25 copy in place and catches them up from
  the write sequence;
- **forgets on the warm engine**: ``forget`` by id, then the next search for the
  forgotten text (which must not return it), against what a forget cost before the
  cache was updated in place: reading the whole vector matrix again;
- **updates on the warm engine**: ``update`` by id (the new text is embedded), then the
  next search for the new text, which must return the new version and not the old.

Model loading is outside every timing (the daemon loads it at start). Each search is
timed in wall time and in CPU time of the process (``time.process_time``): on two cores
shared with other work the wall time mostly measures the wait for a core. Results go to
``--json`` (default ``bench/results/restart.json``) and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CACHE_DIR, REPO_ROOT, RESULTS_DIR, cached_embeddings, log, percentile, write_json  # noqa: E402

SPACE = "bench_scale"

# A new process as the daemon starts: store, model, side indexes on; then timed searches.
CHILD = """
import json, logging, sys, time
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(relativeCreated)d ms %(message)s")
t0 = time.perf_counter()
from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.settings import load_settings
s = load_settings()
b = EmbeddedBackend(Path(sys.argv[1]), keyword_index_min_rows=s.keyword_index_min_rows,
                    vector_index_min_rows=s.vector_index_min_rows)
b.warm_up()
ready_s = time.perf_counter() - t0
out = {"start_s": ready_s, "searches_ms": [], "searches_cpu_ms": []}
for q in json.loads(sys.argv[2]):
    t, c = time.perf_counter(), time.process_time()
    res = b.search(q, space=sys.argv[3], limit=10)
    out["searches_ms"].append((time.perf_counter() - t) * 1000)
    out["searches_cpu_ms"].append((time.process_time() - c) * 1000)
status = b.side_indexes.status()
out["status_after_first"] = status
t = time.perf_counter()
b.side_indexes.wait(float(sys.argv[4]))
out["indexes_ready_s"] = time.perf_counter() - t
out["status_after_wait"] = b.side_indexes.status()
t = time.perf_counter()
b.search(json.loads(sys.argv[2])[0], space=sys.argv[3], limit=10)
out["search_when_ready_ms"] = (time.perf_counter() - t) * 1000
b.close()
print(json.dumps(out))
"""


def _build_store(path: Path, size: int) -> None:
    """The synthetic space of ``size`` rows (kept between runs when the count matches)."""
    import sqlite3

    from scale import _insert, make_texts

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.embeddings import get_embedder

    if path.exists():
        with sqlite3.connect(path) as conn:
            try:  # rows written by the build: forgotten ones too, not versions added by updates
                have = conn.execute("SELECT count(*) FROM memories WHERE supersedes IS NULL").fetchone()[0]
            except sqlite3.Error:
                have = -1
        if have == size:
            return
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    embedder = get_embedder()
    pool = min(20_000, size)
    texts = make_texts(pool)
    vecs = cached_embeddings(texts, embedder.embed, f"{embedder.name}/batched")
    writer = EmbeddedBackend(path)
    t0 = time.perf_counter()
    for lo in range(0, size, 50_000):
        _insert(writer.store, lo, min(size, lo + 50_000), texts, vecs, SPACE)
        log(f"restart: {min(size, lo + 50_000)} rows written")
    writer.store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    writer.close()
    log(f"restart: store of {size} rows in {time.perf_counter() - t0:.0f} s")


def _restart(path: Path, queries: list[str], wait_s: float, code: Path | None = None) -> dict[str, Any]:
    """One new process: start, searches, wait for the side indexes (see :data:`CHILD`);
    ``code``: a folder holding another version's ``bli_memory`` package, imported instead."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (code, REPO_ROOT) if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(queries), SPACE, str(wait_s)],
                          capture_output=True, text=True, env=env, timeout=wait_s + 900)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    out = dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    out["log"] = [line for line in proc.stderr.splitlines() if "side index" in line or "matrix" in line]
    out["code"] = str(code) if code else "current"
    return out


def _forgets(path: Path, n: int, reloads: int = 2) -> dict[str, Any]:
    """Forget ``n`` rows, then update ``n`` others, on a warm engine; time each write and
    the search after it."""
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.settings import load_settings

    s = load_settings()
    b = EmbeddedBackend(path, keyword_index_min_rows=s.keyword_index_min_rows,
                        vector_index_min_rows=s.vector_index_min_rows)
    b.warm_up()
    side = b.side_indexes
    assert side is not None
    b.search("how do we deploy the billing service", space=SPACE)
    side.wait(900)
    b.search("how do we deploy the billing service", space=SPACE)
    with b.store._read() as conn:
        rows = conn.execute("SELECT id, content FROM memories WHERE state = 'active' AND space = ? "
                            "ORDER BY random() LIMIT ?", (SPACE, 2 * n)).fetchall()
    forget_ms, forget_cpu_ms, next_ms, returned = [], [], [], 0
    for memory_id, content in rows[:n]:
        t, c = time.perf_counter(), time.process_time()
        b.forget(space=SPACE, id=memory_id)
        forget_ms.append((time.perf_counter() - t) * 1000)
        forget_cpu_ms.append((time.process_time() - c) * 1000)
        t = time.perf_counter()
        hits = b.search(content, space=SPACE, limit=10).hits
        next_ms.append((time.perf_counter() - t) * 1000)
        returned += any(h.memory.id == memory_id for h in hits)
    update_ms, after_update_ms, new_found, old_returned = [], [], 0, 0
    for memory_id, content in rows[n:]:
        text = f"{content} Revised: the owner moved to the platform team."
        t = time.perf_counter()
        new_id = b.update(text, space=SPACE, id=memory_id).memory.id
        update_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        hits = b.search(text, space=SPACE, limit=10).hits
        after_update_ms.append((time.perf_counter() - t) * 1000)
        new_found += any(h.memory.id == new_id for h in hits)
        old_returned += any(h.memory.id == memory_id for h in hits)
    reload_ms = []
    b.store.saved_vectors = None  # from the table, as before (not the saved matrix)
    for _ in range(reloads):  # what the next search paid before: the whole matrix read again
        b.store._vector_cache.clear()
        t = time.perf_counter()
        b.store.vectors((SPACE,))
        reload_ms.append((time.perf_counter() - t) * 1000)
    status = side.status()
    b.close()
    return {"forget_ms": forget_ms, "forget_cpu_ms": forget_cpu_ms, "next_search_ms": next_ms,
            "forgotten_returned": returned,
            "update_ms": update_ms, "after_update_search_ms": after_update_ms, "updated_found": new_found,
            "old_version_returned": old_returned, "matrix_reload_ms": reload_ms, "status": status}


def _mb(folder: Path) -> dict[str, float]:
    if not folder.is_dir():
        return {}
    return {f.suffix: round(f.stat().st_size / 1024 / 1024, 1) for f in folder.iterdir()
            if f.suffix in (".usearch", ".f32", ".seqs")}


def run(size: int, *, wait_s: float = 900.0, forgets: int = 20, against: Path | None = None,
        rounds: int = 2, reloads: int = 2) -> dict[str, Any]:
    """Build (or reuse) the store, then measure both restarts and the writes in one run.

    Without ``against``: a restart with no saved indexes (which builds and saves them),
    then one with them. With it: ``rounds`` turns of a restart of the ``against`` code and
    one of the current code, on the same saved indexes (built first when missing).
    """
    from scale import make_queries

    from bli_memory.core.embedded.side_index_files import index_folder

    folder = CACHE_DIR / "restart"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"store-{size}.sqlite"
    _build_store(path, size)
    saved = index_folder(path)
    queries = make_queries(3, seed=23)
    out: dict[str, Any] = {"size": size}
    if against is None:
        shutil.rmtree(saved, ignore_errors=True)
        log("restart: a new process without saved indexes (builds them, then saves)")
        cold = _restart(path, queries, wait_s)
        log(f"restart: without: first search {cold['searches_ms'][0]:.0f} ms, "
            f"indexes ready after {cold['indexes_ready_s']:.0f} s more")
        log("restart: a new process with the saved indexes")
        warm = _restart(path, queries, wait_s)
        log(f"restart: with: first search {warm['searches_ms'][0]:.0f} ms ({warm['status_after_first']})")
        out.update(without_saved=cold, with_saved=warm)
    else:
        if not any(saved.glob("vector-*.json")):
            log("restart: building the saved indexes once")
            _restart(path, queries, wait_s)
        turns: dict[str, list[dict[str, Any]]] = {"previous": [], "current": []}
        for k in range(rounds):
            for name, code in (("previous", against), ("current", None)):
                res = _restart(path, queries, wait_s, code)
                turns[name].append(res)
                log(f"restart: {name} code, round {k + 1}: first search {res['searches_ms'][0]:.0f} ms "
                    f"({res['status_after_first']})")
        out.update(previous_code=turns["previous"], current_code=turns["current"])
    out["saved_files_mb"] = _mb(saved)
    log(f"restart: {forgets} forgets and {forgets} updates on a warm engine")
    out["forgets"] = _forgets(path, forgets, reloads)
    return out


def _writes(f: dict[str, Any]) -> list[str]:
    p50 = lambda xs: percentile(xs, 50)  # noqa: E731
    return [
        f"forget p50 {p50(f['forget_ms']):.1f} ms (max {max(f['forget_ms']):.1f}; CPU p50 "
        f"{p50(f.get('forget_cpu_ms') or [0]):.1f} ms); next search p50 "
        f"{p50(f['next_search_ms']):.1f} ms (max {max(f['next_search_ms']):.1f}); forgotten rows returned: "
        f"{f['forgotten_returned']} of {len(f['forget_ms'])}; a full matrix reload (the old cost of the "
        f"search after a forget) p50 {p50(f['matrix_reload_ms']):.0f} ms",
        "",
        f"update p50 {p50(f['update_ms']):.1f} ms (max {max(f['update_ms']):.1f}, the model run included); "
        f"next search p50 {p50(f['after_update_search_ms']):.1f} ms "
        f"(max {max(f['after_update_search_ms']):.1f}); "
        f"new version found: {f['updated_found']} of {len(f['update_ms'])}; old version returned: "
        f"{f['old_version_returned']}",
    ]


def table(res: dict[str, Any]) -> str:
    """Markdown rows of one result."""
    if "previous_code" in res:
        runs = [(f"previous code, round {k + 1}", r) for k, r in enumerate(res["previous_code"])]
        runs += [(f"current code, round {k + 1}", r) for k, r in enumerate(res["current_code"])]
    else:
        runs = [("without saved indexes", res["without_saved"]), ("with saved indexes", res["with_saved"])]
    lines = [
        f"memories: {res['size']:,}",
        "| | " + " | ".join(name for name, _ in runs) + " |",
        "|---" * (len(runs) + 1) + "|",
        "| first search ms | " + " | ".join(f"{r['searches_ms'][0]:.0f}" for _, r in runs) + " |",
        "| its CPU time ms (all threads) | " + " | ".join(f"{r['searches_cpu_ms'][0]:.0f}" for _, r in runs)
        + " |",
        "| 2nd, 3rd search ms | " + " | ".join(f"{r['searches_ms'][1]:.0f}, {r['searches_ms'][2]:.0f}"
                                             for _, r in runs) + " |",
        "| side indexes after the first search | " + " | ".join(str(r["status_after_first"]) for _, r in runs)
        + " |",
        "| more seconds until every index is ready | " + " | ".join(f"{r['indexes_ready_s']:.1f}"
                                                                  for _, r in runs) + " |",
        "| search when ready ms | " + " | ".join(f"{r['search_when_ready_ms']:.1f}" for _, r in runs) + " |",
        "",
        f"saved files MiB: {res['saved_files_mb']}",
        "",
        *_writes(res["forgets"]),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--wait", type=float, default=900.0, help="seconds to wait for a background build")
    parser.add_argument("--forgets", type=int, default=20, help="forgets, and as many updates")
    parser.add_argument("--against-code", type=Path, default=None,
                        help="compare with the code in this folder (see above) instead of a rebuild")
    parser.add_argument("--rounds", type=int, default=2, help="turns of each version with --against-code")
    parser.add_argument("--reloads", type=int, default=2, help="full matrix reads timed for comparison")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "restart.json")
    args = parser.parse_args()
    res = run(args.size, wait_s=args.wait, forgets=args.forgets, against=args.against_code,
              rounds=args.rounds, reloads=args.reloads)
    write_json(args.json, res)
    print(table(res))


if __name__ == "__main__":
    main()
