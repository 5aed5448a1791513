"""MCP sessions relayed to the daemon's MCP server against MCP servers in process, side by side.

A host starts one ``bli-memory-mcp`` per session. In process each one imports the MCP
SDK, opens the store and loads the model; as a relay (core/mcp/relay.py) each one is a
standard-library process that pipes its JSON-RPC lines to the one MCP server inside the
warm daemon (core/daemon/mcp_sessions.py). This measures, in one run, with the two
routes interleaved cold start by cold start in shuffled order so machine load hits them
alike:

- **cold start**: spawn of the console script to ``initialize`` answered, to the first
  ``search_memory`` answered, and ``initialize`` -> first search (the client sends the
  search as soon as ``initialize`` is answered, as hosts do);
- **RSS of one session process** after a save and a search (``VmRSS``, 1 s after the search);
- **a fleet**: five relays plus the daemon, against two and five servers in process,
  all alive at once, each after a save and a search;
- **why**: what importing the MCP SDK costs a process, against a bare interpreter and
  the relay's own imports (wall time and peak RSS of ``python -c``, interleaved).

The daemon is started once, before the runs, and is warm (the case of every session
after the first one of the day); its own cold start is bench/hook_latency.py's.
``--size`` memories of bench/scale.py's synthetic facts are in the project's space.

Usage (about 2-4 minutes on 2 cores)::

    python bench/mcp_daemon.py [--runs 6] [--size 2000]
        [--json bench/results/mcp_daemon.json] [--markdown bench/results/mcp_daemon.md]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import RESULTS_DIR, log, machine_description, markdown_table, write_json
from hook_latency import BIN, clean_env, compile_bytecode, populate

__all__ = ["main"]

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
QUESTIONS = ["which linter do we use?", "how do we deploy the billing service?",
             "where are the nightly backups written?", "what is the cache TTL?",
             "who reviews database migrations?", "which port does the API listen on?"]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """One MCP server process driven with raw JSON-RPC lines over its stdio."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([BIN], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self._id = 0

    def send(self, method: str, params: dict[str, Any] | None = None) -> None:
        assert self.proc.stdin
        self._id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            msg["params"] = params
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        assert self.proc.stdout
        return json.loads(self.proc.stdout.readline())

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send(method, params)
        return self.reply()

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.rpc("tools/call", {"name": name, "arguments": arguments})["result"]
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        return result  # type: ignore[no-any-return]

    def initialise(self) -> float:
        self.rpc("initialize", INIT)
        at = time.perf_counter()
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.proc.stdin.flush()
        return at

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def cold_start(env: dict[str, str], cwd: Path, question: str) -> dict[str, float]:
    """Spawn -> initialize -> first search -> a save -> RSS, for one server."""
    s = Server(env, cwd)
    init_at = s.initialise()
    result = s.tool("search_memory", query=question)
    search_at = time.perf_counter()
    via = s.tool("memory_info")["structuredContent"]["via"]
    s.tool("save_memory", content=f"Bench note {random.random():.6f}: {question}")
    time.sleep(1.0)
    rss = _rss_mb(s.proc.pid)
    s.close()
    return {"init_ms": (init_at - s.started) * 1000, "search_ms": (search_at - s.started) * 1000,
            "init_to_search_ms": (search_at - init_at) * 1000, "rss_mb": rss,
            "hits": result["structuredContent"]["count"], "via": via}


def fleet(env: dict[str, str], cwd: Path, n: int) -> list[float]:
    """RSS of ``n`` servers alive at once, each after a search and a save."""
    servers = [Server(env, cwd) for _ in range(n)]
    for i, s in enumerate(servers):
        s.initialise()
        s.tool("search_memory", query=QUESTIONS[i % len(QUESTIONS)])
        s.tool("save_memory", content=f"Fleet note {i} {random.random():.6f}")
    time.sleep(1.0)
    sizes = [_rss_mb(s.proc.pid) for s in servers]
    for s in servers:
        s.close()
    return sizes


IMPORTS = {"bare interpreter": "pass", "the relay's imports": "import bli_memory.core.mcp.relay",
           "import mcp.types": "import mcp.types",
           "the in-process server's imports": "import bli_memory.core.mcp.server"}


def import_costs(rounds: int) -> dict[str, dict[str, float]]:
    """Median wall ms and RSS MB (``VmRSS`` once imported) of ``python -c <import>``, per
    entry of :data:`IMPORTS`, interleaved in shuffled order."""
    report = ("\nimport sys\n"
              "sys.stdout.write([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0])")
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in IMPORTS}
    for _ in range(rounds):
        order = list(IMPORTS)
        random.shuffle(order)
        for name in order:
            started = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", IMPORTS[name] + report], check=True,
                                 capture_output=True, text=True).stdout
            samples[name].append(((time.perf_counter() - started) * 1000, int(out.split()[1]) / 1024))
    return {name: {"ms": statistics.median(x[0] for x in xs), "rss_mb": statistics.median(x[1] for x in xs)}
            for name, xs in samples.items()}


