"""``cockpit ops --memory``: counts from a stats file and an experience log with known contents.

Every number asserted here was put in the files by the test; the view must report
exactly those, in JSON and in text, through the real ``cockpit`` process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.cli.ops import render_text
from bli_memory.core.experience import log as xp
from bli_memory.core.experience.ops_view import build_view
from bli_memory.core.experience.origin import host_conventions
from bli_memory.core.paths import hook_stats_path
from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import run_hook

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

HOST_VARS = [var for conv in host_conventions() for var in conv.env_markers]


@pytest.fixture(autouse=True)
def _no_host_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in HOST_VARS:
        monkeypatch.delenv(var, raising=False)


def cockpit_ops(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    return subprocess.run([bin_path("cockpit"), "ops", *args], capture_output=True, text=True, env=full,
                          timeout=120)


def hour(delta: timedelta) -> str:
    return (datetime.now(UTC) - delta).strftime("%Y-%m-%dT%H")


def write_stats(data: Any) -> Path:
    path = hook_stats_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def event(runs: int = 0, ok: int = 0, trivial: int = 0, skipped: dict | None = None,
          failed: dict | None = None, daemon: int = 0, direct: int = 0,
          fallback: dict | None = None) -> dict[str, Any]:
    return {"runs": runs, "ok": ok, "skipped_trivial": trivial, "skipped": skipped or {},
            "failed": failed or {}, "via": {"daemon": daemon, "direct": direct},
            "daemon_fallback": fallback or {}, "other": {}}


KNOWN_STATS = {
    "version": 1,
    "hours": {
        hour(timedelta(hours=1)): {
            "prompt": {"ok": 5, "skipped_trivial": 2, "failed:timeout": 1, "via:daemon": 4, "via:direct": 2,
                       "daemon:no_socket": 2},
            "session-start": {"ok": 1, "via:direct": 1},
        },
        hour(timedelta(days=3)): {"prompt": {"ok": 3, "skipped:no_prompt": 1, "via:direct": 3}},
        hour(timedelta(days=10)): {
            "prompt": {"ok": 7, "failed:dashboard_unreachable": 2, "via:daemon": 9},
            "stop": {"ok": 4, "skipped:reentrant": 1, "via:direct": 4},
        },
        hour(timedelta(days=40)): {"prompt": {"ok": 100, "via:direct": 100}},
    },
}

EXPECTED_HOOKS = {
    "7d": {
        "prompt": event(runs=12, ok=8, trivial=2, skipped={"no_prompt": 1}, failed={"timeout": 1}, daemon=4,
                        direct=5, fallback={"no_socket": 2}),
        "session-start": event(runs=1, ok=1, direct=1),
    },
    "30d": {
        "prompt": event(runs=21, ok=15, trivial=2, skipped={"no_prompt": 1},
                        failed={"timeout": 1, "dashboard_unreachable": 2}, daemon=13, direct=5,
                        fallback={"no_socket": 2}),
        "session-start": event(runs=1, ok=1, direct=1),
        "stop": event(runs=5, ok=4, skipped={"reentrant": 1}, direct=4),
    },
}

def _last(delta: timedelta) -> str:
    return "  last " + hour(delta).replace("T", " ") + ":00 UTC"


#: The newest hour that counted each skip and failure, in the 30-day window.
EXPECTED_LAST_SEEN = {
    "prompt": {"failed:timeout": hour(timedelta(hours=1)), "skipped:no_prompt": hour(timedelta(days=3)),
               "failed:dashboard_unreachable": hour(timedelta(days=10))},
    "stop": {"skipped:reentrant": hour(timedelta(days=10))},
}

EXPECTED_HOOKS_TEXT = f"""\
                                    7d   30d
  prompt
    runs                            12    21
    ok                               8    15
    skipped_trivial (on purpose)     2     2
    skipped:no_prompt                1     1{_last(timedelta(days=3))}
    failed:dashboard_unreachable     0     2{_last(timedelta(days=10))}
    failed:timeout                   1     1{_last(timedelta(hours=1))}
    via daemon                       4    13
    via direct                       5     5
    daemon fallback:no_socket        2     2
  session-start
    runs                             1     1
    ok                               1     1
    skipped_trivial (on purpose)     0     0
    via daemon                       0     0
    via direct                       1     1
  stop
    runs                             0     5
    ok                               0     4
    skipped_trivial (on purpose)     0     0
    skipped:reentrant                0     1{_last(timedelta(days=10))}
    via daemon                       0     0
    via direct                       0     4
