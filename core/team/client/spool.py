"""The capture spool: exchanges the team memory service could not take yet, kept on disk.

When a memory service is configured, the stop hook's exchange goes to the service's
save door (extract mode). A service that is down or hanging would cost the person
the turn, so the hook first writes the redacted exchange here, then ships what is
spooled within a short budget, and leaves the rest for later: the next stop hook, the
resident daemon (each pass of its job loop, every 30 s), or ``bli-memory-mcp worker``.

- **One file per exchange**, ``<ns>-<job id>.json`` in ``<state dir>/spool`` (0700;
  files 0600), written to a temporary name, fsynced, renamed into place and the folder
  fsynced: a crash leaves the whole entry or none of it.
- **Idempotent.** The job id is chosen when the exchange is spooled and sent as
  ``jobId``; the service queues a job id once (:mod:`bli_memory.core.memory.job_ids`), so
  an entry shipped twice (a timeout after the service committed, two hooks shipping
  at once) is one job.
- **Bounded.** At most :data:`MAX_ENTRIES` files and :data:`MAX_BYTES` bytes; past
  that a new exchange is not spooled, and the hook reports the service's failure as
  before (a ``systemMessage``: the turn was not kept).
- **Bound to its service.** An entry records the service URL it was meant for and is
  only ever sent there; after a switch to another service it waits (and counts).
- Only redacted text is spooled (the stop hook redacts before this module sees it).
- **Recorded turns too.** A turn of a space whose sessions are recorded
  (``record_session``) is spooled as ``"kind": "record"`` and sent to the record door
  with its id, which the service keeps once, as it queues a job id once.
- **Progress with a slow service.** A service that answers, but slower than a stop
  hook's :data:`REQUEST_TIMEOUT_S`, cannot be told apart from one that hangs by the
  hook, so the hook backs off: after a timeout, stop hooks spool without sending for
  :data:`BACKOFF_S` (a ``backoff`` file beside the entries). The backlog path, the
  daemon's job loop and ``worker``, runs off the prompt path and gives each request
  :data:`BACKLOG_REQUEST_TIMEOUT_S`, so a slow service gets every entry in order
  instead of the oldest one again and again; a send that succeeds ends the back-off.

Standard library only; the backend passed in does the HTTP.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from bli_memory.core.memory.job_queue import ShipReport
from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir


class Sender(Protocol):
    """What the spool sends through: the service's client
    (:class:`~bli_memory.core.team.client.remote.RemoteBackend`)."""

    base_url: str

    def enqueue_extract(self, text: str, *, space: str, source: str, session_id: str | None = None,
                        job_id: str | None = None, timeout: float | None = None) -> str:
        """Queue an exchange on the service under ``job_id``; returns the job id."""
        ...

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None,
                    record_id: str | None = None, timeout: float | None = None) -> str:
        """Keep a recorded turn on the service under ``record_id``; returns its id."""
        ...

__all__ = [
    "BACKLOG_BUDGET_S",
    "BACKLOG_REQUEST_TIMEOUT_S",
    "BACKOFF_S",
    "MAX_BYTES",
    "MAX_ENTRIES",
    "REQUEST_TIMEOUT_S",
    "SHIP_BUDGET_S",
    "Sender",
    "ShipReport",
    "capture",
    "pending",
    "ship",
    "ship_backlog",
    "spool_dir",
]

#: Most exchanges kept: a day and more of heavy use (a busy person ends a few hundred
#: turns a day) with the service away.
MAX_ENTRIES = 500
#: Most bytes kept: 500 entries of the stop hook's 12 KB exchange
#: (``hook_events.MAX_EXCHANGE_BYTES``) plus their JSON framing.
MAX_BYTES = 8 * 1024 * 1024
#: Seconds one request to the service may take from the stop hook: a healthy service
#: queues a job in milliseconds (docs/benchmarks-service.md), so this only bounds a
#: hanging one.
REQUEST_TIMEOUT_S = 2.0
#: Seconds a stop hook spends shipping (its own exchange and any backlog): well under
#: the stop hook's 15 s deadline and the daemon's 7.5 s answer budget (core/hooks/main.py).
SHIP_BUDGET_S = 3.0
#: Seconds ``bli-memory-mcp worker`` (and each pass of the daemon) may spend shipping.
BACKLOG_BUDGET_S = 60.0
#: Seconds one request may take on the backlog path (daemon, ``worker``): a slow
#: service that needs a few seconds to queue a job still gets it; a third of
#: :data:`BACKLOG_BUDGET_S`, so a hanging one costs a pass at most that.
BACKLOG_REQUEST_TIMEOUT_S = 20.0
#: Seconds stop hooks leave the sending to the backlog path after one timed out: the
#: daemon's job loop passes every 30 s (core/daemon/drain.py).
BACKOFF_S = 30.0
_BACKOFF = "backoff"

_SUFFIX = ".json"


def spool_dir(environ: Any = None) -> Path:
    """``<state dir>/spool`` (see :func:`bli_memory.core.paths.state_dir`)."""
    from bli_memory.core.paths import state_dir

    return state_dir(environ) / "spool"


def _entries(folder: Path) -> list[Path]:
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(_SUFFIX))
    except FileNotFoundError:
        return []
    return [folder / n for n in names]


def _usage(folder: Path) -> tuple[int, int]:
    count = size = 0
    for path in _entries(folder):
        try:
            size += path.stat().st_size
            count += 1
        except FileNotFoundError:  # shipped by another process meanwhile
            continue
    return count, size


def _put(folder: Path, entry: dict[str, Any]) -> Path | None:
    """Write one entry durably; None when the spool is full."""
    data = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace")
    make_private_dir(folder)  # every missing parent 0700 too, whatever the umask
    os.chmod(folder, 0o700)
    count, size = _usage(folder)
    if count >= MAX_ENTRIES or size + len(data) > MAX_BYTES:
        return None
    name = f"{time.time_ns():020d}-{entry['id']}"
    final = folder / f"{name}{_SUFFIX}"
    atomic_write(final, data, mode=FILE_MODE)
    return final


def pending(service_url: str | None = None, *, folder: Path | None = None) -> int:
    """Entries spooled (for ``service_url`` only, when given)."""
    folder = folder or spool_dir()
    if service_url is None:
        return len(_entries(folder))
    return sum(1 for p in _entries(folder) if (_read(p) or {}).get("service") == service_url)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        entry = json.loads(path.read_bytes().decode("utf-8", "replace"))
    except FileNotFoundError:
        return None
    except ValueError:
        return {}  # unreadable: never shipped, never deleted (a person can look at it)
    return entry if isinstance(entry, dict) else {}


def _backing_off(folder: Path, service_url: str) -> bool:
    """True while stop hooks leave ``service_url``'s entries to the backlog path."""
    try:
        mark = json.loads((folder / _BACKOFF).read_bytes())
        return bool(mark["service"] == service_url and time.time() < float(mark["until"]))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _set_backoff(folder: Path, service_url: str, *, on: bool) -> None:
    """Start (``on``) or end the back-off of stop hooks; never raises."""
    try:
        if on:
            mark = {"service": service_url, "until": time.time() + BACKOFF_S}
            atomic_write(folder / _BACKOFF, json.dumps(mark), mode=FILE_MODE)
        else:
            (folder / _BACKOFF).unlink()
    except OSError:
        pass


