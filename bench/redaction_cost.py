#!/usr/bin/env python3
"""The cost of this tree's redaction rules against an older revision's, side by side.

    python bench/redaction_cost.py [REV]      # REV: default HEAD~1

The revision's ``core/memory/redaction/`` package is read with ``git show`` and imported
under another name (its imports of itself rewritten), so both rule tables run in one
process on the same inputs, interleaved round by round so that the machine's noise
falls on both: a 12 KB exchange mixing secrets and benign lines
(:func:`redaction.exchange`, the stop hook's bound), 12 KB of plain prose, and the
exchange's lines as a tool's JSON output (each an escaped string literal). Prints the
milliseconds per exchange of each, the same as CPU seconds per MB, and the ratio.

Then the first call in a fresh process, as a stop hook without the daemon makes it: the
median of :data:`STARTS` interpreters per side, alternating, each importing the package and
redacting one exchange (the vendor rule set's compiled cache warm, as after ``install``).
Writes bench/results/redaction_cost.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:0] = [str(REPO_ROOT), str(BENCH_DIR)]

from redaction import EXCHANGE_BYTES, exchange  # noqa: E402

from bli_memory.core.memory.redaction import redact  # noqa: E402

RESULTS = BENCH_DIR / "results" / "redaction_cost.json"
ROUNDS = 15
PER_ROUND = 4
PACKAGE = "core/memory/redaction"
PROSE = ("We decided to keep the port at 8443 for the staging proxy, and the password "
         "reset flow is broken until the vault migration lands next week. ")


def load_revision(rev: str, into: Path) -> object:
    """Import ``rev``'s redaction package as ``redaction_<rev>`` from a copy in ``into``."""
    name = "redaction_old"
    files = subprocess.run(["git", "ls-tree", "-r", "--name-only", f"{rev}:{PACKAGE}"], cwd=REPO_ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    (into / name).mkdir()
    for file in files:  # data files too (the recovery-phrase word list)
        text = subprocess.run(["git", "show", f"{rev}:{PACKAGE}/{file}"], cwd=REPO_ROOT,
                              capture_output=True, text=True, check=True).stdout
        (into / name / file).parent.mkdir(parents=True, exist_ok=True)
        (into / name / file).write_text(text.replace("bli_memory.core.memory.redaction", name))
    sys.path.insert(0, str(into))
    import importlib

    return importlib.import_module(name)


def main() -> None:
    if len(sys.argv) > 2 or sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD~1"
    with tempfile.TemporaryDirectory() as tmp:
        old = load_revision(rev, Path(tmp))
        from bli_memory.core.memory.redaction import DEFAULT_RULES

        lines = exchange().splitlines()
        tool = "\n".join(json.dumps({"stdout": "output:\n" + line + "\ndone"}) for line in lines)
        inputs = {"mixed": exchange(), "prose": (PROSE * (EXCHANGE_BYTES // len(PROSE) + 1))[:EXCHANGE_BYTES],
                  "tool output (JSON)": tool[:EXCHANGE_BYTES]}
        runs = {"this tree": (redact, DEFAULT_RULES), rev: (old.redact, old.DEFAULT_RULES)}  # type: ignore[attr-defined]
        spent = {(who, kind): 0.0 for who in runs for kind in inputs}
        for _ in range(ROUNDS):
            for kind, text in inputs.items():
                for who, (fn, rules) in runs.items():
                    started = time.perf_counter()
                    for _ in range(PER_ROUND):
                        fn(text, rules=rules)
                    spent[who, kind] += time.perf_counter() - started
        starts = _first_calls(rev, Path(tmp))
    n = ROUNDS * PER_ROUND
    out = {kind: {who: round(spent[who, kind] / n * 1000, 2) for who in runs} for kind in inputs}
    for kind, row in out.items():
        row["ratio"] = round(row["this tree"] / row[rev], 2)
        per_mb = {who: round(row[who] / 1000 * 1e6 / EXCHANGE_BYTES, 2) for who in runs}
        print(f"{kind}: this tree {row['this tree']} ms ({per_mb['this tree']} s/MB), "
              f"{rev} {row[rev]} ms ({per_mb[rev]} s/MB), {row['ratio']}x")
    print(f"first call in a fresh process (median of {STARTS}): this tree {starts['this tree']} ms, "
          f"{rev} {starts[rev]} ms")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"against": rev, "rounds": ROUNDS, "per_round": PER_ROUND,
                                   "ms_per_exchange": out, "first_call_ms": starts}, indent=2) + "\n")


STARTS = 7


def _first_calls(rev: str, copy: Path) -> dict[str, float]:
    """Median milliseconds of import + one redaction of the exchange in a fresh interpreter."""
    import statistics

    probe = ("import sys, time\nt = time.perf_counter()\nsys.path.insert(0, sys.argv[2])\n"
             "import importlib\nm = importlib.import_module(sys.argv[1])\n"
             "m.redact(sys.stdin.read())\nprint((time.perf_counter() - t) * 1000)\n")
    sides = {"this tree": "bli_memory.core.memory.redaction", rev: "redaction_old"}
    spent: dict[str, list[float]] = {who: [] for who in sides}
    for _ in range(STARTS + 1):  # the first round fills the rule cache; not counted
        for who, module in sides.items():
            done = subprocess.run([sys.executable, "-c", probe, module, str(copy)], input=exchange(),
                                  capture_output=True, text=True, check=True, cwd=REPO_ROOT)
            spent[who].append(float(done.stdout))
    return {who: round(statistics.median(times[1:]), 1) for who, times in spent.items()}


if __name__ == "__main__":
    main()