"""


def section(text: str, title: str) -> str:
    """The lines of one section of the text view, without its heading line(s)."""
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title))
    end = next((i for i in range(start + 1, len(lines)) if lines[i] == ""), len(lines))
    return "\n".join(lines[start + 1 : end]) + "\n"


def test_hook_counts_match_the_stats_file_exactly(temp_home: Path) -> None:
    path = write_stats(KNOWN_STATS)
    r = cockpit_ops("--memory", "--json")
    assert r.returncode == 0, r.stderr
    hooks = json.loads(r.stdout)["hooks"]
    assert hooks["source"] == str(path) and hooks["read"] == "ok" and hooks["ignored"] == 0
    assert hooks["probe_runs_counted"] is False
    assert hooks["windows"] == EXPECTED_HOOKS
    assert hooks["last_seen"] == EXPECTED_LAST_SEEN  # a failure fixed ten days ago reads as old

    r = cockpit_ops("--memory")
    assert r.returncode == 0, r.stderr
    body = section(r.stdout, "HOOKS")
    assert body == "  hourly counts; --probe runs are never counted\n" + EXPECTED_HOOKS_TEXT


def test_hours_ahead_of_the_clock_are_ignored_and_unpadded_hours_read_as_written(temp_home: Path) -> None:
    """A bucket written while the clock ran ahead counted in every window for good, and
    "last seen" took the newest key by string order ("2026-11-9T10" over "2026-11-20T10")."""
    now = datetime.now(UTC)
    recent = now - timedelta(days=2)
    unpadded = f"{recent.year}-{recent.month}-{recent.day}T{recent.hour}"
    older = (now - timedelta(days=5)).strftime("%Y-%m-%dT%H")
    write_stats({"version": 1, "hours": {
        "2035-01-01T00": {"prompt": {"failed:timeout": 1}},
        unpadded: {"prompt": {"failed:x": 1}},
        older: {"prompt": {"failed:x": 1}},
    }})
    hooks = json.loads(cockpit_ops("--memory", "--json").stdout)["hooks"]
    assert hooks["ignored"] == 1 and "timeout" not in hooks["windows"]["30d"]["prompt"]["failed"]
    assert hooks["last_seen"]["prompt"] == {"failed:x": recent.strftime("%Y-%m-%dT%H")}


def test_control_characters_in_names_are_escaped_in_the_text_view(temp_home: Path) -> None:
    write_stats({"version": 1, "hours": {hour(timedelta(hours=1)): {
        "prompt": {"failed:\u001b[31mRED\u001b[0m\nfake line": 1}}}})
    out = cockpit_ops("--memory").stdout
    assert "\x1b" not in out and "\nfake line" not in out
    assert "failed:\\x1b[31mRED\\x1b[0m\\nfake line" in out


def test_malformed_parts_are_ignored_and_counted(temp_home: Path) -> None:
    write_stats({"version": 1, "hours": {
        "yesterday": {"prompt": {"ok": 1}},
        hour(timedelta(hours=2)): {"prompt": {"ok": 2, "via:direct": "two", "failed:timeout": -1}, "stop": 3},
    }})
    hooks = build_view()["hooks"]
    assert hooks["ignored"] == 4 and hooks["windows"]["7d"] == {"prompt": event(runs=2, ok=2)}
    assert "  4 malformed bucket(s) or counter(s) ignored" in render_text(build_view())


@pytest.mark.parametrize(
    ("content", "read", "said"),
    [
        (None, "missing", "no stats file yet: no hook has run on this machine"),
        ("{not json", "failed", "read failed: the stats file is not valid JSON"),
        ('{"version": 1}', "failed", "read failed: the stats file has no 'hours' object"),
    ],
)
def test_a_missing_or_broken_stats_file_is_named(temp_home: Path, content: str | None, read: str,
                                                said: str) -> None:
    if content is not None:
        write_stats(content)
    view = build_view()
    assert view["hooks"]["read"] == read and view["hooks"]["windows"] == {"7d": {}, "30d": {}}
    assert said in render_text(view)


def test_real_hook_runs_are_counted_and_probe_runs_are_not(temp_home: Path, tmp_path: Path) -> None:
    payload = json.loads((FIXTURES / "claude" / "prompt.json").read_text())
    payload.update(cwd=str(tmp_path), prompt="ok")
    assert run_hook("prompt", payload).reason == "trivial_prompt"
    probe = run_hook("prompt", payload, args=("--probe",))
    assert probe.receipt[1].get("probe") == "stats_excluded"
    payload.update(prompt="continue")
    run_hook("prompt", payload)
    r = cockpit_ops("--memory", "--json")
    prompt = json.loads(r.stdout)["hooks"]["windows"]["7d"]["prompt"]
    assert prompt["skipped_trivial"] == 2 and prompt["runs"] == 2 and prompt["ok"] == 0


# --- experience --------------------------------------------------------------------


def days_ago(days: float) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


OPINIONS = [  # (days ago, person, store, verdict, reason)
    (1, "alice", "bli", "win", "The dated decision answered it"),
    (2, "alice", "bli", "win", "Found the deploy command"),
    (3, "bob", "supermemory", "win", "Vendor recall had the port"),
    (5, "alice", "bli", "loss", "Missed the renamed module"),
    (6, "alice", "both", "win", "Both agreed on the schema"),
    (10, "bob", "bli", "noise", "Injected an unrelated README line"),
    (12, "bob", "bli", "win", "Recalled the ticket id"),
    (20, "bob", "supermemory", "loss", "Stale branch name"),
    (25, "bob", "bli", "win", "Knew the test command"),
    (40, "carol", "bli", "win", "Too old to count"),
]


def c(win: int = 0, loss: int = 0, noise: int = 0) -> dict[str, int]:
    return {"win": win, "loss": loss, "noise": noise, "total": win + loss + noise}


def record_opinions(*, ship: bool = True) -> dict[str, xp.Entry]:
    out = {}
    for days, person, store, verdict, reason in OPINIONS:
        out[reason] = xp.record(verdict, store, reason, person=person, agent="codex", project="shop",
                                now=days_ago(days))
    if ship:
        assert xp.sync().queued == 0
    return out


EXPECTED_WINDOWS = {
    "7d": {
        "by_store": {"bli": c(2, 1), "supermemory": c(1), "both": c(1)},
        "by_person": {"alice": {"bli": c(2, 1), "both": c(1)}, "bob": {"supermemory": c(1)}},
    },
    "30d": {
        "by_store": {"bli": c(4, 1, 1), "supermemory": c(1, 1), "both": c(1)},
        "by_person": {"alice": {"bli": c(2, 1), "both": c(1)},
                      "bob": {"bli": c(2, 0, 1), "supermemory": c(1, 1)}},
    },
}


def test_experience_totals_and_last_reasons_match_exactly(temp_home: Path) -> None:
    entries = record_opinions()
    r = cockpit_ops("--memory", "--json")
    assert r.returncode == 0, r.stderr
    exp = json.loads(r.stdout)["experience"]
    assert exp["source"]["kind"] == "local_store"
    assert exp["read"] == {"requested": 500, "returned": 9, "unique": 9, "capped": False, "failed": None}
    assert exp["windows"] == EXPECTED_WINDOWS
    last = {store: [e["reason"] for e in rows] for store, rows in exp["last_reasons"].items()}
    assert last == {
        "bli": ["The dated decision answered it", "Found the deploy command", "Missed the renamed module",
                "Injected an unrelated README line", "Recalled the ticket id"],  # five, newest first
        "supermemory": ["Vendor recall had the port", "Stale branch name"],
        "both": ["Both agreed on the schema"],
    }
    first = exp["last_reasons"]["bli"][0]
    e = entries["The dated decision answered it"]
    assert first["id"] == e.id and first["person"] == "alice" and first["verdict"] == "win"
    assert first["when"] == e.line[2:22]  # same local time and zone label as the log line

    r = cockpit_ops("--memory")
    text = r.stdout
    assert "  read: requested 500, returned 9, unique 9\n" in text
    assert "    bli [bli]                        2     1     0     3     4     1     1     6\n" in text
    assert "    supermemory ◪                    1     0     0     1     1     1     0     2\n" in text
    assert "    both [bli]+◪                     1     0     0     1     1     0     0     1\n" in text
    assert "    bob · bli [bli]                  0     0     0     0     2     0     1     3\n" in text
    assert "    alice · both [bli]+◪             1     0     0     1     1     0     0     1\n" in text
    assert f"      - {e.line[2:22]} · alice · win: The dated decision answered it\n" in text
    assert "carol" not in text and "Too old to count" not in text
    assert "self-reported opinions: counts alone do not establish quality" in text


def test_a_capped_read_is_named(temp_home: Path) -> None:
    record_opinions()
    r = cockpit_ops("--memory", "--json", "--max-rows", "3")
    exp = json.loads(r.stdout)["experience"]
    assert exp["read"] == {"requested": 4, "returned": 4, "unique": 3, "capped": True, "failed": None}
    assert exp["windows"]["30d"]["by_store"]["bli"] == c(2)  # the newest three only
    assert exp["windows"]["30d"]["by_store"]["supermemory"] == c(1)
    text = cockpit_ops("--memory", "--max-rows", "3").stdout
    assert "  read: requested 4, returned 4, unique 3 - CAPPED, totals are partial\n" in text


def test_a_paged_read_counts_every_page(temp_home: Path) -> None:
    record_opinions()
    view = build_view(page_size=2)
    assert view["experience"]["read"] == {"requested": 10, "returned": 9, "unique": 9, "capped": False,
                                          "failed": None}
    assert view["experience"]["windows"] == EXPECTED_WINDOWS


def test_a_failed_read_is_named(temp_home: Path) -> None:
    from bli_memory.core.settings import load_settings

    path = load_settings().store_path
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    view = build_view()
    assert view["experience"]["read"]["failed"] and view["experience"]["read"]["returned"] == 0
    assert "  read failed: " in render_text(view)


def test_with_a_service_configured_the_outbox_is_read(temp_home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("BLI_MEMORY_DASHBOARD_URL", dead)
    monkeypatch.setenv("BLI_MEMORY_DEVICE_TOKEN", "t")
    record_opinions(ship=False)
    assert xp.sync().reason == "dashboard_unreachable"
    view = build_view()
    exp = view["experience"]
    assert exp["source"]["kind"] == "outbox" and exp["windows"] == EXPECTED_WINDOWS
    assert exp["read"] == {"requested": 10, "returned": 9, "unique": 9, "capped": False, "failed": None}
    assert view["outbox"] == {"path": str(xp.outbox_dir()), "queued": 10, "shipped": 0, "conflict": 0,
                              "rejected": 0, "unreadable": 0}
    assert "  queued 10, shipped 0, conflict 0, rejected 0\n" in render_text(view)


def test_ops_usage(temp_home: Path) -> None:
    r = cockpit_ops()
    assert r.returncode == 2 and "cockpit ops --memory" in r.stderr
    r = cockpit_ops("--memory", "--max-rows", "0")
    assert r.returncode == 2 and "--max-rows must be at least 1" in r.stderr


def test_the_host_extractors_spend_today_is_shown(temp_home: Path) -> None:
    from bli_memory.core.extraction import host_ledger
    from bli_memory.core.extraction.host_config import save_choice

    r = cockpit_ops("--memory", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["extraction"] is None  # not chosen, nothing spent
    assert "EXTRACTION" not in cockpit_ops("--memory").stdout
    save_choice("host", host="gemini", daily_requests=50)
    host_ledger.record(requested=True, input_tokens=900, output_tokens=120)
    host_ledger.record(requested=False, fallback="budget_spent")
    spend = json.loads(cockpit_ops("--memory", "--json").stdout)["extraction"]
    assert spend == {"host": "gemini", "daily_requests": 50, "requests": 1, "input_tokens": 900,
                     "output_tokens": 120, "cost_usd": 0.0, "fallbacks": {"budget_spent": 1}}
    text = section(cockpit_ops("--memory").stdout, "EXTRACTION")
    assert "requests 1 of 50, tokens in 900, out 120" in text and "budget_spent 1" in text
