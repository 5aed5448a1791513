"""``cockpit ops --memory``: hook counts and experience totals, as text or JSON.

::

    cockpit ops --memory [--json] [--max-rows N]

Three sections, each over rolling 7- and 30-day windows ending now:

- HOOKS, from the hook stats file (:mod:`bli_memory.core.hooks.stats`, hourly UTC
  buckets): per event, runs and outcomes (``ok``, ``skipped:<reason>``,
  ``failed:<reason>``), ``skipped_trivial`` counted apart (a hook that skips trivial
  prompts on purpose must never read as one that broke), and the route that answered
  (``via daemon`` / ``via direct``). ``--probe`` runs never reach that file, so they
  are never counted here.
- EXPERIENCE: totals of win / loss / noise by store and by person, and the last five
  reasons per store within 30 days, verbatim, newest first. ``both`` is its own row
  (a joint opinion, not a win credited to each store). Read from the embedded store's
  ``memory_experience`` table, paged in ``(created_at, id)`` order newest first, or, when a memory
  service is configured, from this machine's outbox (the service holds the team's
  totals). The read counts requested, returned and unique rows and says when it was
  capped (``--max-rows``) or failed. These are self-reported opinions: counts alone do
  not establish quality, unbiased sampling or cost.
- OUTBOX: entries queued, shipped, in conflict, rejected, and unreadable sidecars.

Every read that was missing, capped or failed is named in the output; the command
exits 0 whenever it could print the view. The numbers come from
:func:`bli_memory.core.experience.ops_view.build_view` (the memory browser's ops page
shows the same); this module only formats them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from bli_memory.core.experience.ops_view import DEFAULT_MAX_ROWS, STORES, build_view, empty_verdict_counts
from bli_memory.core.hooks.stats_windows import WINDOWS, empty_hook_counts

__all__ = ["main", "render_text"]


# --- text ------------------------------------------------------------------------

_MARK = {"bli": "[bli]", "supermemory": "\u25ea", "both": "[bli]+\u25ea"}
_LABEL = 30
_COL = 6


def _row(label: str, values: Iterable[int]) -> str:
    return f"  {label:<{_LABEL}}" + "".join(f"{v:>{_COL}}" for v in values)


def _printable(text: str) -> str:
    """``text`` with control characters written as escapes: names in the stats file are
    its writer's text, and an ANSI escape or a newline there would reach the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _group_head(names: Iterable[str], cols: int) -> str:
    width = _COL * cols
    return f"  {'':<{_LABEL}}" + "".join(f"{n:>{width}}" for n in names)


