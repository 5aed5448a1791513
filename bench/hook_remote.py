"""The prompt hook through the team service: two revisions side by side, in one run.

What a person on the team store waits for on every prompt is the hook process
(``bli-memory-mcp hook prompt``, spawn to exit) and, inside it, the requests it sends to
the service. This runs two revisions of the product against one service, interleaved so
that machine load hits them alike:

1. A throwaway Postgres + pgvector (``tests/core/team/pgserver.py``) and this tree's
   ``bli-memory-mcp service`` as a subprocess on loopback (it answers the doors of both
   revisions: old doors stay).
2. ``--seed`` memories saved into one space through the client (not timed).
3. Each revision (``--before``, default ``HEAD~1``; ``--after``, default the working tree)
   installed, not editable, into a virtualenv of its own whose dependencies are this
   interpreter's site-packages (a ``.pth`` line), bytecode compiled.
4. ``--rounds`` prompts, each one run by both revisions in alternating order, as the
   hook's direct route (``BLI_MEMORY_DAEMON=0``: the hook process opens the client
   itself). Per prompt: the wall time from spawn to exit, and the requests the service
   answered for it (the ``bli_memory_requests_total`` counters of ``/metrics``).
5. In this process, with this tree's client on one kept-alive connection, the gate's reads
   of one prompt: three requests (search, terms, background) against the one recall
   request, interleaved.

Usage (about 3 minutes on 2 cores)::

    python bench/hook_remote.py [--before REV] [--rounds 40] [--seed 400]
        [--json bench/results/hook_remote.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import RESULTS_DIR, log, machine_description, percentile  # noqa: E402

__all__ = ["main"]

QUESTIONS = [
    "How do we deploy the billing service?",
    "What did we decide about feature flags?",
    "Which port does the cache listen on?",
    "Who reviews database migrations?",
    "When does the release train leave?",
    "What is the on-call rotation?",
    "How are secrets stored in CI?",
    "Why did the load test fail last week?",
]
TOPICS = ["deploys", "the billing service", "feature flags", "the cache", "database migrations",
          "the release train", "on-call", "secrets in CI", "load tests", "code review", "backups"]


def _fact(rng: random.Random, i: int) -> str:
    a, b = rng.sample(TOPICS, 2)
    return f"Note {i}: for {a}, the team agreed to check {b} first (port {8000 + i % 97})."


def _venv_for(rev: str | None, folder: Path) -> Path:
    """A virtualenv holding revision ``rev`` (None: the working tree), installed, not editable."""
    import site
    import sysconfig

    source = ROOT
    if rev is not None:
        source = folder / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(source), rev],
                       check=True, capture_output=True)
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run(["uv", "pip", "install", "--quiet", "--no-deps", "--compile-bytecode", "--python", str(py),
                    str(source)], check=True)
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()] or [sysconfig.get_paths()["purelib"]]
    (Path(purelib) / "zz_bench_deps.pth").write_text("\n".join(deps) + "\n")
    return venv


def _requests(base: str) -> float:
    import httpx

    total = 0.0
    for line in httpx.get(base + "/metrics", timeout=10).text.splitlines():
        if line.startswith("bli_memory_requests_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _start_service(url: str, port: int) -> subprocess.Popen[bytes]:
    import httpx

    env = {**os.environ, "BLI_MEMORY_DATABASE_URL": url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bli_memory.core.cli.main", "service", "--host", "127.0.0.1", "--port",
         str(port), "--log-level", "warning", "--no-jobs"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("the service did not become ready")
        time.sleep(0.2)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One run; returns the measurements (module docstring)."""
    from service_load import _free_port  # type: ignore[import-not-found]

    from bli_memory.core.memory.spaces import derive_space
    from bli_memory.core.team.client.remote import RemoteBackend
    from bli_memory.core.team.postgres.store import PostgresBackend
    from tests.core.team import pgserver

    work = Path(tempfile.mkdtemp(prefix="bli-hook-remote-"))
    inst = pgserver.acquire()
    proc = None
    try:
        revs = {"before": args.before, "after": args.after}
        venvs = {}
        for name, rev in revs.items():
            log(f"installing {name} ({rev or 'working tree'})")
            (work / name).mkdir()
            venvs[name] = _venv_for(rev, work / name)
        url = pgserver.create_database(inst, "bli_bench_hook_remote")
        admin = PostgresBackend(url, pool_size=2)
        _, token = admin.create_token("bench", "laptop")
        admin.close()
        port = _free_port()
        proc = _start_service(url, port)
        base = f"http://127.0.0.1:{port}"
        project = work / "project"
        project.mkdir()
        space = derive_space(project).tag
        client = RemoteBackend(base, token=token)
        rng = random.Random(7)
        for i in range(args.seed):
            client.save(_fact(rng, i), space=space)
        log(f"{args.seed} memories saved in {space}")

        home = work / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("BLI_MEMORY_", "XDG_", "VIRTUAL_ENV")) and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(HOME=str(home), BLI_MEMORY_DAEMON="0", BLI_MEMORY_DASHBOARD_URL=base,
                   BLI_MEMORY_DEVICE_TOKEN=token)

        def hook(name: str, prompt: str) -> tuple[float, float]:
            payload = json.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit",
                                  "cwd": str(project), "prompt": prompt}).encode()
            before = _requests(base)
            t0 = time.perf_counter()
            done = subprocess.run([str(venvs[name] / "bin" / "bli-memory-mcp"), "hook", "prompt"],
                                  input=payload, env=env, cwd=project, capture_output=True, check=False,
                                  timeout=60)
            ms = (time.perf_counter() - t0) * 1000
            if b"failed" in done.stderr:
                failures[name] += 1
                log(f"{name}: {done.stderr.decode(errors='replace').strip()[-300:]}")
            return ms, _requests(base) - before  # /metrics is not a door: not counted

        failures = dict.fromkeys(revs, 0)
        for name in revs:  # warm the page cache and the service
            hook(name, QUESTIONS[0])
        times: dict[str, list[float]] = {n: [] for n in revs}
        sent: dict[str, list[float]] = {n: [] for n in revs}
        for r in range(args.rounds):
            order = list(revs) if r % 2 == 0 else list(reversed(revs))
            for name in order:
                ms, n = hook(name, QUESTIONS[r % len(QUESTIONS)])
                times[name].append(ms)
                sent[name].append(n)
        log("hook runs done")

        calls: dict[str, list[float]] = {"three requests": [], "one recall request": []}
        for r in range(args.rounds * 2):
            q = QUESTIONS[r % len(QUESTIONS)]
            for name in (list(calls) if r % 2 == 0 else list(reversed(calls))):
                t0 = time.perf_counter()
                if name == "three requests":
                    client.search(q, space=space, limit=9)
                    client.term_frequencies(q, space=space)
                    client.space_background(space=space)
                else:
                    client.recall(q, space=space, limit=9)
                calls[name].append((time.perf_counter() - t0) * 1000)
        client.close()
        return {
            "machine": machine_description(),
            "seed": args.seed, "rounds": args.rounds,
            "revisions": {n: r or "working tree" for n, r in revs.items()},
            "hook": {n: {"p50_ms": percentile(v, 50), "p90_ms": percentile(v, 90),
                         "requests_per_prompt": sum(sent[n]) / len(sent[n]), "failed": failures[n]}
                     for n, v in times.items()},
            "gate_reads": {n: {"p50_ms": percentile(v, 50), "p90_ms": percentile(v, 90)}
                           for n, v in calls.items()},
        }
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
        pgserver.release(inst)
        if args.before:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(work / "before" / "tree")], check=False, capture_output=True)
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run, print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD~1", help="the revision measured first (git rev)")
    parser.add_argument("--after", default=None, help="the revision measured second (default: working tree)")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--seed", type=int, default=400)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "hook_remote.json")
    args = parser.parse_args(argv)
    out = run(args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n")
    for name, h in out["hook"].items():
        print(f"hook {name:7s} ({out['revisions'][name]}): p50 {h['p50_ms']:.0f} ms, "
              f"p90 {h['p90_ms']:.0f} ms, {h['requests_per_prompt']:.2f} requests per prompt")
    for name, g in out["gate_reads"].items():
        print(f"gate reads, {name}: p50 {g['p50_ms']:.1f} ms, p90 {g['p90_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
