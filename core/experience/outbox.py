"""The outbox of experience entries: one sidecar per entry, and the sync tick that ships them.

Each entry's sidecar ``<uuid>.json`` sits in :func:`~bli_memory.core.experience.origin.outbox_dir`
with ``"shipped": false`` until a store acknowledges it; :func:`sync` ships queued ones
oldest first, at most :data:`SYNC_BATCH` a tick, through a
:mod:`~bli_memory.core.experience.sinks` sink. Sidecars are replaced atomically
(:func:`~bli_memory.core.private_files.atomic_write`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import BliMemoryError
from bli_memory.core.experience.entry import STORES, VERDICTS, now_iso
from bli_memory.core.experience.origin import outbox_dir
from bli_memory.core.experience.sinks import Sink, choose_sink
from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

if TYPE_CHECKING:
    from bli_memory.core.settings import Settings

__all__ = ["SYNC_BATCH", "OutboxItem", "OutboxScan", "SyncReport", "read_outbox", "sync", "write_json"]

#: Most entries one sync tick ships (BLI Memory spec).
SYNC_BATCH = 20


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Replace ``path`` with ``data`` as indented JSON (:func:`~bli_memory.core.private_files.atomic_write`).

    Raises:
        OSError: nothing was replaced.
    """
    atomic_write(path, json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n", mode=FILE_MODE)


def _load_settings() -> Settings:
    from bli_memory.core.settings import load_settings

    return load_settings()


@dataclass(frozen=True)
class OutboxItem:
    """One sidecar as read from the outbox."""

    path: Path
    data: dict[str, Any]

    @property
    def id(self) -> str:
        """The entry's UUID."""
        return str(self.data.get("id", ""))

    @property
    def created_at(self) -> str:
        """When the entry was recorded (UTC ISO 8601)."""
        return str(self.data.get("created_at", ""))

    @property
    def queued(self) -> bool:
        """Not yet acknowledged, and not held back by a conflict or rejection."""
        return not self.data.get("shipped") and not self.data.get("conflict") and not self.data.get(
            "rejected"
        )


@dataclass(frozen=True)
class OutboxScan:
    """Every readable sidecar, oldest first, and the names of unreadable ones."""

    items: tuple[OutboxItem, ...]
    unreadable: tuple[str, ...]


def _valid_sidecar(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("id"), str)
        and isinstance(data.get("created_at"), str)
        and data.get("store") in STORES
        and data.get("verdict") in VERDICTS
        and isinstance(data.get("reason"), str)
    )


def read_outbox(environ: Mapping[str, str] | None = None) -> OutboxScan:
    """Read every sidecar of the outbox, sorted by ``(created_at, id)``.

    A file that cannot be read or parsed is listed in ``unreadable`` (and never
    shipped) rather than stopping the scan. A missing outbox is an empty one.
    """
    box = outbox_dir(environ)
    items: list[OutboxItem] = []
    bad: list[str] = []
    try:
        names = sorted(p for p in box.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except FileNotFoundError:
        return OutboxScan((), ())
    except OSError:
        return OutboxScan((), (str(box),))
    for path in names:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            bad.append(path.name)
            continue
        if not _valid_sidecar(data):
            bad.append(path.name)
            continue
        items.append(OutboxItem(path, data))
    items.sort(key=lambda it: (it.created_at, it.id))
    return OutboxScan(tuple(items), tuple(bad))



@dataclass(frozen=True)
class SyncReport:
    """What one sync tick did.

    Attributes:
        target: ``service``, ``local`` or None when nothing was attempted.
        attempted: Entries sent this tick (at most :data:`SYNC_BATCH`).
        shipped: Ids acknowledged this tick (201 or 200), in the order sent.
        conflicts: Ids the store answered 409 for (recorded, never resent).
        rejected: Ids the store answered 400 for (recorded, never resent).
        failed: Id whose delivery failed and stopped the tick, if any.
        reason: Closed-set reason of the failure (``timeout``, ``http_503``,
            ``dashboard_unreachable``, ``unpaired``, ``store_busy``, ...), if any.
        queued: Entries still waiting after this tick.
        busy: Another sync held the outbox lock, so this tick did nothing.
    """

    target: str | None = None
    attempted: int = 0
    shipped: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    failed: str | None = None
    reason: str | None = None
    queued: int = 0
    busy: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"target": self.target, "attempted": self.attempted, "shipped": list(self.shipped),
                "conflicts": list(self.conflicts), "rejected": list(self.rejected),
                "failed": self.failed, "reason": self.reason, "queued": self.queued,
                "busy": self.busy}


