"""Hook latency in the stats file and the percentiles the hook-health page reads from it."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bli_memory.core.hooks import stats as hook_stats
from bli_memory.core.paths import hook_stats_path
from bli_memory.core.ui.health import hourly_percentiles, latency_summary, percentile, read_latency
from tests.conftest import FIXTURES
from tests.hooks_util import run_hook


@pytest.mark.parametrize(("ms", "bucket"), [(0, "1"), (1, "1"), (1.2, "2"), (20, "20"), (21, "30"),
                                            (30000, "30000"), (30001, "inf")])
def test_latency_bucket_is_the_first_upper_bound_at_or_above(ms: float, bucket: str) -> None:
    assert hook_stats.latency_bucket(ms) == bucket


def test_buckets_are_at_most_one_and_a_half_apart() -> None:
    bounds = hook_stats.LATENCY_BOUNDS_MS
    assert list(bounds) == sorted(bounds)
    assert all(b / a <= 2 for a, b in zip(bounds, bounds[1:], strict=False))
    assert max(b / a for a, b in zip(bounds[3:], bounds[4:], strict=False)) <= 1.67


def test_percentile_reads_the_bucket_holding_the_rank() -> None:
    hist = {"15": 30, "30": 30}
    assert percentile(hist, 0.5) == 15
    assert percentile(hist, 0.51) == 30
    assert percentile(hist, 0.95) == 30
    assert percentile({"inf": 1, "10": 99}, 0.995) == float("inf")
    assert percentile({}, 0.5) is None
    assert percentile({"10": 0, "x": "y"}, 0.5) is None  # type: ignore[dict-item]
    # A damaged key is left out instead of failing the page (it raised ValueError: 500).
    assert percentile({"abc": 5, "nan": 5, "-4": 5, "15": 1}, 0.5) == 15
    assert percentile({"abc": 5}, 0.5) is None


def test_record_keeps_counts_and_latency_apart(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    now = time.time()
    hook_stats.record(path, "prompt", ["ok", "via:daemon"], now=now, latency_ms=18, route="daemon")
    hook_stats.record(path, "prompt", ["ok", "via:direct"], now=now, latency_ms=900, route="direct")
    hook_stats.record(path, "prompt", ["skipped_trivial"], now=now, latency_ms=3)  # no route: not timed
    data = json.loads(path.read_text())
    (hour,) = data["hours"]
    assert data["hours"][hour]["prompt"] == {"ok": 2, "via:daemon": 1, "via:direct": 1, "skipped_trivial": 1}
    assert data["latency"] == {hour: {"prompt": {"daemon": {"20": 1}, "direct": {"1000": 1}}}}
    summary = latency_summary(read_latency(path), now=datetime.now(UTC))
    assert summary == {"prompt": {"daemon": {"runs": 1, "p50": 20, "p95": 20},
                                  "direct": {"runs": 1, "p50": 1000, "p95": 1000}}}


def test_a_damaged_latency_part_is_rewritten_and_counts_survive(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    path.write_text(json.dumps({"version": 1, "hours": {}, "latency": ["not", "a", "dict"]}))
    hook_stats.record(path, "stop", ["ok", "via:direct"], latency_ms=40, route="direct")
    data = json.loads(path.read_text())
    assert list(data["latency"].values()) == [{"stop": {"direct": {"50": 1}}}]
    assert read_latency(tmp_path / "missing.json") == {}


def test_old_latency_hours_are_dropped_with_the_counts(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    start = time.time() - (hook_stats.KEEP_HOURS + 5) * 3600
    for h in range(hook_stats.KEEP_HOURS + 6):
        hook_stats.record(path, "prompt", ["ok"], now=start + h * 3600, latency_ms=5, route="direct")
    data = json.loads(path.read_text())
    assert len(data["latency"]) == len(data["hours"]) == hook_stats.KEEP_HOURS


def test_hourly_percentiles_leave_gaps_for_hours_without_runs(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    now = time.time()
    hook_stats.record(path, "prompt", ["ok"], now=now - 2 * 3600, latency_ms=90, route="direct")
    hook_stats.record(path, "prompt", ["ok"], now=now, latency_ms=12, route="daemon")
    series = hourly_percentiles(read_latency(path), "prompt", now=datetime.now(UTC), hours=4)
    assert len(series["hours"]) == 4
    assert series["direct"] == [None, 100, None, None]
    assert series["daemon"] == [None, None, None, 15]


@pytest.mark.e2e
@pytest.mark.e2e
def test_a_real_hook_run_records_its_latency_by_route(project: Path) -> None:
    payload = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    payload.update(cwd=str(project), prompt="what is the release process for the billing service?")
    r = run_hook("prompt", payload)
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["via"] == "direct"
    lat = read_latency(hook_stats_path())
    ((hour, events),) = lat.items()
    ((bucket, n),) = events["prompt"]["direct"].items()
    assert n == 1
    assert hook_stats.latency_bucket(fields["elapsed_ms"]) == bucket