def render_text(view: Mapping[str, Any]) -> str:
    """The operations view as text for a person; every number is the one in ``view``."""
    lines: list[str] = [f"BLI Memory operations, {view['generated_at']} (windows end now)", ""]
    hooks = view["hooks"]
    lines.append(f"HOOKS  from {hooks['source']}")
    lines.append("  hourly counts; --probe runs are never counted")
    if hooks["read"] == "missing":
        lines.append("  no stats file yet: no hook has run on this machine")
    elif hooks["read"] == "failed":
        lines.append(f"  read failed: {hooks['error']}")
    if hooks["ignored"]:
        lines.append(f"  {hooks['ignored']} malformed bucket(s) or counter(s) ignored")
    events = sorted(set().union(*(hooks["windows"][w].keys() for w in WINDOWS)))
    if hooks["read"] == "ok" and not events:
        lines.append("  no hook runs in the last 30 days")
    if events:
        lines.append(f"  {'':<{_LABEL}}" + "".join(f"{w:>{_COL}}" for w in WINDOWS))
    for name in events:
        per = [hooks["windows"][w].get(name, empty_hook_counts()) for w in WINDOWS]
        lines.append(f"  {name}")
        lines.append(_row("  runs", (p["runs"] for p in per)))
        lines.append(_row("  ok", (p["ok"] for p in per)))
        lines.append(_row("  skipped_trivial (on purpose)", (p["skipped_trivial"] for p in per)))
        seen = hooks.get("last_seen", {}).get(name, {})
        for kind in ("skipped", "failed"):
            for reason in sorted(set().union(*(p[kind].keys() for p in per))):
                last = seen.get(f"{kind}:{reason}")
                lines.append(_row(f"  {kind}:{reason}", (p[kind].get(reason, 0) for p in per))
                             + (f"  last {last.replace('T', ' ')}:00 UTC" if last else ""))
        for route in sorted(set().union(*(p["via"].keys() for p in per))):
            lines.append(_row(f"  via {route}", (p["via"].get(route, 0) for p in per)))
        for note in sorted(set().union(*(p["daemon_fallback"].keys() for p in per))):
            lines.append(_row(f"  daemon fallback:{note}", (p["daemon_fallback"].get(note, 0) for p in per)))
        for key in sorted(set().union(*(p["other"].keys() for p in per))):
            lines.append(_row(f"  {key}", (p["other"].get(key, 0) for p in per)))
    lines.append("")

    exp = view["experience"]
    read = exp["read"]
    src = exp["source"]
    where = {"local_store": "the local store", "outbox": "this machine's outbox (the service holds the "
             "team's totals)", None: "nowhere"}[src["kind"]]
    lines.append(f"EXPERIENCE  from {where}" + (f" {src['path']}" if src.get("path") else ""))
    lines.append("  self-reported opinions: counts alone do not establish quality, sampling or cost")
    lines.append(f"  read: requested {read['requested']}, returned {read['returned']}, "
                 f"unique {read['unique']}" + (" - CAPPED, totals are partial" if read["capped"] else ""))
    if read["failed"]:
        lines.append(f"  read failed: {read['failed']}")
    if src.get("exists") is False:
        lines.append("  no local store yet: nothing was recorded on this machine")
    keys = ("win", "loss", "noise", "total")
    lines.append(_group_head((f"{d} days" for d in WINDOWS.values()), len(keys)))
    lines.append(f"  {'by store':<{_LABEL}}" + "".join(f"{k:>{_COL}}" for _ in WINDOWS for k in keys))
    for store in STORES:
        vals = [exp["windows"][w]["by_store"][store][k] for w in WINDOWS for k in keys]
        lines.append(_row(f"  {store} {_MARK[store]}", vals))
    people = sorted(set().union(*(exp["windows"][w]["by_person"].keys() for w in WINDOWS)))
    lines.append("  by person")
    if not people:
        lines.append("    (no entries in the last 30 days)")
    for person in people:
        for store in STORES:
            per = [exp["windows"][w]["by_person"].get(person, {}).get(store) for w in WINDOWS]
            if not any(per):
                continue
            vals = [(p or empty_verdict_counts())[k] for p in per for k in keys]
            lines.append(_row(f"  {person} \u00b7 {store} {_MARK[store]}", vals))
    lines.append("  last reasons (30 days, newest first, verbatim)")
    for store in STORES:
        lines.append(f"    {store} {_MARK[store]}")
        entries = exp["last_reasons"][store]
        if not entries:
            lines.append("      (none)")
        for e in entries:
            lines.append(f"      - {e['when']} \u00b7 {e['person']} \u00b7 {e['verdict']}: {e['reason']}")
    lines.append("")
    ob = view["outbox"]
    lines.append(f"OUTBOX  {ob['path']}")
    unreadable = f", unreadable {ob['unreadable']}" if ob["unreadable"] else ""
    lines.append(f"  queued {ob['queued']}, shipped {ob['shipped']}, conflict {ob['conflict']}, "
                 f"rejected {ob['rejected']}{unreadable}")
    spend = view.get("extraction")
    if spend:
        lines.append("")
        lines.append(f"EXTRACTION  the host model ({spend['host'] or 'no longer chosen'}), today (UTC)")
        budget = f" of {spend['daily_requests']}" if spend["daily_requests"] is not None else ""
        lines.append(f"  requests {spend['requests']}{budget}, tokens in {spend['input_tokens']}, "
                     f"out {spend['output_tokens']}, cost reported ${spend['cost_usd']:.4f}")
        for reason, count in sorted(spend["fallbacks"].items()):
            lines.append(f"  fell back to the rules: {reason} {count}")
    return "\n".join(_printable(line) for line in lines) + "\n"  # names and reasons are others' text


# --- command ---------------------------------------------------------------------


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Usage(message)


def main(argv: list[str] | None = None) -> int:
    """Run ``cockpit ops``; returns 0 when the view was printed, 2 on a usage error."""
    parser = _Parser(prog="cockpit ops", description="Memory operations: hook counts, experience totals, "
                                                      "the outbox and the host model's spend today.")
    parser.add_argument("--memory", action="store_true", help="the memory view (required)")
    parser.add_argument("--json", action="store_true", help="print the view as JSON")
    parser.add_argument("--max-rows", type=int, default=DEFAULT_MAX_ROWS,
                        help=f"most experience rows to read (default {DEFAULT_MAX_ROWS})")
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(args_list)
        if not args.memory:
            raise _Usage("only the memory view exists: cockpit ops --memory [--json]")
        if args.max_rows < 1:
            raise _Usage("--max-rows must be at least 1")
    except _Usage as exc:
        sys.stderr.write(f"cockpit ops: {exc}\n")
        return 2
    view = build_view(max_rows=args.max_rows)
    from bli_memory.core.extraction.host_spend import spend_today

    view["extraction"] = spend_today()  # the host extractor's spend today, or None
    if args.json:
        sys.stdout.write(json.dumps(view, ensure_ascii=False, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render_text(view))
    return 0
