"""The ``hook`` section: what automatic injection gives, and what it gives wrongly.

Protocol (issue "Automatic recall the agent can trust"):

- Memories arrive through the public tool path (:mod:`locomo_mcp`): each LoCoMo
  conversation is saved with ``save_memory`` from its own git repository, and two
  codebases of the same kind are saved the same way: the standard library's docstrings
  split into two disjoint groups of modules (:mod:`noise`), one repository each.
- Every prompt goes through :func:`bli_memory.core.hook_events.answer_hook`, the
  function the resident daemon runs for each hook request (and the hook process on its
  direct path), with the real Claude Code adapter, a payload whose ``cwd`` is the
  repository and a fresh session id per prompt (so per-session dedup does not help).
  The daemon's socket and process start are left out: they change latency, not the block.
- Conditions: ``own`` (each question in its own conversation's repository: hook recall
  is "an evidence turn is in the injected block"), and the false-injection conditions
  (a) ``cross``: the same question in the next conversation's repository; (b)
  ``chat_in_code`` / ``code_in_chat``: questions in a codebase repository, docstring
  first lines in a conversation repository; (c) ``code_near``: first lines of one
  group's docstrings in the other group's repository.
- Reported per condition: block rate, mean injected lines and characters per prompt,
  and for ``own`` the hook recall; for the gate (``core/relevance.py``) and for the
  previous rule (cosine floor 0.35 or an exact keyword hit, top 5) side by side.
- Calibration split: LoCoMo dev conversations 1-3 and the docstring prompts whose
  module hashes even; report split: conversations 4-6 and the other docstrings (the
  full-dev numbers are shown too). ``--calibrate`` fits the gate's logistic weights and
  threshold on the calibration split only and prints them.
- One more pass types all questions of a conversation in one session, to show what
  per-session dedup saves.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import CACHE_DIR, RESULTS_DIR, log, markdown_table, write_json

__all__ = ["render", "run"]

DEFAULT_LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo-dev.json"
OLD_FLOOR = 0.35
OLD_LIMIT = 5


@dataclass
class Prompt:
    cond: str
    text: str
    repo: str
    calibration: bool
    evidence: frozenset[str] = frozenset()
    # filled by the run
    top: float | None = None
    unseen: float = 0.0
    exact: bool = False
    gated: list[str] = field(default_factory=list)  # dia ids the gate would inject at any threshold
    old: list[str] = field(default_factory=list)  # dia ids the previous rule injects
    old_chars: int = 0
    gated_chars: int = 0
    hook_ids: list[str] = field(default_factory=list)  # dia ids in the real hook's block
    hook_chars: int = 0
    hook_lines: int = 0


def _half(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] % 2 == 0


def prompts(
    conversations: Sequence[Any], groups: tuple[list[Any], list[Any]], repos: dict[str, str]
) -> list[Prompt]:
    """Every prompt of every condition, with its split."""
    out: list[Prompt] = []
    ids = [c.sample_id for c in conversations]
    for i, c in enumerate(conversations):
        cal = i < len(conversations) // 2
        other = ids[(i + 1) % len(ids)]
        code = "stdlib-a" if i % 2 else "stdlib-b"
        for q in c.questions:
            out.append(Prompt("own", q.text, repos[c.sample_id], cal, q.evidence))
            out.append(Prompt("cross", q.text, repos[other], cal))
            out.append(Prompt("chat_in_code", q.text, repos[code], cal))
    a, b = groups
    for j, d in enumerate([*a, *b]):
        mine, theirs = ("stdlib-a", "stdlib-b") if j < len(a) else ("stdlib-b", "stdlib-a")
        cal = _half(d.name)
        out.append(Prompt("code_near", d.first_line, repos[theirs], cal))
        out.append(Prompt("code_in_chat", d.first_line, repos[ids[j % len(ids)]], cal))
        del mine
    return out


def _features(backend: Any, space: str, p: Prompt, dia: dict[str, str]) -> None:
    """Fill the gate's evidence and both rules' choices for one prompt (no session state)."""
    from bli_memory.core.blocks import recall_block
    from bli_memory.core.relevance import decide, unseen_share

    res = backend.search(p.text, space=space, limit=OLD_LIMIT * 3)
    present, size = backend.term_presence(p.text, space=space)
    p.unseen = unseen_share(present, size)
    import bli_memory.core.relevance as rel

    saved = rel.GATE_THRESHOLD
    rel.GATE_THRESHOLD = -math.inf
    try:
        d = decide(res.hits, unseen=p.unseen, limit=OLD_LIMIT, prompt=p.text, floor=OLD_FLOOR)
    finally:
        rel.GATE_THRESHOLD = saved
    p.top = d.top
    p.exact = d.reason == "exact_keyword"
    p.gated = [dia.get(h.memory.id, "") for h in d.inject]
    block = recall_block(d.inject, space=res.space, budget=6000, session_known=True)
    p.gated_chars = len(block or "")
    old = [h for h in res.hits if h.exact_keyword or (h.similarity is not None and h.similarity >= OLD_FLOOR)]
    old = old[:OLD_LIMIT]
    p.old = [dia.get(h.memory.id, "") for h in old]
    p.old_chars = len(recall_block(old, space=res.space, budget=6000, session_known=True) or "")


def _hook(pm: Any, context: Any, p: Prompt, session: str, dia: dict[str, str]) -> None:
    """Run the real hook function for one prompt and read its block."""
    import json
    import re

    from bli_memory.core.hook_events import answer_hook

    payload = {
        "session_id": session,
        "cwd": p.repo,
        "hook_event_name": "UserPromptSubmit",
        "prompt": p.text,
        "transcript_path": "/nonexistent",
    }
    ans = answer_hook(pm, host="claude", event="prompt", payload=payload, context=context, cwd=p.repo)
    if ans.outcome != "ok" or not ans.stdout:
        return
    block = json.loads(ans.stdout)["hookSpecificOutput"]["additionalContext"]
    ids = re.findall(r"id ([0-9a-f-]{36})\)", block)
    p.hook_ids = [dia.get(i, "") for i in ids]
    p.hook_chars = len(block)
    p.hook_lines = len(ids)


def gate_pass(p: Prompt, weights: Sequence[float], threshold: float) -> bool:
    if p.exact:
        return True
    if p.top is None:
        return False
    b, wt, wu = weights
    return b + wt * p.top + wu * p.unseen >= threshold


def fit(cal: Sequence[Prompt]) -> tuple[tuple[float, float, float], float]:
    """Logistic weights on the calibration prompts (classes weighted equally), and the
    smallest threshold keeping cross-conversation false injection at or below 0.05."""
    import numpy as np

    rows = [p for p in cal if p.top is not None and not p.exact]
    conds = sorted({p.cond for p in rows})
    count = {c: sum(1 for p in rows if p.cond == c) for c in conds}
    negs = [c for c in conds if c != "own"]
    X = np.array([[1.0, p.top, p.unseen] for p in rows])
    y = np.array([1.0 if p.cond == "own" else 0.0 for p in rows])
    w8 = np.array([0.5 / count["own"] if p.cond == "own" else 0.5 / len(negs) / count[p.cond] for p in rows])
    w = np.zeros(3)
    for _ in range(60):  # Newton's method, a little L2 for stability
        pr = 1 / (1 + np.exp(-X @ w))
        g = X.T @ ((pr - y) * w8) + 1e-4 * w
        h = (X * (pr * (1 - pr) * w8)[:, None]).T @ X + 1e-4 * np.eye(3)
        w -= np.linalg.solve(h, g)
    weights = (round(float(w[0]), 3), round(float(w[1]), 3), round(float(w[2]), 3))
    cross = [p for p in cal if p.cond == "cross"]
    best = 0.0
    for t in np.arange(-3.0, 4.0, 0.05):
        if sum(gate_pass(p, weights, t) for p in cross) / len(cross) <= 0.05:
            best = round(float(t), 2)
            break
    return weights, best


def _rates(ps: Sequence[Prompt], kind: str, weights: Sequence[float] | None = None, t: float = 0.0) -> dict:
    """Block rate, lines, chars and (own) recall of one rule over prompts."""
    n = len(ps)
    if not n:
        return {"n": 0}
    if kind == "hook":
        inj = [p.hook_ids for p in ps]
        chars = [p.hook_chars for p in ps]
    elif kind == "old":
        inj = [p.old for p in ps]
        chars = [p.old_chars for p in ps]
    else:
        inj = [p.gated if gate_pass(p, weights, t) else [] for p in ps]
        chars = [p.gated_chars if ids else 0 for p, ids in zip(ps, inj, strict=True)]
    out = {
        "n": n,
        "block_rate": sum(1 for i in inj if i) / n,
        "lines": sum(len(i) for i in inj) / n,
        "chars": sum(chars) / n,
    }
    if ps[0].cond == "own":
        out["hook_recall"] = sum(1 for p, i in zip(ps, inj, strict=True) if set(i) & p.evidence) / n
    return out


CONDS = ("own", "cross", "chat_in_code", "code_in_chat", "code_near")


def run(conversations: Sequence[Any], *, calibrate: bool = False, quick: bool = False) -> dict[str, Any]:
    """Build the spaces over MCP, run every prompt, and summarise (see the module doc)."""
    import locomo_mcp
    import noise

    from bli_memory.core.contracts import get_plugin_manager
    from bli_memory.core.engine import EmbeddedBackend
    from bli_memory.core.hook_events import HookContext
    from bli_memory.core.relevance import GATE_THRESHOLD, GATE_WEIGHTS

    home = locomo_mcp.BenchHome(CACHE_DIR / ("hook-quick" if quick else "hook"))
    mcp = locomo_mcp.run(conversations, home)
    a, b = noise.split_groups(noise.stdlib_docstrings())
    if quick:
        a, b = a[:120], b[:120]
    repos = dict(mcp["repos"])
    spaces = dict(mcp["spaces"])
    for name, group in (("stdlib-a", a), ("stdlib-b", b)):
        repo = locomo_mcp.make_repo(home.root, name)
        repos[name] = str(repo)
        spaces[name] = locomo_mcp.save_all(
            home, repo, [d.paragraph for d in group], [{"name": d.name} for d in group]
        )
        log(f"hook: saved {name} ({len(group)} docstrings) into {spaces[name]}")
    home.apply()
    backend = EmbeddedBackend(Path(home.env["BLI_MEMORY_DATA_DIR"]) / "memory.sqlite3")
    dia: dict[str, str] = {}
    import json
    import sqlite3

    conn = sqlite3.connect(Path(home.env["BLI_MEMORY_DATA_DIR"]) / "memory.sqlite3")
    for id_, meta in conn.execute("SELECT id, metadata FROM memories"):
        m = json.loads(meta or "{}")
        dia[id_] = m.get("dia_id") or m.get("name") or ""
    conn.close()
    space_of_repo = {repos[k]: spaces[k] for k in repos}
    pm = get_plugin_manager(host="claude")
    ctx = HookContext.build(pm)
    all_prompts = prompts(conversations, (a, b), repos)
    t0 = time.perf_counter()
    for n, p in enumerate(all_prompts):
        _features(backend, space_of_repo[p.repo], p, dia)
        _hook(pm, lambda: ctx, p, f"bench-{uuid.uuid4()}", dia)
        if n % 1000 == 999:
            log(f"hook: {n + 1}/{len(all_prompts)} prompts")
    per_prompt_ms = (time.perf_counter() - t0) * 1000 / max(len(all_prompts), 1)
    # One session per conversation: what per-session dedup saves.
    own = [p for p in all_prompts if p.cond == "own"]
    session_runs = []
    by_repo: dict[str, str] = {}
    given: dict[str, set[str]] = {}
    for p in own:
        q = Prompt(p.cond, p.text, p.repo, p.calibration, p.evidence)
        _hook(pm, lambda: ctx, q, by_repo.setdefault(p.repo, f"bench-session-{uuid.uuid4()}"), dia)
        earlier = given.setdefault(p.repo, set())
        q.evidence_given_earlier = bool(earlier & p.evidence)  # type: ignore[attr-defined]
        earlier.update(q.hook_ids)
        session_runs.append(q)
    cal = [p for p in all_prompts if p.calibration]
    fitted = fit(cal) if calibrate else None
    weights, threshold = GATE_WEIGHTS, GATE_THRESHOLD
    result: dict[str, Any] = {
        "weights": list(weights),
        "threshold": threshold,
        "fitted": [list(fitted[0]), fitted[1]] if fitted else None,
        "mcp": {k: mcp[k] for k in ("metrics", "save_ms", "search_ms")},
        "per_prompt_ms": per_prompt_ms,
        "splits": {},
    }
    for split, sel in (
        ("report", lambda p: not p.calibration),
        ("calibration", lambda p: p.calibration),
        ("all", lambda p: True),
    ):
        rows = {}
        for c in CONDS:
            ps = [p for p in all_prompts if p.cond == c and sel(p)]
            rows[c] = {"hook": _rates(ps, "hook"), "previous": _rates(ps, "old")}
        result["splits"][split] = rows
    result["own_top_at_floor"] = sum(1 for p in own if p.top is not None and p.top >= OLD_FLOOR) / max(
        len(own), 1
    )
    result["one_session"] = _rates(session_runs, "hook")
    result["one_session"]["in_session_recall"] = sum(
        1
        for q in session_runs
        if set(q.hook_ids) & q.evidence or q.evidence_given_earlier  # type: ignore[attr-defined]
    ) / max(len(session_runs), 1)
    # Trade-off over the threshold (report split), for the plot and the table.
    curve = []
    import numpy as np

    for t in np.arange(-2.0, 3.01, 0.25):
        point = {"threshold": round(float(t), 2)}
        for c in CONDS:
            ps = [p for p in all_prompts if p.cond == c and not p.calibration]
            r = _rates(ps, "gate", weights, float(t))
            point[c] = r.get("hook_recall", r["block_rate"])
        curve.append(point)
    result["curve"] = curve
    ex = next((p for p in all_prompts if p.cond == "own"), None)
    del ex
    backend.close()
    return result


def plot(result: dict[str, Any], path: Path) -> None:
    """Hook recall against false injection over the threshold, chosen point and previous rule marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    curve = result["curve"]
    rep = result["splits"]["report"]
    for c, label in (
        ("cross", "(a) other conversation"),
        ("code_near", "(c) near miss in code"),
        ("chat_in_code", "(b) chat prompt in code"),
    ):
        ax.plot([p[c] for p in curve], [p["own"] for p in curve], marker=".", label=label)
        ax.scatter(
            [rep[c]["hook"]["block_rate"]], [rep["own"]["hook"]["hook_recall"]], marker="*", s=160, zorder=5
        )
        ax.scatter(
            [rep[c]["previous"]["block_rate"]],
            [rep["own"]["previous"]["hook_recall"]],
            marker="x",
            s=60,
            color="black",
            zorder=5,
        )
    ax.set_xlabel("false injection (share of unrelated prompts given a block)")
    ax.set_ylabel("hook recall (evidence in the block)")
    ax.set_title("Injection gate over its threshold (report split); * chosen, x previous floor", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render(result: dict[str, Any]) -> str:
    """The hook section's markdown."""
    names = {
        "own": "own repository (hook recall)",
        "cross": "(a) another conversation's repository",
        "chat_in_code": "(b) chat question in a codebase",
        "code_in_chat": "(b) docstring in a conversation",
        "code_near": "(c) near miss: other codebase",
    }
    out = []
    for split, title in (
        ("report", "Report split (conversations 4-6, half the docstrings)"),
        ("all", "All of dev (6 conversations, every docstring)"),
    ):
        rows = []
        for c in CONDS:
            for rule in ("previous", "hook"):
                r = result["splits"][split][c][rule]
                label = (
                    "previous: floor 0.35 or exact keyword" if rule == "previous" else "gate (this release)"
                )
                rate = r.get("hook_recall")
                rows.append(
                    [
                        names[c],
                        label,
                        r["n"],
                        "" if rate is None else rate,
                        r["block_rate"],
                        r["lines"],
                        r["chars"],
                    ]
                )
        out += [
            f"**{title}**",
            "",
            markdown_table(
                ["prompts", "rule", "n", "hook recall", "block rate", "lines / prompt", "chars / prompt"],
                rows,
            ),
            "",
        ]
    one = result["one_session"]
    out += [
        f"One session per conversation (all dev questions typed in one session, so a memory is given "
        f"once): evidence in the block {one['hook_recall']:.3f}, in the block or given earlier in the "
        f"session {one['in_session_recall']:.3f}; {one['lines']:.2f} lines and {one['chars']:.0f} "
        "characters per prompt.",
        "",
    ]
    m = result["mcp"]["metrics"]["overall"]
    out += [
        f"LoCoMo through MCP (save_memory, then search_memory): recall_any@5 {m['recall_any@5']:.3f}, "
        f"recall_any@10 {m['recall_any@10']:.3f}, MRR@10 {m['mrr@10']:.3f}.",
        "",
    ]
    if "own_top_at_floor" in result:
        out += [
            f"Share of questions whose best hit in their own space reaches the 0.35 floor: "
            f"{result['own_top_at_floor']:.3f}.",
            "",
        ]
    w = result["weights"]
    out += [f"Gate: z = {w[0]} + {w[1]} * top + {w[2]} * unseen, inject when z >= {result['threshold']}.", ""]
    if result.get("fitted"):
        fw, ft = result["fitted"]
        out += [f"Fitted on the calibration split in this run: weights {fw}, threshold {ft}.", ""]
    rows = [
        [p["threshold"], p["own"], p["cross"], p["chat_in_code"], p["code_in_chat"], p["code_near"]]
        for p in result["curve"]
    ]
    out += [
        "Trade-off over the threshold (report split):",
        "",
        markdown_table(
            [
                "threshold",
                "hook recall",
                "(a) cross",
                "(b) chat in code",
                "(b) code in chat",
                "(c) near miss",
            ],
            rows,
        ),
        "",
        "![hook recall against false injection](../bench/results/hook.png)",
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    import argparse

    import locomo

    parser = argparse.ArgumentParser(prog="bench/hook.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--locomo",
        type=Path,
        default=DEFAULT_LOCOMO,
    )
    parser.add_argument("--calibrate", action="store_true", help="fit the gate on the calibration split")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    convs = locomo.load(args.locomo, limit=2 if args.quick else None)
    result = run(convs, calibrate=args.calibrate, quick=args.quick)
    out = CACHE_DIR / "quick" if args.quick else RESULTS_DIR
    if args.locomo.resolve() != DEFAULT_LOCOMO.resolve():  # another file: results apart
        out = CACHE_DIR / f"locomo-{args.locomo.stem}"
    write_json(out / "hook.json", result)
    plot(result, out / "hook.png")
    text = render(result)
    (out / "hook.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main(sys.argv[1:]))
