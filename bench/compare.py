"""Two revisions side by side in one run: hook latency, search latency and LoCoMo recall.

    python bench/compare.py --old c6677e1 [--rounds 20] [--size 1000] [--searches 200]
        [--skip-locomo] [--json bench/results/compare.json] [--markdown bench/results/compare.md]

A change that reshapes the code (a restructure, a dependency swap) must leave what users
feel unchanged, and on a noisy machine "unchanged" is only visible side by side. The old
revision is checked out as a git worktree under ``bench/results/cache/rev-<sha>/tree`` with
a virtualenv of its own (``pip install -e .``, kept for the next run); the new revision is
this checkout with the interpreter running this script. Every figure is measured by each
revision's own code: its own ``bench/hook_latency.py`` populates its store, its own engine
answers searches, its own ``bench/locomo.py`` scores LoCoMo. Nothing of one revision runs
the other's code.

- **Hook latency**: ``bli-memory-mcp hook prompt`` spawn to exit, via each revision's warm
  daemon and direct (``BLI_MEMORY_DAEMON=0``), beside ``python -c pass`` (the floor). The
  kinds and the revisions are interleaved round by round, in shuffled order, so machine
  load hits them alike. ``--size`` memories of ``bench/scale.py``'s synthetic facts.
- **Search latency**: ``search`` of the embedded backend in one process per revision over
  the same store contents, in alternating chunks.
- **LoCoMo recall**: the default ranking on the dev split, import path (embeddings cached
  and shared, since both revisions embed with the same model file).
"""

from __future__ import annotations

import argparse
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

from common import CACHE_DIR, REPO_ROOT, RESULTS_DIR, log, machine_description, markdown_table, percentile
from hook_latency import clean_env, compile_bytecode, receipt, timed

__all__ = ["main"]

LOCOMO = REPO_ROOT.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"
QUERIES = [
    "how do we run the test suite here?", "which port does the dev server use?",
    "what did we decide about the database migrations?", "where do the build artifacts go?",
    "how is the release tagged and published?", "which python version does the project need?",
    "what is the convention for commit messages?", "how do I reset the local cache?",
]

# Run in a revision's interpreter, from its tree: populate a store with its own bench code.
_POPULATE = """
import sys; sys.path.insert(0, 'bench')
from pathlib import Path
from hook_latency import populate
print(populate(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])))
"""
# ... and time searches of its own embedded backend (module path found either layout).
_SEARCH = """
import json, sys, time
try:
    from bli_memory.core.embedded.engine import EmbeddedBackend
except ImportError:
    from bli_memory.core.engine import EmbeddedBackend
from pathlib import Path
backend = EmbeddedBackend(Path(sys.argv[4]))
space, queries, n = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
backend.search(queries[0], space=space)
ms = []
for i in range(n):
    t0 = time.perf_counter()
    backend.search(queries[i % len(queries)], space=space, limit=5)
    ms.append((time.perf_counter() - t0) * 1000)
print(json.dumps(ms))
"""
_LOCOMO = """
import json, sys; sys.path.insert(0, 'bench')
from pathlib import Path
import locomo
base = locomo.search_configs()["hybrid (default)"]
out = locomo.run(Path(sys.argv[1]), configs={"hybrid (default)": base}, progress=lambda m: None)
print(json.dumps(out["systems"]["hybrid (default)"]["overall"]))
"""


