"""Automatic capture by a model beside the rules, on the real-session set, in one run.

The replay, labels and scores are ``bench/extraction_sessions.py``'s (its docstring gives
the protocol); this file runs them for the rules and for one model extractor, side by
side, and adds what a model costs: tokens in and out and seconds per exchange.

    python bench/extraction_sessions.py --extractor openai --url URL --model M [--write]
    python bench/extraction_sessions.py --extractor host --host claude|codex|gemini [--model M] [--write]
    python bench/extraction_sessions.py --extractor rules [--write]     # the baseline alone
    ... --limit N       # the first N exchanges only, to check the set-up; writes nothing

- ``openai``: any OpenAI-compatible ``/chat/completions`` endpoint (Ollama, llama.cpp,
  a provider; ``BLI_MEMORY_EXTRACT_API_KEY`` for a key);
- ``host``: the person's own host CLI and login, exactly as the worker runs it
  (:mod:`bli_memory.core.extraction.host_model`), with the budget lifted for the run.

Every model request is one exchange's; a failed request falls back to the rules as in the
product, and the fallbacks are counted, so a figure never hides them. ``--write`` replaces
the section of ``docs/benchmarks-extraction.md`` between its ``model-extraction`` markers,
keeping the rows of other models already there.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from common import REPO_ROOT, RESULTS_DIR, log, machine_description, markdown_table, write_json

__all__ = ["main"]

DOC = REPO_ROOT / "docs" / "benchmarks-extraction.md"
_BEGIN, _END = "<!-- model-extraction:begin -->", "<!-- model-extraction:end -->"
_ROWS = "<!-- model-extraction:rows -->"


def _arg(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def _extractor(argv: list[str]) -> tuple[str, Any]:
    """``(label, extractor)`` named by ``--extractor``; ``rules`` gives ``(..., None)``."""
    kind = _arg(argv, "--extractor")
    if kind == "rules":
        return "rules", None
    if kind == "openai":
        from bli_memory.core.extraction.chat_extractor import ChatCompletionsExtractor

        url, model = _arg(argv, "--url"), _arg(argv, "--model")
        if not url or not model:
            raise SystemExit("--extractor openai needs --url URL --model NAME")
        key = os.environ.get("BLI_MEMORY_EXTRACT_API_KEY")
        return f"openai {model}", ChatCompletionsExtractor(url, model=model, api_key=key, timeout=300)
    if kind == "host":
        from bli_memory.core.extraction.host_config import HostChoice
        from bli_memory.core.extraction.host_model import HostModelExtractor
        from bli_memory.core.plugins import get_plugin_manager

        host = _arg(argv, "--host")
        if not host:
            raise SystemExit("--extractor host needs --host claude|codex|gemini")
        choice = HostChoice(host=host, model=_arg(argv, "--model"), daily_requests=10**9, timeout_s=300)
        return f"host {host} {choice.model or '(its default model)'}", HostModelExtractor(choice,
                                                                                          get_plugin_manager())
    raise SystemExit("--extractor rules|openai|host")


def _cost(sessions: dict[str, Any], split: str) -> dict[str, Any]:
    exchanges = [e for s in sessions.values() if split in ("all", s["split"]) for e in s["exchanges"]]
    n = max(len(exchanges), 1)
    reports = [e.get("report") or {} for e in exchanges]
    fallbacks: dict[str, int] = {}
    for r in reports:
        if r.get("fallback"):
            fallbacks[r["fallback"]] = fallbacks.get(r["fallback"], 0) + 1
    return {"exchanges": len(exchanges),
            "tokens_in": sum(r.get("input_tokens") or 0 for r in reports) / n,
            "tokens_out": sum(r.get("output_tokens") or 0 for r in reports) / n,
            "seconds": sum(e["extract_ms"] for e in exchanges) / n / 1000,
            "cost_usd": sum(r.get("cost_usd") or 0.0 for r in reports), "fallbacks": fallbacks}


def main(argv: list[str]) -> int:
    """Replay the rules and the chosen extractor; print (and with ``--write`` keep) the rows."""
    from extraction_sessions import DATA, THRESHOLDS, _Cosines, _totals, replay, score

    label, extractor = _extractor(argv)
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    if "--limit" in argv:  # a smoke run of the harness on the first N exchanges; never written
        rows = rows[: int(_arg(argv, "--limit") or 0)]
        argv = [a for a in argv if a != "--write"]
    log(f"{len(rows)} exchanges in {len({r['session'] for r in rows})} sessions")
    cosine = _Cosines()
    runs = {"rules": replay(rows, None, cosine)}
    if extractor is not None:
        runs[label] = replay(rows, None, cosine, extractor=extractor)
    head = ["extractor", "split", "kept", "precision @0.6", "recall @0.6", "precision @0.7", "recall @0.7",
            "tokens in / exchange", "tokens out / exchange", "s / exchange", "fell back to rules"]
    table: list[list[Any]] = []
    results: dict[str, Any] = {}
    for name, sessions in runs.items():
        per = {t: score(sessions, cosine, t) for t in THRESHOLDS}
        for split in ("test", "tuning"):
            x = {t: _totals(per[t], split) for t in THRESHOLDS}
            c = _cost(sessions, split)
            fell = ", ".join(f"{k} {v}" for k, v in sorted(c["fallbacks"].items())) or "0"
            table.append([name, split, x[0.6]["kept"], x[0.6]["precision"], x[0.6]["recall"],
                          x[0.7]["precision"], x[0.7]["recall"], round(c["tokens_in"]),
                          round(c["tokens_out"]), round(c["seconds"], 3), fell if name != "rules" else "-"])
            results[f"{name}/{split}"] = {"totals": x, "cost": c}
    machine = machine_description()
    write_json(RESULTS_DIR / "extraction_models.json", {"machine": machine, "results": results})
    text = markdown_table(head, table)
    sys.stdout.write(text + "\n")
    if "--write" in argv:
        _write(table, machine)
    return 0


def _write(table: list[list[Any]], machine: dict[str, Any]) -> None:
    """Replace the rules' rows and this run's model rows in the doc; keep other models' rows."""
    doc = DOC.read_text()
    if _BEGIN not in doc:
        raise SystemExit(f"{DOC} has no {_BEGIN} section")
    start, end = doc.index(_ROWS) + len(_ROWS), doc.index(_END)
    old = [line for line in doc[start:end].strip().splitlines()[2:] if line.startswith("|")]
    names = {str(r[0]) for r in table}
    kept = [line for line in old if line.split("|")[1].strip() not in names]
    new = markdown_table(["extractor", "split", "kept", "precision @0.6", "recall @0.6", "precision @0.7",
                          "recall @0.7", "tokens in / exchange", "tokens out / exchange", "s / exchange",
                          "fell back to rules"], table).splitlines()
    note = (f"\nLast run: {machine.get('cpu')}, {machine.get('cores')} cores, commit "
            f"{machine.get('commit', 'unknown')}; the rules' rows come from the same run as the newest "
            "model rows.\n")
    body = "\n" + "\n".join([*new, *kept]) + "\n" + note
    DOC.write_text(doc[:start] + body + doc[end:])
    log(f"wrote {DOC}")
