"""The numbers of the memory operations view: hook counts, experience totals, the outbox.

:func:`build_view` gives the whole view as a JSON-ready dict; ``cockpit ops --memory``
(core/cli/ops.py) prints it as text or JSON and the local memory browser's ops page
(core/ui/ops_pages.py) shows it. Three sections, each over rolling 7- and 30-day windows
ending now:

- hooks, from the hook stats file (:func:`bli_memory.core.hooks.stats_windows.read_hooks`);
- experience: totals of win / loss / noise by store and by person, and the last five
  reasons per store within 30 days, verbatim, newest first. ``both`` is its own row
  (a joint opinion, not a win credited to each store). Read from the embedded store's
  ``memory_experience`` table, paged in ``(created_at, id)`` order newest first, or, when a memory
  service is configured, from this machine's outbox (the service holds the team's
  totals). The read counts requested, returned and unique rows and says when it was
  capped (``max_rows``) or failed;
- outbox: entries queued, shipped, in conflict, rejected, and unreadable sidecars.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bli_memory.core.hooks.stats_windows import WINDOWS, read_hooks

__all__ = [
    "DEFAULT_MAX_ROWS",
    "LAST_REASONS",
    "PAGE_SIZE",
    "STORES",
    "VERDICTS",
    "build_view",
    "empty_verdict_counts",
]

#: Rows per page when reading the experience table.
PAGE_SIZE = 500
#: Most experience rows one view reads before it says the read was capped.
DEFAULT_MAX_ROWS = 50_000
#: Reasons shown per store (BLI Memory spec: the last five, verbatim).
LAST_REASONS = 5

#: The verdicts an experience entry gives, and the stores it judges (``both``: jointly).
VERDICTS = ("win", "loss", "noise")
STORES = ("bli", "supermemory", "both")




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
                page = store.experience.experience_page(since=since, before=before, limit=want)
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


def empty_verdict_counts() -> dict[str, int]:
    """``{"win": 0, "loss": 0, "noise": 0, "total": 0}``: one store's counts, nothing counted."""
    return {"win": 0, "loss": 0, "noise": 0, "total": 0}


def _aggregate(
    rows: Iterable[Mapping[str, Any]], now: datetime, when: Callable[[datetime], str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    cut = {w: now - timedelta(days=d) for w, d in WINDOWS.items()}
    windows: dict[str, Any] = {
        w: {"by_store": {s: empty_verdict_counts() for s in STORES}, "by_person": {}} for w in WINDOWS
    }
    last: dict[str, list[dict[str, Any]]] = {s: [] for s in STORES}
    for row in rows:
        try:
            created = datetime.fromisoformat(str(row["created_at"]))
        except (KeyError, ValueError):
            continue
        created = created if created.tzinfo else created.replace(tzinfo=UTC)
        store, verdict = row.get("store"), row.get("verdict")
        if store not in STORES or verdict not in VERDICTS:
            continue
        person = str(row.get("person") or "unknown")
        for w, cutoff in cut.items():
            if created < cutoff:
                continue
            by_person = windows[w]["by_person"].setdefault(person, {})
            person_counts = by_person.setdefault(store, empty_verdict_counts())
            for counts in (windows[w]["by_store"][store], person_counts):
                counts[verdict] += 1
                counts["total"] += 1
        if created >= cut["30d"]:
            last[store].append({"id": row.get("id"), "created_at": row.get("created_at"),
                                "when": when(created),
                                "person": person, "agent": row.get("agent") or "",
                                "project": row.get("project") or "", "verdict": verdict,
                                "reason": row.get("reason")})
    for store in STORES:
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
