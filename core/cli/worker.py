"""``bli-memory-mcp worker``: run queued extract jobs, or send a spool to the memory service.

::

    bli-memory-mcp worker [--once] [--max-jobs N] [--lease-seconds S] [--poll-seconds S]

The loop itself is :func:`bli_memory.core.extraction.worker.drain`; this command parses
the options, opens the configured backend and calls it, once or until SIGTERM/SIGINT.
With a memory service configured (a backend without its own job queue) it sends what
the stop hook spooled (:func:`bli_memory.core.team.client.spool.ship_backlog`) instead.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError, StoreError
from bli_memory.core.extraction.worker import DEFAULT_LEASE_SECONDS, default_worker_id, drain, job_queue

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend

__all__ = ["DEFAULT_POLL_SECONDS", "USAGE", "main"]

#: Seconds between queue polls of the long-running command.
DEFAULT_POLL_SECONDS = 5.0


USAGE = """\
usage: bli-memory-mcp worker [--once] [--max-jobs N] [--lease-seconds S] [--poll-seconds S]

Run queued extract jobs (stop hook, save_memory with extract: true): distil durable
facts and reconcile them with the space. Several workers may run at once.

  --once             run the jobs that are ready now, then exit
  --max-jobs N       with --once: run at most N jobs (default: all ready)
  --lease-seconds S  lease of each claim (default 120); a worker that dies loses its
                     jobs to the next worker after this long
  --poll-seconds S   without --once: seconds between polls of an empty queue (default 5)
"""


def _parse(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {"once": False, "max_jobs": None, "lease": DEFAULT_LEASE_SECONDS,
                            "poll": DEFAULT_POLL_SECONDS}
    it = iter(argv)
    for arg in it:
        name, _, inline = arg.partition("=")
        if arg in ("-h", "--help"):
            opts["help"] = True
        elif arg == "--once":
            opts["once"] = True
        elif name in ("--max-jobs", "--lease-seconds", "--poll-seconds"):
            raw = inline or next(it, "")
            try:
                value = float(raw)
            except ValueError:
                raise InvalidInputError(f"{name} needs a number, not {raw!r}") from None
            if value <= 0:
                raise InvalidInputError(f"{name} must be positive")
            key = {"--max-jobs": "max_jobs", "--lease-seconds": "lease", "--poll-seconds": "poll"}[name]
            opts[key] = int(value) if key == "max_jobs" else value
        else:
            raise InvalidInputError(f"unknown worker option {arg!r}\n\n{USAGE}")
    return opts


def _ship_spool(backend: MemoryBackend) -> int:
    """With a memory service: send what the stop hook spooled while it was away.

    Returns 0 when nothing is left for the service, 1 when it did not take everything.
    """
    sent = backend.ship_spool()
    if sent is None:
        sys.stderr.write("bli-memory-mcp worker: this machine uses the memory service, which runs "
                         "extraction itself; nothing spooled to send\n")
        return 0
    note = f"; the service is away ({sent.error})" if sent.error else ""
    sys.stderr.write(f"bli-memory-mcp worker: sent {len(sent.shipped)} spooled exchange(s) to the "
                     f"memory service, {sent.rejected} refused, {sent.left} left{note}\n")
    return 0 if sent.left == 0 else 1


def main(argv: list[str]) -> int:
    """``bli-memory-mcp worker``: run extract jobs; returns the exit code.

    Raises:
        BliMemoryError: bad options or an unusable store (the CLI prints one line).
    """
    opts = _parse(argv)
    if opts.get("help"):
        sys.stdout.write(USAGE)
        return 0
    from bli_memory.core.logs import configure_logging
    from bli_memory.core.plugins import build_backend, get_plugin_manager
    from bli_memory.core.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    backend = build_backend(get_plugin_manager(), settings)
    try:
        if job_queue(backend) is None:
            return _ship_spool(backend)
        worker_id = default_worker_id()
        if opts["once"]:
            drain(backend, max_jobs=opts["max_jobs"] or 1_000_000, worker_id=worker_id,
                  lease_seconds=opts["lease"])
            return 0
        stop = threading.Event()

        def on_signal(signum: int, frame: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        while not stop.is_set():
            try:
                ran = drain(backend, max_jobs=50, worker_id=worker_id, lease_seconds=opts["lease"],
                            stop=stop)
            except StoreError as exc:  # a busy or briefly unavailable store: poll again
                sys.stderr.write(f"[bli-memory] extract worker waits: {exc.reason}\n")
                ran = 0
            if ran == 0:
                stop.wait(opts["poll"])
        return 0
    finally:
        backend.close()
