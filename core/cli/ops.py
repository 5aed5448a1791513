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
exits 0 whenever it could print the view.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_MAX_ROWS",
    "LAST_REASONS",
    "PAGE_SIZE",
    "WINDOWS",
    "build_view",
    "main",
    "read_hooks",
    "render_text",
]

#: Rolling windows, in days, of every total (BLI Memory spec: 7/30-day totals).
WINDOWS = {"7d": 7, "30d": 30}
#: Rows per page when reading the experience table.
PAGE_SIZE = 500
#: Most experience rows one view reads before it says the read was capped.
DEFAULT_MAX_ROWS = 50_000
#: Reasons shown per store (BLI Memory spec: the last five, verbatim).
LAST_REASONS = 5

_VERDICTS = ("win", "loss", "noise")
_STORES = ("bli", "supermemory", "both")


# --- hooks -----------------------------------------------------------------------


def _empty_event() -> dict[str, Any]:
    return {"runs": 0, "ok": 0, "skipped_trivial": 0, "skipped": {}, "failed": {},
            "via": {"daemon": 0, "direct": 0}, "daemon_fallback": {}, "other": {}}


def _add(event: dict[str, Any], key: str, count: int) -> None:
    if key == "ok":
        event["ok"] += count
        event["runs"] += count
    elif key == "skipped_trivial":
        event["skipped_trivial"] += count
        event["runs"] += count
    elif key.startswith(("skipped:", "failed:")):
        kind, _, reason = key.partition(":")
        event[kind][reason] = event[kind].get(reason, 0) + count
        event["runs"] += count
    elif key.startswith("via:"):
        route = key[4:]
        event["via"][route] = event["via"].get(route, 0) + count
    elif key.startswith("daemon:"):
        note = key[7:]
        event["daemon_fallback"][note] = event["daemon_fallback"].get(note, 0) + count
    else:
        event["other"][key] = event["other"].get(key, 0) + count


def read_hooks(path: Path, now: datetime) -> dict[str, Any]:
    """Hook counts per window from the stats file.

    Returns:
        ``{"source", "read": "ok"|"missing"|"failed", "error", "ignored",
        "windows": {"7d": {event: counts}, "30d": {...}}}`` where counts are
        ``{"runs", "ok", "skipped_trivial", "skipped": {reason: n}, "failed": {reason: n},
        "via": {"daemon": n, "direct": n}, "daemon_fallback": {reason: n}, "other": {key: n}}``:
        ``runs`` is ok + skipped_trivial + every skipped and failed; ``via`` counts the
        route that answered; ``daemon_fallback`` why the daemon route was not taken
        (``daemon:<reason>`` in the file). ``ignored`` counts buckets or counters that
        were not in the documented shape.
    """
    out: dict[str, Any] = {"source": str(path), "read": "ok", "error": None, "ignored": 0,
                           "probe_runs_counted": False, "windows": {w: {} for w in WINDOWS}}
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        out["read"] = "missing"
        return out
    except OSError as exc:
        out.update(read="failed", error=f"cannot read the stats file: {exc.strerror or exc}")
        return out
    try:
        data = json.loads(raw)
    except ValueError:
        out.update(read="failed", error="the stats file is not valid JSON")
        return out
    hours = data.get("hours") if isinstance(data, dict) else None
    if not isinstance(hours, dict):
        out.update(read="failed", error="the stats file has no 'hours' object")
        return out
    cutoffs = {w: (now - timedelta(days=d)).replace(minute=0, second=0, microsecond=0)
               for w, d in WINDOWS.items()}
    for hour_key, events in sorted(hours.items()):
        try:
            hour = datetime.strptime(hour_key, "%Y-%m-%dT%H").replace(tzinfo=UTC)
        except (TypeError, ValueError):
            out["ignored"] += 1
            continue
        if not isinstance(events, dict):
            out["ignored"] += 1
            continue
        for event_name, counters in events.items():
            if not isinstance(counters, dict):
                out["ignored"] += 1
                continue
            for key, count in counters.items():
                if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                    out["ignored"] += 1
                    continue
                for w, cutoff in cutoffs.items():
                    if hour >= cutoff:
                        bucket = out["windows"][w].setdefault(event_name, _empty_event())
                        _add(bucket, str(key), count)
    return out


# --- experience ------------------------------------------------------------------


@dataclass
class _ReadStats:
    requested: int = 0
    returned: int = 0
    unique: int = 0
    capped: bool = False
    failed: str | None = None
    ids: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "returned": self.returned, "unique": self.unique,
                "capped": self.capped, "failed": self.failed}