class Revision:
    """One side of the comparison: a tree, its interpreter and its scratch home."""

    def __init__(self, label: str, tree: Path, python: Path) -> None:
        self.label, self.tree, self.python = label, tree, python
        self.bin = str(python.parent / "bli-memory-mcp")
        self.home = Path(tempfile.mkdtemp(prefix=f"bli-compare-{label}-"))
        self.project = self.home / "project"
        self.project.mkdir()
        self.env = clean_env(self.home)
        self.space = ""
        self.daemon: subprocess.Popen[bytes] | None = None

    def run(self, code: str, *args: str, timeout: float = 3600) -> str:
        done = subprocess.run([str(self.python), "-c", code, *args], cwd=self.tree, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise SystemExit(f"{self.label}: {done.stderr[-2000:]}")
        return done.stdout.strip().splitlines()[-1]

    def start_daemon(self) -> None:
        self.daemon = subprocess.Popen([self.bin, "daemon"], env=self.env, cwd=self.project,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        give_up = time.monotonic() + 180
        probe = json.dumps({"prompt": "warm up the daemon please", "cwd": str(self.project),
                            "hook_event_name": "UserPromptSubmit", "session_id": "warm"}).encode()
        while time.monotonic() < give_up:
            _, err = timed([self.bin, "hook", "prompt"], {**self.env, "BLI_MEMORY_DAEMON": "1"},
                           self.project, probe)
            if receipt(err).get("via") == "daemon":
                return
            time.sleep(0.5)
        raise SystemExit(f"{self.label}: the daemon did not answer")

    def close(self) -> None:
        if self.daemon is not None:
            self.daemon.terminate()
            self.daemon.wait(timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


def old_revision(rev: str) -> Revision:
    """Check out ``rev`` beside the cache and give it a virtualenv (kept between runs)."""
    sha = subprocess.run(["git", "rev-parse", "--short=12", rev], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True).stdout.strip()
    root = CACHE_DIR / f"rev-{sha}"
    tree, venv = root / "tree", root / "venv"
    if not tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=REPO_ROOT, check=True,
                       capture_output=True)
    # The LoCoMo file is found beside the checkout (../shared): point the old tree at ours.
    shared = tree.parent / "shared"
    if not shared.exists():
        shared.symlink_to(REPO_ROOT.parent / "shared")
    # Both revisions embed with the same shipped model: share the embedding cache.
    cache = tree / "bench" / "results" / "cache"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.symlink_to(CACHE_DIR, target_is_directory=True)
    python = venv / "bin" / "python"
    if not python.exists():
        log(f"compare: installing {sha} into {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", f"{tree}[scale]"], check=True)
    subprocess.run([str(python), "-m", "compileall", "-q", "core", "adapters", "installers"], cwd=tree,
                   check=False, stdout=subprocess.DEVNULL)
    return Revision(f"old {sha}", tree, python)


def hook_rounds(revs: list[Revision], rounds: int, seed: int = 7) -> dict[str, dict[str, list[float]]]:
    """Spawn-to-exit ms per revision and kind (bare, daemon, direct), interleaved."""
    times: dict[str, dict[str, list[float]]] = {
        r.label: {"bare": [], "daemon": [], "direct": []} for r in revs
    }
    rng = random.Random(seed)
    for n in range(rounds):
        plan = [(r, kind) for r in revs for kind in ("bare", "daemon", "direct")]
        rng.shuffle(plan)
        for r, kind in plan:
            payload = json.dumps({"session_id": f"bench-{n}-{kind}", "hook_event_name": "UserPromptSubmit",
                                  "cwd": str(r.project), "prompt": QUERIES[n % len(QUERIES)]}).encode()
            if kind == "bare":
                ms, _ = timed([str(r.python), "-c", "pass"], r.env, r.project, payload)
            else:
                env = {**r.env, "BLI_MEMORY_DAEMON": "1" if kind == "daemon" else "0"}
                ms, err = timed([r.bin, "hook", "prompt"], env, r.project, payload)
                if receipt(err).get("outcome") not in ("ok", "skipped"):
                    log(f"compare: {r.label} {kind}: {err.strip()[-200:]}")
            times[r.label][kind].append(ms)
        if n % 5 == 0:
            log(f"compare: hook round {n + 1}/{rounds}")
    return times


def search_rounds(revs: list[Revision], searches: int, chunks: int = 4) -> dict[str, list[float]]:
    """In-process search ms per revision, in alternating chunks of ``searches / chunks``."""
    out: dict[str, list[float]] = {r.label: [] for r in revs}
    for _ in range(chunks):
        for r in revs:
            store = str(r.home / ".local/share/bli-memory/memory.sqlite3")
            per_chunk = str(searches // chunks)
            out[r.label] += json.loads(r.run(_SEARCH, r.space, json.dumps(QUERIES), per_chunk, store))
    return out


def stats(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50": percentile(ms, 50), "p95": percentile(ms, 95)}


def to_markdown(result: dict[str, Any]) -> str:
    labels = list(result["hook"])
    rows = []
    for kind in ("bare", "daemon", "direct"):
        rows.append([f"hook {kind} p50 ms"] + [result["hook"][lb][kind]["p50"] for lb in labels])
        rows.append([f"hook {kind} p95 ms"] + [result["hook"][lb][kind]["p95"] for lb in labels])
    for kind in ("daemon", "direct"):
        rows.append([f"hook {kind} / bare (p50)"] + [result["hook"][lb][kind]["p50"] /
                                                    result["hook"][lb]["bare"]["p50"] for lb in labels])
    rows.append(["search p50 ms"] + [result["search"][lb]["p50"] for lb in labels])
    rows.append(["search p95 ms"] + [result["search"][lb]["p95"] for lb in labels])
    for metric in ("recall_any@5", "recall_any@10", "mrr@10"):
        if result.get("locomo"):
            rows.append([f"LoCoMo dev {metric}"] + [result["locomo"][lb].get(metric, float("nan"))
                                                    for lb in labels])
    head = (f"Generated by `{result['command']}` on {result['machine']['date']}, "
            f"{result['size']} memories.\n\n")
    return head + markdown_table(["figure"] + labels, rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="the revision to compare against (a commit)")
    parser.add_argument("--rounds", type=int, default=20, help="interleaved hook rounds")
    parser.add_argument("--size", type=int, default=1000, help="memories in the hook/search space")
    parser.add_argument("--searches", type=int, default=200, help="searches per revision")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "compare.json")
    parser.add_argument("--markdown", type=Path, default=RESULTS_DIR / "compare.md")
    args = parser.parse_args(argv)
    compile_bytecode()
    new_label = "new " + subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT,
                                        capture_output=True, text=True).stdout.strip()
    revs = [old_revision(args.old), Revision(new_label, REPO_ROOT, Path(sys.executable))]
    try:
        for r in revs:
            r.space = r.run(_POPULATE, str(r.home), str(r.project), str(args.size))
            r.start_daemon()
            log(f"compare: {r.label}: {args.size} memories, daemon up")
        hook = hook_rounds(revs, args.rounds)
        search = search_rounds(revs, args.searches)
        locomo: dict[str, Any] = {}
        if not args.skip_locomo and LOCOMO.exists():
            for r in revs:
                locomo[r.label] = json.loads(r.run(_LOCOMO, str(LOCOMO)))
                log(f"compare: {r.label}: LoCoMo recall_any@5 {locomo[r.label]['recall_any@5']:.3f}")
    finally:
        for r in revs:
            r.close()
    result = {
        "command": "python bench/compare.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_description(), "size": args.size,
        "hook": {lb: {k: stats(v) for k, v in kinds.items()} for lb, kinds in hook.items()},
        "search": {lb: stats(v) for lb, v in search.items()},
        "locomo": locomo, "raw": {"hook": hook, "search": search},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    text = to_markdown(result)
    args.markdown.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.exit(main())
