"""The daemon's extract drain: queued capture jobs, run off the request path.

When :mod:`bli_memory.core.extraction.worker` exists and has
``drain(backend, *, max_jobs, worker_id)``, :func:`drain_loop` runs it every
:data:`DRAIN_INTERVAL_S` and :data:`DRAIN_AFTER_STOP_S` after a stop hook was answered,
at most :data:`DRAIN_MAX_JOBS` jobs a call, then ships captures spooled while a team
service was away.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bli_memory.core.daemon.oplog import log

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend

__all__ = ["DRAIN_AFTER_STOP_S", "DRAIN_INTERVAL_S", "DRAIN_MAX_JOBS", "drain_loop", "ship_spool"]

#: Extract jobs are drained this often when a worker module exists...
DRAIN_INTERVAL_S = 30.0
#: ...and this long after a stop hook was answered (its job was just queued).
DRAIN_AFTER_STOP_S = 1.0
#: Jobs per drain call, so one drain never runs for long.
DRAIN_MAX_JOBS = 16


def drain_loop(*, stop: threading.Event, wake: threading.Event, ready: threading.Event,
               context: Callable[[], Any], pid: int) -> None:
    """Drain extract jobs until ``stop`` is set (the body of the daemon's drain thread).

    Args:
        stop: Set when the daemon stops; a stopping daemon claims no further job.
        wake: Set after a stop hook was answered: drain soon, not in 30 s.
        ready: Set once the warm context is built; no drain before.
        context: Returns the warm :class:`~bli_memory.core.hooks.events.HookContext`.
        pid: The daemon's process id, in the worker id ``daemon-<pid>``.
    """
    import importlib

    try:
        worker = importlib.import_module("bli_memory.core.extraction.worker")
    except ModuleNotFoundError as exc:
        if exc.name != "bli_memory.core.extraction.worker":
            log("worker_unavailable", error=type(exc).__name__)
        return
    except Exception as exc:
        log("worker_unavailable", error=type(exc).__name__)
        return
    drain = getattr(worker, "drain", None)
    if not callable(drain):
        return
    import inspect

    extra: dict[str, Any] = {}
    try:
        if "stop" in inspect.signature(drain).parameters:
            extra["stop"] = stop  # a stopping daemon claims no further job
    except (TypeError, ValueError):
        pass
    worker_id = f"daemon-{pid}"
    while not stop.is_set():
        woken = wake.wait(DRAIN_INTERVAL_S)
        if stop.is_set():
            break
        if woken:
            wake.clear()
            if stop.wait(DRAIN_AFTER_STOP_S):
                break
        if not ready.is_set():
            continue
        try:
            ctx = context()
            done = drain(ctx.backend, max_jobs=DRAIN_MAX_JOBS, worker_id=worker_id, **extra)
            if done:
                log("drained", jobs=done)
            ship_spool(ctx.backend)
        except Exception as exc:
            from bli_memory.core.hooks.events import reason_of

            log("drain_failed", reason=reason_of(exc))


def ship_spool(backend: MemoryBackend) -> None:
    """Send captures spooled while the team service was away (core/team/client/spool.py)."""
    sent = backend.ship_spool()
    if sent is not None and (sent.shipped or sent.rejected):
        log("spool_shipped", jobs=len(sent.shipped), rejected=sent.rejected, left=sent.left)