def _passing(reason: str) -> bool:
    """True for a failure that ends by itself (the service down, slow or overloaded)."""
    return reason in ("timeout", "dashboard_unreachable") or reason.startswith("http_5")


def _send(backend: Sender, entry: dict[str, Any], timeout: float) -> str:
    """Send one entry with its id: a recorded turn to the record door, else an extract job."""
    if entry.get("kind") == "record":
        return str(backend.record_turn(entry["text"], space=entry["space"], source=entry["source"],
                                       session_id=entry.get("sessionId"), record_id=entry["id"],
                                       timeout=timeout))
    return str(backend.enqueue_extract(entry["text"], space=entry["space"], source=entry["source"],
                                       session_id=entry.get("sessionId"), job_id=entry["id"],
                                       timeout=timeout))


def ship(backend: Sender, service_url: str, *, deadline: float, folder: Path | None = None,
         clock: Callable[[], float] = time.monotonic,
         request_timeout: float = REQUEST_TIMEOUT_S) -> ShipReport:
    """Send spooled entries of ``service_url`` to ``backend``, oldest first, until ``deadline``.

    Each request gets at most ``request_timeout`` seconds and never runs past
    ``deadline``; the first failure of the service (timeout, unreachable, 5xx, 401)
    ends the pass with the rest kept. An entry the service refuses as invalid (400)
    is removed: it would be refused again.

    Args:
        backend: A :class:`~bli_memory.core.team.client.remote.RemoteBackend` (``enqueue_extract``
            with ``job_id`` and ``timeout``).
        service_url: The service the backend talks to.
        deadline: ``clock()`` value by which the pass ends.
        folder: The spool folder (default :func:`spool_dir`).
        request_timeout: Seconds one request may take (:data:`REQUEST_TIMEOUT_S` on
            the stop hook, :data:`BACKLOG_REQUEST_TIMEOUT_S` on the backlog path).

    Returns:
        The :class:`ShipReport`. Never raises for a service failure.
    """
    from bli_memory.core.errors import BliMemoryError, InvalidInputError

    folder = folder or spool_dir()
    shipped: list[str] = []
    rejected = 0
    error: str | None = None
    mine = [(p, e) for p in _entries(folder) if (e := _read(p)) and e.get("service") == service_url]
    for path, entry in mine:
        left = deadline - clock()
        if left < 0.2:
            error = "timeout"
            break
        try:
            job_id = _send(backend, entry, min(request_timeout, left))
        except InvalidInputError:
            rejected += 1
        except BliMemoryError as exc:
            error = exc.reason
            break
        else:
            shipped.append(job_id)
        try:
            path.unlink()
        except FileNotFoundError:  # another process shipped it too: the same job
            pass
    done = len(shipped) + rejected
    return ShipReport(tuple(shipped), rejected, len(mine) - done, error)