def _read_store(
    store_path: Path, since: str, max_rows: int, page_size: int
) -> tuple[list[dict[str, Any]], _ReadStats]:
    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.memory import embeddings

    stats = _ReadStats()
    rows: list[dict[str, Any]] = []
    if not store_path.exists():
        return rows, stats
    try:
        store = SQLiteStore(store_path, model_name=embeddings.MODEL_NAME, dimensions=embeddings.DIMENSIONS)
    except BliMemoryError as exc:
        stats.failed = f"{exc.reason}: {exc.message}"
        return rows, stats
    try:
        before: tuple[str, str] | None = None
        while True:
            want = min(page_size, max_rows + 1 - len(rows))
            stats.requested += want
            try:
                page = store.experience_page(since=since, before=before, limit=want)
            except BliMemoryError as exc:
                stats.failed = f"{exc.reason}: {exc.message}"
                break
            stats.returned += len(page)
            rows.extend(page)
            if len(rows) > max_rows:
                del rows[max_rows:]
                stats.capped = True
                break
            if len(page) < want:
                break
            before = (page[-1]["created_at"], page[-1]["id"])
    finally:
        store.close()
    return rows, stats


def _read_outbox(since: str, max_rows: int) -> tuple[list[dict[str, Any]], _ReadStats, dict[str, Any]]:
    from bli_memory.core.experience.log import outbox_dir, read_outbox

    scan = read_outbox()
    stats = _ReadStats(requested=len(scan.items) + len(scan.unreadable))
    counts = {"queued": 0, "shipped": 0, "conflict": 0, "rejected": 0}
    rows: list[dict[str, Any]] = []
    for item in scan.items:
        d = item.data
        if d.get("shipped"):
            counts["shipped"] += 1
        elif d.get("conflict"):
            counts["conflict"] += 1
        elif d.get("rejected"):
            counts["rejected"] += 1
        else:
            counts["queued"] += 1
        if item.created_at >= since:
            rows.append({k: d.get(k) for k in ("id", "store", "verdict", "reason", "created_at",
                                                "person", "device", "agent", "project")})
    stats.returned = len(rows)
    if len(rows) > max_rows:
        rows = rows[-max_rows:]  # the newest, as the store reader keeps
        stats.capped = True
    if scan.unreadable:
        stats.failed = f"{len(scan.unreadable)} sidecar(s) unreadable"
    outbox: dict[str, Any] = {"path": str(outbox_dir()), **counts, "unreadable": len(scan.unreadable)}
    return rows, stats, outbox


def _utc_when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _counts() -> dict[str, int]:
    return {"win": 0, "loss": 0, "noise": 0, "total": 0}


