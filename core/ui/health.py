"""Hook latency from the stats file: p50/p95 per event and route, and per hour.

The hooks write a latency histogram beside their counts
(:mod:`bli_memory.core.hooks.stats`, buckets :data:`~bli_memory.core.hooks.stats.LATENCY_BOUNDS_MS`).
A percentile read from it is the upper bound of the bucket that holds it, so it is
shown as "at most N ms"; the buckets are about 1.5x apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["ROUTES", "hourly_percentiles", "latency_summary", "percentile", "read_latency"]

#: The routes a hook answers by (``via`` in its receipt).
ROUTES = ("daemon", "direct")


def _bound(key: str) -> float | None:
    """A bucket's upper bound in ms, or None for a key that is none (a hand-edited or
    damaged file: ``"abc"``, ``"nan"``, a negative number), which is then left out."""
    try:
        bound = float(key)
    except (TypeError, ValueError):
        return None
    return bound if bound >= 0 else None  # NaN fails the comparison too


def percentile(histogram: Mapping[str, int], q: float) -> float | None:
    """The ``q`` quantile (0..1) of a latency histogram, as its bucket's upper bound in ms.

    Returns:
        None for an empty histogram; ``inf`` when it falls past the last bound.
    """
    items = sorted((b, n) for b, n in ((_bound(k), n) for k, n in histogram.items())
                   if b is not None and isinstance(n, int) and not isinstance(n, bool) and n > 0)
    total = sum(n for _, n in items)
    if not total:
        return None
    rank = q * total
    seen = 0
    for bound, n in items:
        seen += n
        if seen >= rank:
            return bound
    return items[-1][0]


def read_latency(path: Path) -> dict[str, Any]:
    """The ``latency`` part of the stats file: ``{hour: {event: {route: {bucket: n}}}}``.

    A missing, unreadable or malformed file (or part) reads as empty.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    lat = data.get("latency") if isinstance(data, dict) else None
    return lat if isinstance(lat, dict) else {}


def _merge(into: dict[str, int], hist: Any) -> None:
    if isinstance(hist, dict):
        for key, n in hist.items():
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                into[key] = into.get(key, 0) + n


def latency_summary(latency: Mapping[str, Any], *, now: datetime, days: int = 7) -> dict[str, Any]:
    """p50/p95 and run counts per event and route over the last ``days`` days.

    Returns:
        ``{event: {route: {"runs": n, "p50": ms|None, "p95": ms|None}}}``.
    """
    cutoff = (now - timedelta(days=days)).strftime("%Y-%m-%dT%H")
    merged: dict[str, dict[str, dict[str, int]]] = {}
    for hour, events in latency.items():
        if not isinstance(hour, str) or hour < cutoff or not isinstance(events, dict):
            continue
        for event, routes in events.items():
            if not isinstance(routes, dict):
                continue
            for route, hist in routes.items():
                _merge(merged.setdefault(event, {}).setdefault(route, {}), hist)
    return {
        event: {route: {"runs": sum(h.values()), "p50": percentile(h, 0.5), "p95": percentile(h, 0.95)}
                for route, h in sorted(routes.items())}
        for event, routes in sorted(merged.items())
    }


def hourly_percentiles(
    latency: Mapping[str, Any], event: str, *, now: datetime, hours: int = 48, q: float = 0.95
) -> dict[str, list[Any]]:
    """The ``q`` quantile of ``event`` per hour and route, oldest hour first.

    Returns:
        ``{"hours": [label, ...], route: [ms or None, ...]}`` for the last ``hours``
        UTC hours ending with the current one; None where the route had no run.
    """
    end = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    keys = [(end - timedelta(hours=h)).strftime("%Y-%m-%dT%H") for h in range(hours - 1, -1, -1)]
    out: dict[str, list[Any]] = {"hours": keys}
    for route in ROUTES:
        series: list[float | None] = []
        for key in keys:
            routes = latency.get(key, {}).get(event, {}) if isinstance(latency.get(key), dict) else {}
            hist: dict[str, int] = {}
            _merge(hist, routes.get(route) if isinstance(routes, dict) else None)
            series.append(percentile(hist, q))
        out[route] = series
    return out
