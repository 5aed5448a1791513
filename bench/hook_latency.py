"""End-to-end latency of the prompt hook (spawn to exit) via the warm daemon and direct.

What the person waits for on every prompt is a whole process: interpreter start,
imports, reading stdin, the recall itself, the receipt, exit. This measures exactly
that, the way a host runs it (``bli-memory-mcp hook prompt`` with the payload on
stdin, spawn to exit), three ways interleaved in one run so machine load hits them
alike:

- ``bare``: ``python -c pass`` of the same interpreter and environment, the floor;
- ``daemon``: the hook with a warm resident daemon answering (``BLI_MEMORY_DAEMON=1``);
- ``direct``: the hook answering itself (``BLI_MEMORY_DAEMON=0``): imports the engine,
  opens the store and loads the model in the hook process.

With 1k and 10k memories in the space (synthetic agent-style facts from
``bench/scale.py``; rows past a 2,000-text pool are two pool facts joined, embedded as
the normalised sum, as there). Each prompt is a different realistic question. Also:
what the hook's daemon route imports (``python -X importtime``, minimum over runs),
the daemon's own answer time seen from a client in this process, the daemon's RSS,
and the MCP server's cold start: spawn to ``initialize`` answered and to the first
``search_memory`` answered.

Bytecode is compiled first (as ``pip install`` does); ``PYTHONDONTWRITEBYTECODE`` is
dropped from the children's environment, otherwise every hook would recompile our
modules and measure the compiler.

Usage (bounded: about 3-5 minutes on 2 cores)::

    python bench/hook_latency.py [--rounds 25] [--fast-rounds 100] [--sizes 1000,10000]
        [--mcp-runs 6] [--json bench/results/hook_latency.json]
        [--markdown bench/results/hook_latency.md]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (
    CACHE_DIR,
    REPO_ROOT,
    RESULTS_DIR,
    bench_embedder,
    cached_embeddings,
    log,
    machine_description,
    percentile,
)

__all__ = ["main"]

PY = sys.executable
BIN = str(Path(sys.executable).parent / "bli-memory-mcp")


# --- environment ---------------------------------------------------------------------


def clean_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BLI_MEMORY_", "XDG_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["HOME"] = str(home)
    if os.environ.get("BLI_MEMORY_EMBEDDER"):  # bench/run --embedder: the model under test
        env["BLI_MEMORY_EMBEDDER"] = os.environ["BLI_MEMORY_EMBEDDER"]
    return env


def compile_bytecode() -> None:
    for folder in ("core", "adapters", "installers"):
        subprocess.run(
            [PY, "-m", "compileall", "-q", str(REPO_ROOT / folder)], check=False, stdout=subprocess.DEVNULL
        )


def populate(home: Path, project: Path, size: int) -> str:
    """Write ``size`` memories into the project's space of the store under ``home``."""
    import uuid

    import numpy as np
    from scale import make_texts

    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.memory.spaces import derive_space
    from bli_memory.core.models import Memory

    embedder = bench_embedder()
    pool_texts = make_texts(2000)
    pool_vecs = cached_embeddings(pool_texts, embedder.embed, f"{embedder.name}/batched")
    space = derive_space(project).tag
    path = home / ".local/share/bli-memory/memory.sqlite3"
    store = SQLiteStore(path, model_name=embedder.name, dimensions=embedder.dimensions)
    p = len(pool_texts)
    for lo in range(0, size, 5000):
        with store.writing(space) as w:  # the store's own transaction and insert, batched
            at = w.at
            for i in range(lo, min(lo + 5000, size)):
                a = i % p
                if i < p:
                    text, vec = pool_texts[a], pool_vecs[a]
                else:
                    b = (a + 1 + i // p) % p
                    v = pool_vecs[a] + pool_vecs[b]
                    text, vec = f"{pool_texts[a]} {pool_texts[b]}", (v / np.linalg.norm(v)).astype(np.float32)
                m = Memory(
                    id=str(uuid.uuid4()),
                    space=space,
                    content=text,
                    source="import",
                    created_at=at,
                    updated_at=at,
                )
                w.insert(m, vec)
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return space


# --- one timed process -----------------------------------------------------------------


def timed(argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b"") -> tuple[float, str]:
    """Wall time from spawn to exit in ms, and the process's stderr."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, err = proc.communicate(stdin, timeout=60)
    return (time.perf_counter() - t0) * 1000, err.decode("utf-8", "replace")


def receipt(stderr: str) -> dict[str, Any]:
    for line in stderr.splitlines():
        if line.startswith("[bli-memory] prompt "):
            _, _, outcome, body = line.split(" ", 3)
            return {"outcome": outcome, **json.loads(body)}
    return {"outcome": "none"}


def summary(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50": percentile(ms, 50), "p95": percentile(ms, 95), "min": min(ms)}


# --- daemon ------------------------------------------------------------------------------


def start_daemon(env: dict[str, str], cwd: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [PY, "-m", "bli_memory.core.cli.main", "daemon"],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    from bli_memory.core.hooks import daemon_client

    sock = Path(env["HOME"]) / ".local/state/bli-cockpit/memory-daemon.sock"
    give_up = time.monotonic() + 120
    while time.monotonic() < give_up:
        try:
            if daemon_client.ping(sock).get("ready"):
                return proc
        except daemon_client.DaemonUnavailable:
            pass
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the daemon did not become ready")


def daemon_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def in_process_answers(env: dict[str, str], project: Path, queries: list[str], n: int = 50) -> dict[str, Any]:
    """The daemon's answer time seen by a client in this process (no process start)."""
    from bli_memory.core.hooks import daemon_client

    sock = Path(env["HOME"]) / ".local/state/bli-cockpit/memory-daemon.sock"
    req, pings = [], []
    for i in range(n):
        payload = {
            "prompt": queries[i % len(queries)],
            "cwd": str(project),
            "hook_event_name": "UserPromptSubmit",
        }
        t0 = time.perf_counter()
        daemon_client.request(
            "prompt", "claude", payload, deadline=time.monotonic() + 5, environ=env, path=sock
        )
        req.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        daemon_client.ping(sock)
        pings.append((time.perf_counter() - t0) * 1000)
    return {"request": summary(req), "ping": summary(pings)}


# --- import costs -----------------------------------------------------------------------


def import_profile(
    argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes, runs: int = 10
) -> dict[str, Any]:
    """Minimum self time per module over ``runs`` runs of ``python -X importtime``."""
    best: dict[str, int] = collections.defaultdict(lambda: 10**12)
    for _ in range(runs):
        out = subprocess.run(
            [PY, "-X", "importtime", *argv], env=env, cwd=cwd, input=stdin, capture_output=True, check=False
        )
        for line in out.stderr.decode("utf-8", "replace").splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                self_us, _cum, name = line[len("import time:") :].split("|")
                best[name.strip()] = min(best[name.strip()], int(self_us))
    total = sum(best.values())
    return {
        "total_ms": total / 1000,
        "modules": len(best),
        "self_ms": {n: us / 1000 for n, us in best.items()},
    }


def heaviest(
    self_ms: dict[str, float], *, skip: set[str] | frozenset[str] = frozenset(), n: int = 12
) -> list[tuple[str, float]]:
    return sorted(((k, v) for k, v in self_ms.items() if k not in skip), key=lambda kv: -kv[1])[:n]


# --- MCP cold start -------------------------------------------------------------------------


def mcp_cold_start(env: dict[str, str], cwd: Path, query: str,
                   rss: list[float] | None = None) -> tuple[float, float]:
    """Spawn the MCP server; ms to ``initialize`` answered and to the first search answered.

    With ``rss``, the server's resident set (MB) after its first search is appended to it.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [BIN], env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(obj: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(obj) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def answer(rid: int) -> dict[str, Any]:
        while True:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise SystemExit("the MCP server closed stdout")
            msg = json.loads(line)
            if msg.get("id") == rid:
                return msg

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            }
        )
        answer(1)
        t_init = (time.perf_counter() - t0) * 1000
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "search_memory", "arguments": {"query": query}},
            }
        )
        reply = answer(2)
        t_search = (time.perf_counter() - t0) * 1000
        if reply.get("result", {}).get("isError") or "error" in reply:
            raise SystemExit(f"search failed: {reply}")
        if rss is not None:
            rss.append(daemon_rss_mb(proc.pid))
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return t_init, t_search


# --- the run ----------------------------------------------------------------------------------


def run_size(size: int, args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"bli-hook-bench-{size}-"))
    project = home / "project"
    project.mkdir()
    env = clean_env(home)
    try:
        t0 = time.perf_counter()
        populate(home, project, size)
        log(f"hooks: {size} memories written ({time.perf_counter() - t0:.1f}s)")
        daemon = start_daemon(env, project)
        on = {**env, "BLI_MEMORY_DAEMON": "1"}
        off = {**env, "BLI_MEMORY_DAEMON": "0"}
        hook = [BIN, "hook", "prompt"]

        def payload(i: int) -> bytes:
            return json.dumps(
                {
                    "session_id": "bench",
                    "hook_event_name": "UserPromptSubmit",
                    "cwd": str(project),
                    "prompt": queries[i % len(queries)],
                }
            ).encode()

        for i in range(3):  # warm the page cache and the daemon's vectors
            timed(hook, on, project, payload(i))
            timed(hook, off, project, payload(i))
        times: dict[str, list[float]] = {"bare": [], "daemon": [], "direct": []}
        inner: dict[str, list[float]] = {"daemon": [], "direct": []}
        routes: dict[str, collections.Counter] = {
            "daemon": collections.Counter(),
            "direct": collections.Counter(),
        }
        hits: list[int] = []
        rng = random.Random(size)
        q = 0
        plan = [("bare", "daemon", "direct")] * args.rounds + [("bare", "daemon")] * args.fast_rounds
        for n, kinds in enumerate(plan):
            order = list(kinds)
            rng.shuffle(order)
            for kind in order:
                if kind == "bare":
                    ms, _ = timed([PY, "-c", "pass"], env, project, payload(q))
                else:
                    ms, err = timed(hook, on if kind == "daemon" else off, project, payload(q))
                    rec = receipt(err)
                    routes[kind]["/".join(str(rec[k]) for k in ("outcome", "via", "reason") if k in rec)] += 1
                    if "elapsed_ms" in rec:
                        inner[kind].append(rec["elapsed_ms"])
                    if kind == "daemon" and "hits" in rec:
                        hits.append(rec["hits"])
                    q += 1
                times[kind].append(ms)
            if n % 25 == 0:
                log(f"hooks {size}: round {n + 1}/{len(plan)}")
        answers = in_process_answers(env, project, queries)
        rss = daemon_rss_mb(daemon.pid)
        imports_daemon = import_profile(hook, on, project, payload(0)) if size == args.sizes[0] else None
        imports_direct = (
            import_profile(hook, off, project, payload(0), runs=3) if size == args.sizes[0] else None
        )
        imports_bare = import_profile(["-c", "pass"], env, project, b"") if size == args.sizes[0] else None
        mcp = []
        mcp_rss: list[float] = []
        if size == args.sizes[0]:
            for i in range(args.mcp_runs):
                # In process, as this figure always was: bench/mcp_daemon.py has the daemon route.
                mcp.append(mcp_cold_start(off, project, queries[i], mcp_rss))
            log(f"hooks: MCP cold start x{args.mcp_runs} done")
        daemon.terminate()
        daemon.wait(timeout=30)
        bare_p50 = percentile(times["bare"], 50)
        result = {
            "size": size,
            "times": {k: summary(v) for k, v in times.items()},
            "ratio_p50": {k: percentile(v, 50) / bare_p50 for k, v in times.items()},
            "in_hook_elapsed_ms": {k: summary(v) for k, v in inner.items() if v},
            "routes": {k: dict(v) for k, v in routes.items()},
            "hits_mean": sum(hits) / len(hits) if hits else 0,
            "daemon_answer": answers,
            "daemon_rss_mb": rss,
            "raw": times,
        }
        if imports_daemon is not None:
            bare_names = set(imports_bare["self_ms"])
            result["imports"] = {
                "bare_ms": imports_bare["total_ms"],
                "daemon_route_ms": imports_daemon["total_ms"],
                "direct_route_ms": imports_direct["total_ms"],
                "daemon_route_top": heaviest(imports_daemon["self_ms"], skip=bare_names),
                "direct_route_top": heaviest(imports_direct["self_ms"]),
                "daemon_route_extra_ms": sum(
                    v for k, v in imports_daemon["self_ms"].items() if k not in bare_names
                ),
                "daemon_route_modules": imports_daemon["modules"],
                "direct_route_modules": imports_direct["modules"],
            }
            result["mcp"] = {
                "initialize": summary([a for a, _ in mcp]),
                "first_search": summary([b for _, b in mcp]),
                "rss_mb": max(mcp_rss),
                "raw": mcp,
            }
        return result
    finally:
        shutil.rmtree(home, ignore_errors=True)


def to_markdown(results: list[dict[str, Any]], machine: dict[str, Any], command: str) -> str:
    lines = [
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB, "
        f"{machine['os']}, Python {machine['python']}; commit {machine['commit']}; {machine['date']}.",
        "",
        f"Command: `{command}`",
        "",
        "| memories | route | n | p50 ms | p95 ms | min ms | p50 / bare p50 | in-hook p50 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for kind in ("bare", "daemon", "direct"):
            t = r["times"][kind]
            inner = r["in_hook_elapsed_ms"].get(kind, {}).get("p50")
            lines.append(
                f"| {r['size']:,} | {kind} | {t['n']} | {t['p50']:.1f} | {t['p95']:.1f} | {t['min']:.1f} | "
                f"{r['ratio_p50'][kind]:.2f}x | {'' if inner is None else f'{inner:.0f}'} |"
            )
    lines += [
        "",
        "| memories | daemon answer, client in process: p50 / p95 ms | ping p50 ms | daemon RSS MiB | "
        "routes seen |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        a = r["daemon_answer"]
        lines.append(
            f"| {r['size']:,} | {a['request']['p50']:.1f} / {a['request']['p95']:.1f} | "
            f"{a['ping']['p50']:.2f} | {r['daemon_rss_mb']:.0f} | {r['routes']} |"
        )
    first = results[0]
    if "imports" in first:
        im = first["imports"]
        lines += [
            "",
            f"Imports (python -X importtime, sum of per-module minimum self time): bare start "
            f"{im['bare_ms']:.1f} ms; hook via daemon {im['daemon_route_ms']:.1f} ms "
            f"({im['daemon_route_modules']} modules); hook direct {im['direct_route_ms']:.1f} ms "
            f"({im['direct_route_modules']} modules). Modules the daemon route adds to a bare start: "
            f"{im['daemon_route_extra_ms']:.1f} ms.",
            "",
            "Heaviest modules the daemon route adds to a bare start: "
            + ", ".join(f"{n} {ms:.2f}" for n, ms in im["daemon_route_top"])
            + " (ms).",
            "",
            "Heaviest modules of the direct route: "
            + ", ".join(f"{n} {ms:.1f}" for n, ms in im["direct_route_top"])
            + " (ms).",
        ]
        m = first["mcp"]
        lines += [
            "",
            "| MCP server cold start (1k memories) | n | p50 ms | p95 ms | min ms |",
            "|---|---|---|---|---|",
            f"| spawn to `initialize` answered | {m['initialize']['n']} | {m['initialize']['p50']:.0f} | "
            f"{m['initialize']['p95']:.0f} | {m['initialize']['min']:.0f} |",
            f"| spawn to first `search_memory` answered | {m['first_search']['n']} | "
            f"{m['first_search']['p50']:.0f} | {m['first_search']['p95']:.0f} | "
            f"{m['first_search']['min']:.0f} |",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=25, help="rounds of bare + daemon + direct")
    parser.add_argument("--fast-rounds", type=int, default=100, help="extra rounds of bare + daemon")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--mcp-runs", type=int, default=6)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "hook_latency.json")
    parser.add_argument("--markdown", type=Path, default=RESULTS_DIR / "hook_latency.md")
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",")]
    command = "python bench/hook_latency.py " + " ".join(argv if argv is not None else sys.argv[1:])
    compile_bytecode()
    from scale import make_queries

    queries = make_queries(200)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    machine = machine_description()
    load_before = os.getloadavg()
    results = [run_size(size, args, queries) for size in args.sizes]
    machine["loadavg_before"] = load_before
    machine["loadavg_after"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"machine": machine, "command": command, "results": results}, indent=1, default=str) + "\n"
    )
    md = to_markdown(results, machine, command.strip())
    md += (
        f"\nLoad average (1/5/15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after: {', '.join(f'{x:.2f}' for x in machine['loadavg_after'])}.\n"
    )
    args.markdown.write_text(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