def capture(backend: Sender, service_url: str, text: str, *, space: str, source: str,
            session_id: str | None, budget_s: float = SHIP_BUDGET_S,
            folder: Path | None = None, record: bool = False) -> dict[str, Any]:
    """Keep one redacted exchange for the service: spool it, then ship within ``budget_s``.

    Args:
        backend: The remote backend.
        service_url: Its base URL.
        text: The redacted, bounded exchange.
        space, source, session_id: As for ``enqueue_extract``.
        budget_s: Seconds this call may spend on the network.
        folder: The spool folder (default :func:`spool_dir`).
        record: A recorded turn (``record_turn``), not an exchange to extract.

    Returns:
        Receipt fields: ``queued`` (the service has this exchange's job), ``spooled``
        (kept here for later), ``backlog`` (entries still spooled for this service),
        when it was shipped ``job``, and when it was not ``service``: the failure, or
        ``backoff`` while hooks leave the sending to the backlog path (:data:`BACKOFF_S`).

    Raises:
        ServiceError: the spool is full (or not writable) and the service did not
            take the exchange either (the turn is not kept); or the service refused it
            for a reason that does not pass by itself (``http_401``: a revoked token),
            so the person hears of it; the exchange stays spooled.
    """
    from bli_memory.core.memory.job_ids import new_job_id

    folder = folder or spool_dir()
    start = time.monotonic()
    entry = {"v": 1, "id": new_job_id(), "service": service_url, "space": space, "source": source,
             "sessionId": session_id, "text": text,
             "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if record:
        entry["kind"] = "record"
    try:
        spooled = _put(folder, entry) is not None
    except OSError:
        spooled = False
    if not spooled:  # no room to keep it: one bounded try, failing as before
        job = _send(backend, entry, min(REQUEST_TIMEOUT_S, budget_s))
        return {"queued": True, "spooled": False, "job": job, "backlog": pending(service_url, folder=folder)}
    if _backing_off(folder, service_url):  # too slow for a hook just now: the backlog path sends
        return {"queued": False, "spooled": True, "backlog": pending(service_url, folder=folder),
                "service": "backoff"}
    report = ship(backend, service_url, deadline=start + budget_s, folder=folder)
    if report.error == "timeout" or report.shipped:
        _set_backoff(folder, service_url, on=report.error == "timeout")
    queued = entry["id"] in report.shipped
    if not queued and report.error is not None and not _passing(report.error):
        # Kept for later, but the person must act (a revoked token, ...): say so.
        from bli_memory.core.errors import ServiceError

        raise ServiceError(f"the memory service refused the capture ({report.error}); it is "
                           "spooled and sent once the service takes it", reason=report.error)
    fields: dict[str, Any] = {"queued": queued, "spooled": not queued, "backlog": report.left}
    if queued:
        fields["job"] = entry["id"]
    if report.error and not queued:
        fields["service"] = report.error
    return fields


def ship_backlog(backend: Sender, *, budget_s: float = BACKLOG_BUDGET_S,
                 folder: Path | None = None) -> ShipReport | None:
    """Ship what is spooled for ``backend``'s service (the daemon, ``worker``, through
    :meth:`RemoteBackend.ship_spool`), each request with :data:`BACKLOG_REQUEST_TIMEOUT_S`,
    whatever the hooks' back-off.

    Returns:
        None when nothing is spooled; else the :class:`ShipReport`.
    """
    url = backend.base_url
    folder = folder or spool_dir()
    if not _entries(folder):
        return None
    report = ship(backend, url, deadline=time.monotonic() + budget_s, folder=folder,
                  request_timeout=BACKLOG_REQUEST_TIMEOUT_S)
    if report.shipped and report.error is None:
        _set_backoff(folder, url, on=False)  # the service keeps up again: hooks send themselves
    return report