def _aggregate(
    rows: Iterable[Mapping[str, Any]], now: datetime, when: Callable[[datetime], str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    cut = {w: now - timedelta(days=d) for w, d in WINDOWS.items()}
    windows: dict[str, Any] = {
        w: {"by_store": {s: _counts() for s in _STORES}, "by_person": {}} for w in WINDOWS
    }
    last: dict[str, list[dict[str, Any]]] = {s: [] for s in _STORES}
    for row in rows:
        try:
            created = datetime.fromisoformat(str(row["created_at"]))
        except (KeyError, ValueError):
            continue
        created = created if created.tzinfo else created.replace(tzinfo=UTC)
        store, verdict = row.get("store"), row.get("verdict")
        if store not in _STORES or verdict not in _VERDICTS:
            continue
        person = str(row.get("person") or "unknown")
        for w, cutoff in cut.items():
            if created < cutoff:
                continue
            for counts in (windows[w]["by_store"][store],
                           windows[w]["by_person"].setdefault(person, {}).setdefault(store, _counts())):
                counts[verdict] += 1
                counts["total"] += 1
        if created >= cut["30d"]:
            last[store].append({"id": row.get("id"), "created_at": row.get("created_at"),
                                "when": when(created),
                                "person": person, "agent": row.get("agent") or "",
                                "project": row.get("project") or "", "verdict": verdict,
                                "reason": row.get("reason")})
    for store in _STORES:
        last[store] = sorted(last[store], key=lambda r: (r["created_at"], r["id"]), reverse=True)[
            :LAST_REASONS
        ]
    return windows, last


def build_view(*, now: datetime | None = None, max_rows: int = DEFAULT_MAX_ROWS,
               page_size: int = PAGE_SIZE) -> dict[str, Any]:
    """The whole operations view as a JSON-ready dict (what ``--json`` prints).

    Args:
        now: End of every window (default now, UTC).
        max_rows: Most experience rows read before the read is reported capped.
        page_size: Rows per page of the experience table.

    Returns:
        ``{"generated_at", "hooks": ..., "experience": ..., "outbox": ...}``; see
        :func:`read_hooks` for the hooks part. ``experience`` has ``source`` (``kind``
        ``local_store`` or ``outbox``, ``path``), ``read`` (requested, returned, unique,
        capped, failed), ``windows`` (``by_store``: store -> win/loss/noise/total;
        ``by_person``: person -> store -> counts) and ``last_reasons`` (store -> up to
        five entries, newest first).
    """
    from bli_memory.core import paths
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.experience.log import format_time, resolve_timezone
    from bli_memory.core.settings import load_settings

    moment = (now or datetime.now(UTC)).astimezone(UTC)
    since = (moment - timedelta(days=max(WINDOWS.values()))).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    view: dict[str, Any] = {"generated_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                            "hooks": read_hooks(paths.hook_stats_path(), moment)}
    outbox_rows, outbox_stats, outbox = _read_outbox(since, max_rows)
    view["outbox"] = outbox
    try:
        settings = load_settings()
        remote = settings.remote
        store_path = settings.store_path
        zone, label = resolve_timezone(settings.experience_tz)
    except BliMemoryError as exc:
        windows, last = _aggregate([], moment, _utc_when)
        view["experience"] = {"source": {"kind": None, "path": None},
                              "read": _ReadStats(failed=exc.message).as_dict(),
                              "windows": windows, "last_reasons": last}
        return view

    def when(moment: datetime) -> str:
        return format_time(moment, zone, label)

    if remote:
        rows, stats = outbox_rows, outbox_stats
        source = {"kind": "outbox", "path": outbox["path"]}
    else:
        rows, stats = _read_store(store_path, since, max_rows, page_size)
        source = {"kind": "local_store", "path": str(store_path), "exists": store_path.exists()}
    stats.unique = len({r.get("id") for r in rows})
    windows, last = _aggregate(rows, moment, when)
    view["experience"] = {"source": source, "read": stats.as_dict(), "windows": windows,
                          "last_reasons": last}
    return view


# --- text ------------------------------------------------------------------------

_MARK = {"bli": "[bli]", "supermemory": "\u25ea", "both": "[bli]+\u25ea"}
_LABEL = 30
_COL = 6


def _row(label: str, values: Iterable[int]) -> str:
    return f"  {label:<{_LABEL}}" + "".join(f"{v:>{_COL}}" for v in values)


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
        per = [hooks["windows"][w].get(name, _empty_event()) for w in WINDOWS]
        lines.append(f"  {name}")
        lines.append(_row("  runs", (p["runs"] for p in per)))
        lines.append(_row("  ok", (p["ok"] for p in per)))
        lines.append(_row("  skipped_trivial (on purpose)", (p["skipped_trivial"] for p in per)))
        for kind in ("skipped", "failed"):
            for reason in sorted(set().union(*(p[kind].keys() for p in per))):
                lines.append(_row(f"  {kind}:{reason}", (p[kind].get(reason, 0) for p in per)))
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
    for store in _STORES:
        vals = [exp["windows"][w]["by_store"][store][k] for w in WINDOWS for k in keys]
        lines.append(_row(f"  {store} {_MARK[store]}", vals))
    people = sorted(set().union(*(exp["windows"][w]["by_person"].keys() for w in WINDOWS)))
    lines.append("  by person")
    if not people:
        lines.append("    (no entries in the last 30 days)")
    for person in people:
        for store in _STORES:
            per = [exp["windows"][w]["by_person"].get(person, {}).get(store) for w in WINDOWS]
            if not any(per):
                continue
            vals = [(p or _counts())[k] for p in per for k in keys]
            lines.append(_row(f"  {person} \u00b7 {store} {_MARK[store]}", vals))
    lines.append("  last reasons (30 days, newest first, verbatim)")
    for store in _STORES:
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
    return "\n".join(lines) + "\n"


# --- command ---------------------------------------------------------------------


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Usage(message)


def main(argv: list[str] | None = None) -> int:
    """Run ``cockpit ops``; returns 0 when the view was printed, 2 on a usage error."""
    parser = _Parser(prog="cockpit ops", description="Memory operations: hook counts and experience totals.")
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
    if args.json:
        sys.stdout.write(json.dumps(view, ensure_ascii=False, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render_text(view))
    return 0
