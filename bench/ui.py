"""Page times of the memory browser (``bli-memory-mcp ui``) at 1k and 10k memories.

What a person waits for: an HTTP request to the real server process, through its guard
(Host, session cookie), to the last byte of the rendered page. Per size, in one run:

- the first page (``/``: the project's space, its newest 25 memories, every space with
  counts, the chart), its second page (``?before=``) and a memory page with history;
- a search (``/search?q=...``: the engine's hybrid search, as ``search_memory``), each
  request a different realistic question from ``bench/scale.py``;
- the first page and the first search right after the server printed its URL (the
  store opening and the model loading in the background), reported apart.

The store: ``size`` synthetic agent-style memories in the project's space plus 1,000 in
a second space, written as ``bench/hook_latency.py`` writes them (the store's own insert;
rows past a 2,000-text pool are two pool facts joined). The goal: first page and search
under 300 ms at 10k memories.

Usage (about 2 minutes on 2 cores)::

    python bench/ui.py [--sizes 1000,10000] [--rounds 30]
        [--json bench/results/ui.json] [--markdown bench/results/ui.md]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from common import RESULTS_DIR, log, machine_description, markdown_table, percentile

__all__ = ["main"]

BIN = str(Path(sys.executable).parent / "bli-memory-mcp")
GOAL_MS = 300


def _start(home: Path, project: Path) -> tuple[subprocess.Popen[str], str, float]:
    from hook_latency import clean_env

    env = clean_env(home)
    started = time.perf_counter()
    proc = subprocess.Popen([BIN, "ui", "--no-open"], cwd=project, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(120)
    if not line or not line[0].startswith("http://"):
        proc.kill()
        raise SystemExit("bli-memory-mcp ui printed no URL")
    return proc, line[0].strip(), (time.perf_counter() - started) * 1000


def _ms(client: Any, path: str, q: str | None = None) -> float:
    t = time.perf_counter()
    r = client.get(path, params={"q": q} if q is not None else None)
    elapsed = (time.perf_counter() - t) * 1000
    if r.status_code != 200:
        raise SystemExit(f"GET {path} answered {r.status_code}")
    return elapsed


def _summary(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50": round(percentile(ms, 50), 1), "p95": round(percentile(ms, 95), 1),
            "max": round(max(ms), 1)}


def run_size(size: int, rounds: int, queries: list[str]) -> dict[str, Any]:
    import httpx
    from hook_latency import populate

    with tempfile.TemporaryDirectory(prefix="bli-ui-bench-") as tmp:
        home, project, other = Path(tmp) / "home", Path(tmp) / "project", Path(tmp) / "other"
        for p in (home, project, other):
            p.mkdir()
        log(f"ui bench: writing {size} memories (+1000 in a second space)")
        populate(home, other, 1000)
        populate(home, project, size)
        proc, url, start_ms = _start(home, project)
        try:
            parts = urlsplit(url)
            with httpx.Client(base_url=f"{parts.scheme}://{parts.netloc}", timeout=60) as client:
                t = time.perf_counter()
                client.get("/?" + parts.query)  # token -> cookie -> first page
                first_page = (time.perf_counter() - t) * 1000
                first_search = _ms(client, "/search", queries[0])
                home_html = client.get("/").text
                before = re.search(r"before=(\d+)", home_html)
                memory_id = re.search(r'href="/memory/([0-9a-f-]{36})"', home_html)
                assert before and memory_id, "the first page has no Older link or memory link"
                out: dict[str, Any] = {"size": size, "start_to_url_ms": round(start_ms, 1),
                                       "first_page_cold_ms": round(first_page, 1),
                                       "first_search_cold_ms": round(first_search, 1)}
                pages: dict[str, list[float]] = {"first_page": [], "second_page": [], "memory": [],
                                                 "search": []}
                for i in range(rounds):  # interleaved, so load hits every page alike
                    pages["first_page"].append(_ms(client, "/"))
                    pages["second_page"].append(_ms(client, f"/?before={before.group(1)}"))
                    pages["memory"].append(_ms(client, f"/memory/{memory_id.group(1)}"))
                    pages["search"].append(_ms(client, "/search", queries[1 + i % (len(queries) - 1)]))
                out.update({name: _summary(ms) for name, ms in pages.items()})
                return out
        finally:
            proc.terminate()
            proc.wait(10)
            if proc.stdout:
                proc.stdout.close()


def to_markdown(results: list[dict[str, Any]], machine: dict[str, Any], command: str) -> str:
    rows = []
    for r in results:
        rows.append([f"{r['size']:,}", f"{r['first_page']['p50']} / {r['first_page']['p95']}",
                     f"{r['second_page']['p50']}", f"{r['memory']['p50']}",
                     f"{r['search']['p50']} / {r['search']['p95']}",
                     f"{r['first_page_cold_ms']} / {r['first_search_cold_ms']}"])
    table = markdown_table(["memories in the space", "first page p50 / p95 ms", "second page p50 ms",
                            "memory page p50 ms", "search p50 / p95 ms",
                            "right after start: first page / first search ms"], rows)
    goal = all(r["first_page"]["p95"] < GOAL_MS and r["search"]["p95"] < GOAL_MS
               for r in results if r["size"] >= 10_000)
    return (f"Run {machine['date']} on {machine['cpu']}; `{command}`; "
            f"{results[0]['first_page']['n']} requests of each page per size, interleaved.\n\n{table}\n\n"
            f"Goal (first page and search p95 under {GOAL_MS} ms at 10k): {'met' if goal else 'NOT met'}.\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/ui.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "ui.json")
    parser.add_argument("--markdown", type=Path, default=RESULTS_DIR / "ui.md")
    args = parser.parse_args(argv)
    from scale import make_queries

    queries = make_queries(args.rounds + 1)
    results = [run_size(int(s), args.rounds, queries) for s in args.sizes.split(",")]
    machine = machine_description()
    command = "python bench/ui.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": machine, "command": command, "results": results}, indent=2))
    text = to_markdown(results, machine, command.strip())
    args.markdown.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
