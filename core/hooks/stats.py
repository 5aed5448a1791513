"""Hourly hook counts per event and outcome, in one JSON file written atomically.

File shape (``$XDG_STATE_HOME/bli-cockpit/memory-hook-stats.json``)::

    {"version": 1,
     "hours": {"2026-11-30T05": {"prompt": {"ok": 3, "skipped_trivial": 1,
                                            "failed:timeout": 1, "via:direct": 4}}}}

Keys per event: ``ok``; ``skipped_trivial`` (counted apart, so a hook that stops
searching is never mistaken for one that broke); ``skipped:<reason>``;
``failed:<reason>``; ``via:daemon`` / ``via:direct``.

Run times sit beside the counts, as a histogram per hour, event and route (the
memory browser's hook-health page reads p50/p95 from it)::

    "latency": {"2026-11-30T05": {"prompt": {"direct": {"150": 2, "700": 1}}}}

A key is the upper bound in ms of the first :data:`LATENCY_BOUNDS_MS` bucket that holds
the run (``"inf"`` past the last). Hours older than 31 days are dropped.

Writes take an exclusive ``flock`` and replace the file with a rename, so concurrent
hooks never lose or corrupt counts. ``--probe`` runs never call :func:`record`.
Standard library only.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = ["KEEP_HOURS", "LATENCY_BOUNDS_MS", "latency_bucket", "load", "outcome_key", "record"]

KEEP_HOURS = 31 * 24

#: Upper bounds (ms) of the latency histogram's buckets: about 1.5x apart, so a
#: percentile read from them is within one step of the true value, from a warm daemon
#: answer (~20 ms, docs/benchmarks-hooks.md) to the stop hook's 15 s deadline.
LATENCY_BOUNDS_MS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700,
                     1000, 1500, 2000, 3000, 5000, 7000, 10000, 15000, 20000, 30000)


def latency_bucket(ms: float) -> str:
    """The histogram key for a run of ``ms`` milliseconds (see :data:`LATENCY_BOUNDS_MS`)."""
    for bound in LATENCY_BOUNDS_MS:
        if ms <= bound:
            return str(bound)
    return "inf"


def outcome_key(outcome: str, reason: str | None) -> str:
    """Counter name for an outcome: ``ok``, ``skipped_trivial``, ``skipped:x``, ``failed:x``."""
    if outcome == "ok":
        return "ok"
    if outcome == "skipped" and reason == "trivial_prompt":
        return "skipped_trivial"
    return f"{outcome}:{reason}"


def load(path: Path) -> dict[str, Any]:
    """Read the stats file; a missing or unreadable file is an empty one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("hours"), dict):
            # Keep only well-formed buckets, so a damaged file heals on the next write.
            data["hours"] = {
                h: {e: c for e, c in events.items() if isinstance(c, dict)}
                for h, events in data["hours"].items() if isinstance(events, dict)
            }
            return data
    except (OSError, ValueError):
        pass
    return {"version": 1, "hours": {}}


def record(path: Path, event: str, keys: list[str], *, now: float | None = None,
           latency_ms: float | None = None, route: str | None = None) -> None:
    """Add one to each counter in ``keys`` for ``event`` in the current UTC hour.

    With ``latency_ms`` and ``route`` (``daemon`` or ``direct``), also count the run's
    time in that route's latency histogram.

    Never raises and never waits more than about 0.2 s for the lock: stats must not
    break or stall a hook; a count that cannot be written is dropped.
    """
    try:
        make_private_dir(path.parent)
        hour = time.strftime("%Y-%m-%dT%H", time.gmtime(now))
        lock_fd = os.open(path.with_suffix(".lock"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(lock_fd, "a") as lock:
            # Bounded wait: a stuck holder must never hold a hook past its deadline.
            for _ in range(40):
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(0.005)
            else:
                return
            data = load(path)
            bucket = data["hours"].setdefault(hour, {}).setdefault(event, {})
            for key in keys:
                old = bucket.get(key, 0)
                bucket[key] = (old if isinstance(old, int) else 0) + 1
            if latency_ms is not None and route:
                lat = data.get("latency")
                lat = data["latency"] = lat if isinstance(lat, dict) else {}
                hist = lat.setdefault(hour, {}).setdefault(event, {}).setdefault(route, {})
                if isinstance(hist, dict):
                    slot = latency_bucket(latency_ms)
                    old = hist.get(slot, 0)
                    hist[slot] = (old if isinstance(old, int) else 0) + 1
                for old in sorted(lat)[:-KEEP_HOURS]:
                    del lat[old]
            for old in sorted(data["hours"])[:-KEEP_HOURS]:
                del data["hours"][old]
            atomic_write(path, json.dumps(data, separators=(",", ":"), sort_keys=True), mode=FILE_MODE)
    except Exception:  # stats must never break a hook (a damaged file is rewritten)
        pass
