"""What a skipped (trivial) prompt costs on the direct path: modules imported and time.

A trivial prompt (``ok``, ``continue``, ...) is answered ``skipped trivial_prompt``
from the payload alone, so the hook process should import no more than the adapter
that parses the payload. This spawns ``bli-memory-mcp hook prompt`` with
``BLI_MEMORY_DAEMON=0`` and a trivial payload on stdin, the way a host does, and
reports per variant: the modules loaded by the end of the run (``sys.modules``) and
spawn-to-exit wall time, with ``python -c pass``
as the floor. Variants run interleaved and shuffled within each round, so machine
load hits them alike.

``--baseline DIR`` adds a variant run from another source tree laid out as an
installed package (``DIR/bli_memory/core``, ``DIR/bli_memory/adapters``, ...), put
first on ``PYTHONPATH``; e.g. the previous commit::

    mkdir -p /tmp/before/bli_memory
    git archive HEAD~1 core adapters installers schemas | tar -x -C /tmp/before/bli_memory
    python bench/skip_imports.py --baseline /tmp/before --rounds 40

Results go to docs/benchmarks-hooks.md ("What a skipped prompt imports").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

PAYLOAD = json.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit",
                      "prompt": "ok", "cwd": "/"})


def _env(home: str, pythonpath: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BLI_MEMORY_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"HOME": home, "BLI_MEMORY_DAEMON": "0", "XDG_STATE_HOME": f"{home}/.state",
                "XDG_DATA_HOME": f"{home}/.data", "XDG_CONFIG_HOME": f"{home}/.config"})
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def _hook_cmd() -> list[str]:
    return [sys.executable, "-m", "bli_memory.core.cli.main", "hook", "prompt"]


#: The hook's own entry, then every module name in ``sys.modules`` on fd 3's file.
_COUNTING = (
    "import sys\n"
    "from bli_memory.core.cli.main import main\n"
    "rc = main(['hook', 'prompt'])\n"
    "open(sys.argv[1], 'w').write('\\n'.join(sorted(sys.modules)))\n"
)


def _imports(env: dict[str, str], out: str) -> tuple[int, list[str]]:
    """(modules loaded, our module names) at the end of one skipped-prompt run.

    Counted from ``sys.modules`` rather than ``-X importtime``, which does not log
    modules loaded through ``importlib.import_module`` (how plugins are loaded).
    """
    done = subprocess.run([sys.executable, "-c", _COUNTING, out], input=PAYLOAD, env=env,
                          capture_output=True, text=True, timeout=30, check=False)
    if "trivial_prompt" not in done.stderr:
        raise SystemExit(f"hook did not skip the prompt: {done.stderr[-400:]}")
    names = Path(out).read_text().split("\n")
    return len(names), [n for n in names if n.startswith("bli_memory")]


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, input=PAYLOAD, env=env, capture_output=True, text=True, timeout=30,
                   check=False)
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="source tree of the variant to compare against")
    args = parser.parse_args(argv)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).parents[1])],
                   check=False, capture_output=True)
    with tempfile.TemporaryDirectory() as home:
        variants = {"current": _env(home, None)}
        if args.baseline is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.baseline)],
                           check=False, capture_output=True)
            variants = {"baseline": _env(home, str(args.baseline)), **variants}
        walls: dict[str, list[float]] = {"bare": [], **{name: [] for name in variants}}
        imports: dict[str, tuple[int, list[str]]] = {
            name: _imports(env, f"{home}/modules.txt") for name, env in variants.items()}
        for _ in range(args.rounds):
            order = list(walls)
            random.shuffle(order)
            for name in order:
                if name == "bare":
                    walls[name].append(_wall([sys.executable, "-c", "pass"], variants["current"]))
                else:
                    walls[name].append(_wall(_hook_cmd(), variants[name]))
    floor = statistics.median(walls["bare"])
    print(f"rounds: {args.rounds}; load average {os.getloadavg()[0]:.1f}")
    print("| variant | modules loaded | of which ours | wall p50 ms | wall p90 ms | "
          "runs over 100 ms | p50 / bare |")
    print("|---|---|---|---|---|---|---|")
    for name, times in walls.items():
        ordered = sorted(times)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        over = sum(t > 100 for t in times)
        mods, ours = ("", "")
        if name in imports:
            mods, ours = str(imports[name][0]), str(len(imports[name][1]))
        print(f"| {name} | {mods} | {ours} | {statistics.median(times):.1f} | {p90:.1f} | "
              f"{over}/{len(times)} | {statistics.median(times) / floor:.2f}x |")
    for name, (_, ours_list) in imports.items():
        print(f"{name}: {' '.join(ours_list)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
