"""Hook counts over rolling windows, read from the hook stats file.

The stats file (:mod:`bli_memory.core.hooks.stats`) keeps hourly UTC buckets of counters
per hook event; :func:`read_hooks` sums them over the 7- and 30-day windows ending now.
``cockpit ops --memory`` (core/cli/ops.py) and the local memory browser's health page
(core/ui/ops_pages.py) show the same numbers from here. Standard library only.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["WINDOWS", "empty_hook_counts", "read_hooks"]

#: Rolling windows, in days, of every total (BLI Memory spec: 7/30-day totals).
WINDOWS = {"7d": 7, "30d": 30}


def empty_hook_counts() -> dict[str, Any]:
    """The counts of one hook event with nothing counted (the shape :func:`read_hooks` gives)."""
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
        were not in the documented shape, or an hour more than one hour ahead of ``now``
        (written while the clock ran ahead: it would count in every window for good).
        ``last_seen`` is ``{event: {"skipped:<reason>" | "failed:<reason>": "YYYY-MM-DDTHH"}}``,
        the newest UTC hour in the widest window that counted each skip or failure, so a
        failure fixed weeks ago reads as old.
    """
    out: dict[str, Any] = {"source": str(path), "read": "ok", "error": None, "ignored": 0,
                           "probe_runs_counted": False, "windows": {w: {} for w in WINDOWS},
                           "last_seen": {}}
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
    widest = min(cutoffs.values())
    ahead = now + timedelta(hours=1)
    for hour_key, events in sorted(hours.items()):
        try:
            hour = datetime.strptime(hour_key, "%Y-%m-%dT%H").replace(tzinfo=UTC)
        except (TypeError, ValueError):
            out["ignored"] += 1
            continue
        if not isinstance(events, dict) or hour > ahead:  # a clock that ran ahead once
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
                        bucket = out["windows"][w].setdefault(event_name, empty_hook_counts())
                        _add(bucket, str(key), count)
                if count and hour >= widest and str(key).startswith(("skipped:", "failed:")):
                    seen = out["last_seen"].setdefault(event_name, {})
                    hour_text = hour.strftime("%Y-%m-%dT%H")  # as written, whatever the key's padding
                    seen[str(key)] = max(seen.get(str(key), hour_text), hour_text)
    return out