def _start_daemon(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    from bli_memory.core.hooks import daemon_client
    from bli_memory.core.paths import daemon_socket_path

    proc = subprocess.Popen([BIN, "daemon"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    sock = daemon_socket_path(env)
    give_up = time.monotonic() + 120
    while time.monotonic() < give_up:
        try:
            if daemon_client.ping(sock).get("ready"):
                return proc, proc.pid
        except daemon_client.DaemonUnavailable:
            pass
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the daemon did not become ready")


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/mcp_daemon.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6, help="cold starts per route")
    parser.add_argument("--size", type=int, default=2000, help="memories in the project's space")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "mcp_daemon.json")
    parser.add_argument("--markdown", type=Path, default=RESULTS_DIR / "mcp_daemon.md")
    args = parser.parse_args(argv)
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="bli-mcpd-") as tmp:
        home = Path(tmp) / "home"
        project = Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        log(f"populating {args.size} memories")
        populate(home, project, args.size)
        base = clean_env(home)
        envs = {"in-process": {**base, "BLI_MEMORY_DAEMON": "0"},
                "daemon": {**base, "BLI_MEMORY_DAEMON": "1"}}
        daemon, daemon_pid = _start_daemon(envs["daemon"])
        try:
            rows: dict[str, list[dict[str, float]]] = {"in-process": [], "daemon": []}
            for r in range(args.runs):
                order = list(rows)
                random.shuffle(order)
                for route in order:
                    rows[route].append(cold_start(envs[route], project, QUESTIONS[r % len(QUESTIONS)]))
                log(f"cold start round {r + 1}/{args.runs}")
            wrong = [row["via"] for route, rs in rows.items() for row in rs if row["via"] != route]
            if wrong:
                raise SystemExit(f"a server answered on another route than asked: {wrong}")
            five = fleet(envs["daemon"], project, 5)
            daemon_rss = _rss_mb(daemon_pid)
            two = fleet(envs["in-process"], project, 2)
            five_local = fleet(envs["in-process"], project, 5)
            log("fleets measured")
            imports = import_costs(args.runs)
            log("import costs measured")
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
    summary = {
        route: {key: _median(rs, key) for key in ("init_ms", "search_ms", "init_to_search_ms", "rss_mb")}
        for route, rs in rows.items()
    }
    ratio = {key: summary["in-process"][key] / summary["daemon"][key]
             for key in ("init_ms", "search_ms", "init_to_search_ms", "rss_mb")}
    result = {
        "machine": machine_description(), "runs": args.runs, "size": args.size, "rows": rows,
        "median": summary, "in_process_over_daemon": ratio,
        "fleet": {"relays_mb": five, "daemon_mb": daemon_rss,
                  "relays_total_mb": sum(five) + daemon_rss, "in_process_servers_mb": two,
                  "in_process_total_mb": sum(two), "five_in_process_servers_mb": five_local,
                  "five_in_process_total_mb": sum(five_local)},
        "imports": imports,
    }
    write_json(args.json, result)
    table = markdown_table(
        ["", "in process", "relay to the daemon", "in process / relay"],
        [["spawn -> initialize answered (ms)", summary["in-process"]["init_ms"], summary["daemon"]["init_ms"],
          ratio["init_ms"]],
         ["initialize -> first search answered (ms)", summary["in-process"]["init_to_search_ms"],
          summary["daemon"]["init_to_search_ms"], ratio["init_to_search_ms"]],
         ["spawn -> first search answered (ms)", summary["in-process"]["search_ms"],
          summary["daemon"]["search_ms"], ratio["search_ms"]],
         ["RSS of one session process (MB)", summary["in-process"]["rss_mb"], summary["daemon"]["rss_mb"],
          ratio["rss_mb"]]],
    )
    fleet_table = markdown_table(
        ["fleet", "servers (MB each)", "daemon (MB)", "total (MB)"],
        [["5 relays + the daemon", " / ".join(f"{x:.0f}" for x in five), daemon_rss,
          sum(five) + daemon_rss],
         ["2 servers in process", " / ".join(f"{x:.0f}" for x in two), "-", sum(two)],
         ["5 servers in process", " / ".join(f"{x:.0f}" for x in five_local), "-", sum(five_local)]],
    )
    import_table = markdown_table(["python -c", "wall (ms)", "RSS once imported (MB)"],
                                  [[name, c["ms"], c["rss_mb"]] for name, c in imports.items()])
    text = (f"Medians of {args.runs} cold starts per route, interleaved; {args.size} memories; "
            f"{machine_description()}.\n\n{table}\n\n{fleet_table}\n\n{import_table}\n")
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
