#!/usr/bin/env python3
"""The shipped all-MiniLM-L6-v2 against all-mpnet-base-v2, side by side in one run (issue 23).

Each section runs once per model, the two back to back, so machine load hits them alike;
the model is switched the product's way (``BLI_MEMORY_EMBEDDER``, which the sections
read through ``common.bench_embedder`` and pass on to the processes they start):

- ``locomo``: LoCoMo on the import path (bench/locomo.py: every configuration);
- ``hook``: bench/hook.py on the same conversations: the tool path (``save_memory`` then
  ``search_memory`` over MCP, every turn and every question), ``save_memory`` through the
  MCP server, and what the prompt hook injects and injects wrongly, (a) another
  conversation's repository, (b) chat in code and code in chat, (c) code near misses;
  the prompts (not the saves) are sampled every ``--prompt-step``-th per condition;
- ``latency``: bench/hook_latency.py (hook spawn-to-exit via the daemon and direct,
  against a bare interpreter start; the daemon's and the MCP server's RSS);
- ``scale``: bench/scale.py at ``--scale-size`` memories: search p50 with the side
  indexes, save_memory per second, store import rows per second, the model's speed;
- always: model size on disk and the time a fresh process takes to load the model and
  embed one text (a first start).

Usage::

    python bench/models.py --mpnet DIR [--sections locomo,hook,latency,scale]
        [--prompt-step 3] [--scale-size 100000] [--pool 2000]

``DIR`` is a model folder from ``bli-memory-mcp model install mpnet`` or
``scripts/export_mpnet.py``. Writes bench/results/models.json and models.md (a partial
run keeps the other sections of the last one).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from common import CACHE_DIR, RESULTS_DIR, log, machine_description, markdown_table, write_json  # noqa: E402

SHIPPED = "all-MiniLM-L6-v2-int8"
SECTIONS = ("locomo", "hook", "latency", "scale")


def _use(spec: str) -> None:
    if spec == SHIPPED:
        os.environ.pop("BLI_MEMORY_EMBEDDER", None)
    else:
        os.environ["BLI_MEMORY_EMBEDDER"] = spec


def _folder(spec: str) -> Path:
    if spec == SHIPPED:
        from importlib import resources

        return Path(str(resources.files("bli_memory.core.model")))
    return Path(spec)


def first_start(spec: str) -> dict[str, float]:
    """A fresh interpreter: seconds to load the model and embed one text, and its RSS."""
    code = (
        "import resource, sys, time; sys.path.insert(0, sys.argv[1]); t0 = time.perf_counter()\n"
        "from common import bench_embedder\n"
        "e = bench_embedder(); t1 = time.perf_counter(); e.embed(['how do we deploy billing?'])\n"
        "t2 = time.perf_counter()\n"
        "print(t1 - t0, t2 - t1, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code, str(BENCH_DIR)], capture_output=True, text=True,
                             env=dict(os.environ), check=True).stdout.split()
        runs.append([float(x) for x in out])
    runs.sort()
    load_s, embed_s, rss = runs[1]
    return {"load_s": load_s, "first_embed_ms": embed_s * 1000, "peak_rss_mb": rss}


def disk_mb(spec: str) -> float:
    folder = _folder(spec)
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.suffix != ".py") / 1e6


def run_section(section: str, spec: str, args: argparse.Namespace, locomo_path: Path) -> dict[str, Any]:
    import locomo

    if section == "locomo":
        result = locomo.run(locomo_path)
        return {"systems": {k: v["overall"] for k, v in result["systems"].items()},
                "search_ms": result["search_ms"], "import_rows_per_s": result["import_rows_per_s"],
                "questions": result["questions"], "turns": result["turns"]}
    if section == "hook":
        import hook

        convs = locomo.load(locomo_path)
        result = hook.run(convs, calibrate=True, prompt_step=args.prompt_step)
        report = result["splits"]["report"]
        return {"mcp": {"overall": result["mcp"]["metrics"]["overall"], "save_ms": result["mcp"]["save_ms"],
                        "search_ms": result["mcp"]["search_ms"]},
                "report": report, "fitted": result["fitted"], "per_prompt_ms": result["per_prompt_ms"],
                "feature_sets": {k: v["report"] for k, v in result["feature_sets"].items()},
                "process": {k: result["process"][k] for k in ("n", "ms_p50", "daemon")}
                if result.get("process") else None}
    if section == "latency":
        out = CACHE_DIR / f"models-latency-{_folder(spec).name}.json"
        subprocess.run([sys.executable, str(BENCH_DIR / "hook_latency.py"), "--sizes", str(args.latency_size),
                        "--rounds", str(args.rounds), "--fast-rounds", str(args.fast_rounds),
                        "--mcp-runs", "3", "--json", str(out), "--markdown", str(out.with_suffix(".md"))],
                       check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)
        (row,) = json.loads(out.read_text())["results"]
        return {k: row[k] for k in ("size", "times", "ratio_p50", "daemon_rss_mb", "routes")} | {
            "mcp": {k: row["mcp"][k] for k in ("initialize", "first_search", "rss_mb")}}
    if section == "scale":
        import scale

        result = scale.run(sizes=[args.scale_size], pool=args.pool)
        (row,) = result["sizes"]
        return {"size": row["size"], "search": row["search"], "side_search": row["side"]["search"]
                if row.get("side") else None, "save_one": row["save_one"],
                "import_rows_per_s": row["import_rows_per_s"], "embed_per_s": result["embed_per_s"],
                "embed_one_ms": result["embed_one_ms"], "pool": result["pool"]}
    raise ValueError(section)


def render(results: dict[str, Any]) -> str:
    names = list(results["models"])
    per = results["models"]

    def get(name: str, *path: str) -> Any:
        node: Any = per[name]
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return node

    def row(label: str, *path: str, fmt: str = "{:.3f}", scale: float = 1.0) -> list[str]:
        cells = [label]
        for n in names:
            v = get(n, *path)
            cells.append("n/a" if v is None else fmt.format(v * scale))
        return cells

    def per_s(ms: float | None) -> float | None:
        return None if not ms else 1000 / ms

    hybrid = ("locomo", "systems", "hybrid (default)")
    rows = [
        row("LoCoMo import path: hybrid recall_any@5", *hybrid, "recall_any@5"),
        row("LoCoMo import path: hybrid recall_any@10", *hybrid, "recall_any@10"),
        row("LoCoMo import path: hybrid MRR@10", *hybrid, "mrr@10"),
        row("LoCoMo import path: vector only recall_any@5", "locomo", "systems", "vector only",
            "recall_any@5"),
        row("LoCoMo tool path (MCP): recall_any@5", "hook", "mcp", "overall", "recall_any@5"),
        row("LoCoMo tool path (MCP): recall_any@10", "hook", "mcp", "overall", "recall_any@10"),
        row("hook, own conversation: recall (evidence injected)", "hook", "report", "own", "hook",
            "hook_recall"),
        row("hook (a) other conversation: false injection", "hook", "report", "cross", "hook", "block_rate"),
        row("hook (b) chat question in code: false injection", "hook", "report", "chat_in_code", "hook",
            "block_rate"),
        row("hook (b) docstring in a conversation: false injection", "hook", "report", "code_in_chat", "hook",
            "block_rate"),
        row("hook (c) code near miss: false injection", "hook", "report", "code_near", "hook", "block_rate"),
        row("hook, own codebase: recall", "hook", "report", "code_own", "gate", "hook_recall"),
        row("gate refit on this model's calibration split: own conversation recall", "hook",
            "feature_sets", "v2", "own", "hook_recall"),
        row("gate refit: (a) other conversation", "hook", "feature_sets", "v2", "cross", "block_rate"),
        row("gate refit: (c) code near miss", "hook", "feature_sets", "v2", "code_near", "block_rate"),
        row("gate refit: own codebase recall", "hook", "feature_sets", "v2", "code_own", "hook_recall"),
    ]
    for n in names:
        tool = get(n, "hook", "mcp", "save_ms")
        per[n].setdefault("derived", {})["mcp_save_per_s"] = per_s(tool)
    rows += [
        row("save_memory over MCP, per s", "derived", "mcp_save_per_s", fmt="{:.1f}"),
        row("search_memory over MCP, ms mean", "hook", "mcp", "search_ms", fmt="{:.0f}"),
        row("hook via daemon, p50 ms", "latency", "times", "daemon", "p50", fmt="{:.0f}"),
        row("hook direct, p50 ms", "latency", "times", "direct", "p50", fmt="{:.0f}"),
        row("bare interpreter start, p50 ms", "latency", "times", "bare", "p50", fmt="{:.0f}"),
        row("hook via daemon / bare start (goal <= 3)", "latency", "ratio_p50", "daemon", fmt="{:.2f}"),
        row("hook direct / bare start", "latency", "ratio_p50", "direct", fmt="{:.1f}"),
        row("daemon RSS, MB", "latency", "daemon_rss_mb", fmt="{:.0f}"),
        row("MCP server RSS after first search, MB", "latency", "mcp", "rss_mb", fmt="{:.0f}"),
        row("MCP server spawn to first search answered, p50 ms", "latency", "mcp", "first_search", "p50",
            fmt="{:.0f}"),
        row("search p50 at scale size with side indexes, ms (goal <= 10)", "scale", "side_search", "p50_ms",
            fmt="{:.1f}"),
        row("search p50 at scale size, exact paths, ms", "scale", "search", "p50_ms", fmt="{:.1f}"),
        row("save_memory in process at scale size, per s", "scale", "save_one", "per_s", fmt="{:.0f}"),
        row("store import (vectors given), rows per s", "scale", "import_rows_per_s", fmt="{:.0f}"),
        row("model: texts per s, batched", "scale", "embed_per_s", fmt="{:.0f}"),
        row("model: one text, ms", "scale", "embed_one_ms", fmt="{:.1f}"),
        row("model folder on disk, MB", "disk_mb", fmt="{:.1f}"),
        row("fresh process: load the model, s", "first_start", "load_s", fmt="{:.2f}"),
        row("fresh process: peak RSS after one embed, MB", "first_start", "peak_rss_mb", fmt="{:.0f}"),
    ]
    machine = results["machine"]
    head = (f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; commit "
            f"{machine['commit']}; {machine['date']}. Command: `{results['command']}`.\n\n")
    return head + markdown_table(["figure", *names], rows) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mpnet", type=Path, required=True, help="the mpnet model folder")
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--locomo", type=Path,
                        default=BENCH_DIR.parent.parent / "shared" / "bench" / "locomo" / "locomo-dev.json")
    parser.add_argument("--prompt-step", type=int, default=3)
    parser.add_argument("--scale-size", type=int, default=100_000)
    parser.add_argument("--pool", type=int, default=2_000)
    parser.add_argument("--latency-size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--fast-rounds", type=int, default=30)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "models.json")
    parser.add_argument("--render-only", action="store_true", help="rewrite models.md from models.json")
    args = parser.parse_args(argv)
    if args.render_only:
        text = render(json.loads(args.json.read_text()))
        args.json.with_suffix(".md").write_text(text)
        print(text)
        return 0
    sections = [s for s in args.sections.split(",") if s]
    models = {"all-MiniLM-L6-v2": SHIPPED, "all-mpnet-base-v2": str(args.mpnet.resolve())}
    results: dict[str, Any] = json.loads(args.json.read_text()) if args.json.exists() else {}
    results.update({"machine": machine_description(), "command": "python bench/models.py " + " ".join(argv)})
    per = results.setdefault("models", {})
    for label, spec in models.items():
        _use(spec)
        per.setdefault(label, {}).update({"model": spec if spec == SHIPPED else Path(spec).name,
                                          "disk_mb": disk_mb(spec), "first_start": first_start(spec)})
    write_json(args.json, results)
    for section in sections:
        for label, spec in models.items():
            _use(spec)
            t0 = time.perf_counter()
            log(f"models: {section} with {label}")
            per[label][section] = run_section(section, spec, args, args.locomo)
            per[label].setdefault("seconds", {})[section] = time.perf_counter() - t0
            write_json(args.json, results)
    _use(SHIPPED)
    text = render(results)
    args.json.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