@contextlib.contextmanager
def _sync_lock(box: Path) -> Iterator[bool]:
    make_private_dir(box)
    fd = os.open(box / ".sync.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _update(item: OutboxItem, **changes: Any) -> None:
    data = {**item.data, **changes}
    write_json(item.path, data)


def sync(
    *,
    settings: Settings | None = None,
    limit: int = SYNC_BATCH,
    environ: Mapping[str, str] | None = None,
    sink: Sink | None = None,
) -> SyncReport:
    """Ship queued entries, oldest first; never raises.

    At most ``limit`` entries (:data:`SYNC_BATCH`, the spec's 20) per tick, in
    ``(created_at, id)`` order. 201 and 200 mark the sidecar ``shipped: true``; 409
    records ``conflict`` and 400 records ``rejected`` on the sidecar (neither is sent
    again, and the tick goes on); any other answer or a transport failure records
    ``last_error`` and ends the tick, leaving that entry and the rest queued. An entry
    whose answer was lost is resent under the same UUID next tick, and the door
    answers 200 for the identical retry. Only one tick runs at a time per outbox.

    Args:
        settings: Settings (default read from the environment).
        limit: Most entries to send, 1-20.
        sink: Where to ship (tests); default the service if configured, else the
            embedded store.

    Returns:
        A :class:`SyncReport`.
    """
    limit = max(1, min(int(limit), SYNC_BATCH))
    box = outbox_dir(environ)
    try:
        with _sync_lock(box) as held:
            if not held:
                return SyncReport(busy=True, queued=sum(i.queued for i in read_outbox(environ).items))
            return _tick(settings, limit, environ, sink)
    except Exception as exc:  # a sync must never fail its caller
        reason = exc.reason if isinstance(exc, BliMemoryError) else f"unknown_internal:{type(exc).__name__}"
        return SyncReport(reason=reason)


def _tick(settings: Settings | None, limit: int, environ: Mapping[str, str] | None,
          sink: Sink | None) -> SyncReport:
    queued = [i for i in read_outbox(environ).items if i.queued]
    if not queued:
        return SyncReport()
    try:
        chosen = sink or choose_sink(settings or _load_settings())
    except BliMemoryError as exc:
        return SyncReport(reason=exc.reason, queued=len(queued))
    shipped: list[str] = []
    conflicts: list[str] = []
    rejected: list[str] = []
    failed: str | None = None
    reason: str | None = None
    attempted = 0
    try:
        for item in queued[:limit]:
            attempted += 1
            at = now_iso(datetime.now(UTC))
            attempts = int(item.data.get("attempts") or 0) + 1
            payload = {k: str(item.data[k]) for k in ("id", "store", "verdict", "reason", "created_at")}
            try:
                status = chosen.put(payload, item.data)
            except BliMemoryError as exc:
                failed, reason = item.id, exc.reason
                _update(item, attempts=attempts, last_attempt_at=at, last_error=exc.reason)
                break
            if status in (200, 201):
                _update(item, shipped=True, shipped_at=at, shipped_to=chosen.target,
                        attempts=attempts, last_attempt_at=at, last_error=None)
                shipped.append(item.id)
            elif status == 409:
                _update(item, attempts=attempts, last_attempt_at=at, last_error="conflict",
                        conflict={"status": 409, "at": at, "target": chosen.target})
                conflicts.append(item.id)
            else:
                _update(item, attempts=attempts, last_attempt_at=at, last_error="invalid_input",
                        rejected={"status": status, "at": at, "target": chosen.target})
                rejected.append(item.id)
    finally:
        close = getattr(chosen, "close", None)
        if close is not None and sink is None:
            close()
    remaining = len(queued) - len(shipped) - len(conflicts) - len(rejected)
    return SyncReport(target=chosen.target, attempted=attempted, shipped=tuple(shipped),
                      conflicts=tuple(conflicts), rejected=tuple(rejected), failed=failed,
                      reason=reason, queued=remaining)

